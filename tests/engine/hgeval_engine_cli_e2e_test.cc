// The hgeval-engine command-line tool, run as a user would (a child process) on the
// stories260K llama2.c checkpoint.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"

namespace hgeval {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Binary() { return std::string(HGEVAL_BINARY_DIR) + "/engine/tools/hgeval-engine"; }
std::string Stories() { return testing::SourcePath("data/models/stories260K/stories260K.bin"); }

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

RunResult RunCli(const std::vector<std::string>& args) {
  const std::string err_path = testing::MakeTempDir("cli") + "/stderr";
  std::string command = Quote(Binary());
  for (const std::string& a : args) command += " " + Quote(a);
  command += " 2>" + Quote(err_path) + " </dev/null";
  RunResult r;
  testing::ShellResult run = testing::RunShell(command);
  r.exit_code = run.exit_code;
  r.out = std::move(run.out);
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  return r;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(Binary()))
        << Binary() << " is missing: build the hgeval-engine target";
  }
};

TEST_F(CliTest, GenerateGreedyReproducesLlama2c) {
  const RunResult r = RunCli({"generate", "--model", Stories()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(testing::SourcePath("data/models/stories260K/greedy_output_t0_n256.txt"));
  std::stringstream expected;
  expected << in.rdbuf();
  const std::string text = expected.str();
  EXPECT_EQ(r.out, text.substr(0, text.find("achieved tok/s")) + "\n");
}

TEST_F(CliTest, SeededSamplingIsRepeatable) {
  const std::vector<std::string> args = {"generate",
                                         "--model",
                                         Stories(),
                                         "--prompt",
                                         "Lily saw a cat",
                                         "--temperature",
                                         "1",
                                         "--top_p",
                                         "0.9",
                                         "--seed",
                                         "7",
                                         "--max_tokens",
                                         "30",
                                         "--json"};
  const RunResult a = RunCli(args);
  const RunResult b = RunCli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto j = nlohmann::json::parse(a.out, nullptr, false);
  const auto k = nlohmann::json::parse(b.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded() || k.is_discarded()) << a.out << b.out;
  EXPECT_EQ(j["tokens"], k["tokens"]);
  EXPECT_EQ(j["text"], k["text"]);
  EXPECT_EQ(j["tokens"].size(), 30u);
  EXPECT_EQ(j["finish_reason"], "length");
  std::vector<std::string> other = args;
  other[10] = "8";  // another seed
  const auto o = nlohmann::json::parse(RunCli(other).out, nullptr, false);
  ASSERT_FALSE(o.is_discarded());
  EXPECT_NE(o["tokens"], j["tokens"]);
}

TEST_F(CliTest, Tokenize) {
  const RunResult r = RunCli({"tokenize", "--model", Stories(), "--bos=none", "Once upon a time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403 407 261 378\n");
  const RunResult special = RunCli({"tokenize", "--model", Stories(), "--bos=tokenizer", "Once"});
  EXPECT_EQ(special.out, "1 403\n");
}

// The printed log-probabilities are the runtime's, exactly (JSON keeps every double bit).
TEST_F(CliTest, ScoreMatchesRuntime) {
  const RunResult r = RunCli({"score", "--model", Stories(), "--context_ids", "1,403,407",
                              "--continuation_ids", "261,378;400", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j.size(), 2u);

  auto model = LoadModel(Stories(), LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  ScoreRequest a, b;
  a.context = b.context = {1, 403, 407};
  a.continuation = {261, 378};
  b.continuation = {400};
  auto expected = Score(**model, {a, b});
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(j[0]["logprob"].get<double>(), (*expected)[0].logprob);
  EXPECT_EQ(j[0]["is_greedy"].get<bool>(), (*expected)[0].is_greedy);
  EXPECT_EQ(j[0]["tokens"][1]["logprob"].get<float>(), (*expected)[0].token_logprobs[1]);
  EXPECT_EQ(j[1]["logprob"].get<double>(), (*expected)[1].logprob);
  EXPECT_EQ(j[1]["is_greedy"].get<bool>(), false);

  // The same pair as text, tokenised lm-eval style: " a time" after "Once upon".
  const RunResult text = RunCli({"score", "--model", Stories(), "--bos=tokenizer", "--context",
                                 "Once upon", "--continuation", " a time", "--json"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const auto t = nlohmann::json::parse(text.out, nullptr, false);
  ASSERT_FALSE(t.is_discarded()) << text.out;
  EXPECT_EQ(t[0]["context_ids"], nlohmann::json({1, 403, 407}));
  EXPECT_EQ(t[0]["logprob"].get<double>(), (*expected)[0].logprob);
}

TEST_F(CliTest, CudaWithoutGpuFallsBackToCpuAndSaysSo) {
  if (CudaAvailable()) GTEST_SKIP() << "a GPU is visible";
  const RunResult r =
      RunCli({"generate", "--model", Stories(), "--device", "cuda:0", "--max_tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("running on the CPU"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "Once upon a time,\n");
}

TEST_F(CliTest, HelpAndUsageErrors) {
  for (const char* command : {"tokenize", "score", "generate"}) {
    const RunResult help = RunCli({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find("Usage: hgeval-engine " + std::string(command)), std::string::npos);
  }
  const RunResult top = RunCli({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("generate"), std::string::npos);
  EXPECT_EQ(RunCli({"frobnicate"}).exit_code, 2);
  const RunResult bad = RunCli({"score", "--model", Stories(), "--bogus"});
  EXPECT_EQ(bad.exit_code, 1);  // Abseil's parser refuses it before the command runs
  EXPECT_NE(bad.err.find("Unknown command line flag 'bogus'"), std::string::npos) << bad.err;
  // Every command's flags are declared once for the program; one that means nothing to
  // the chosen command is refused, not ignored.
  const RunResult misplaced = RunCli({"generate", "--model", Stories(), "--top_k", "3"});
  EXPECT_EQ(misplaced.exit_code, 2);
  EXPECT_NE(misplaced.err.find("--top_k does not apply to generate"), std::string::npos)
      << misplaced.err;
  const RunResult missing = RunCli({"generate", "--model", "/nonexistent/model"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/nonexistent"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace hgeval
