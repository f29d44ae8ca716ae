// The hgeval-eval tool end to end on stories260K: flags, the results JSON, the table on
// stdout, per-sample records, --nocontext_reuse giving the same numbers, and errors.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace {

std::string Tool() { return std::string(HGEVAL_BINARY_DIR) + "/tasks/tools/hgeval-eval"; }

// Runs a command, returning its exit status and stdout.
int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  out->clear();
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BaseCommand() {
  using hgeval::testing::SourcePath;
  return Tool() + " --model " + SourcePath("data/models/stories260K/stories260K.bin") +
         " --tokenizer " + SourcePath("data/models/stories260K/tok512.bin") + " --data_dir " +
         SourcePath("data") + " --noprogress";
}

TEST(HgevalEvalTest, HelpAndErrors) {
  std::string out;
  EXPECT_EQ(RunCommand(Tool() + " --help", &out), 0);
  EXPECT_NE(out.find("--log_samples"), std::string::npos);
  EXPECT_EQ(RunCommand(Tool() + " --tasks piqa 2>/dev/null", &out), 2);
  EXPECT_EQ(RunCommand(BaseCommand() + " --tasks no_such_task 2>/dev/null", &out), 1);
  EXPECT_EQ(RunCommand(BaseCommand() + " --tasks piqa --bos sometimes 2>/dev/null", &out), 1);
  // Few-shot is not implemented: refused, as `hgeval run` refuses it, not ignored.
  EXPECT_EQ(RunCommand(BaseCommand() + " --tasks piqa --num_fewshot 5 2>&1", &out), 1);
  EXPECT_NE(out.find("--num_fewshot 5 is not supported"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Tool() + " --frobnicate 2>/dev/null", &out), 1);  // Abseil refuses it
  EXPECT_EQ(RunCommand(Tool() + " stray 2>/dev/null", &out), 2);
  EXPECT_EQ(RunCommand(Tool() + " --tasks list", &out), 0);
  EXPECT_NE(out.find("winogrande"), std::string::npos);
}

TEST(HgevalEvalTest, RunsTasksAndWritesLmEvalOutputs) {
  const std::string dir = hgeval::testing::MakeTempDir("hgeval_eval");
  std::string table;
  const std::string common = BaseCommand() + " --tasks arc_easy,lambada_openai --limit 4" +
                             " --bos none --bootstrap_iters 1000";
  ASSERT_EQ(RunCommand(common + " --output " + dir + "/r.json --log_samples", &table), 0);
  EXPECT_NE(table.find("|arc_easy      |      1|none  |     0|acc"), std::string::npos) << table;
  EXPECT_NE(table.find("perplexity"), std::string::npos);
  const auto results = nlohmann::json::parse(ReadAll(dir + "/r.json"));
  EXPECT_EQ(results["n-samples"]["arc_easy"]["effective"], 4);
  EXPECT_EQ(results["n-samples"]["arc_easy"]["original"], 2376);
  EXPECT_EQ(results["config"]["bos_regime"], "none");
  EXPECT_EQ(results["config"]["max_length"], 512);
  EXPECT_EQ(results["config"]["model_family"], "llama");
  EXPECT_EQ(results["config"]["context_reuse"], true);
  EXPECT_FALSE(results["config"]["model_hash"].get<std::string>().empty());
  // --log_samples: lm-eval's per-sample records in the results JSON, as a server job's.
  EXPECT_EQ(results["samples"]["arc_easy"].size(), 4u);
  EXPECT_EQ(results["samples"]["lambada_openai"].size(), 4u);

  // From scratch: the same numbers (LLaMA forks are exact), more tokens fed.
  ASSERT_EQ(RunCommand(common + " --nocontext_reuse --output " + dir + "/r2.json", &table), 0);
  const auto scratch = nlohmann::json::parse(ReadAll(dir + "/r2.json"));
  EXPECT_EQ(scratch["config"]["context_reuse"], false);
  EXPECT_EQ(scratch["results"]["arc_easy"]["acc,none"], results["results"]["arc_easy"]["acc,none"]);
  EXPECT_EQ(scratch["results"]["lambada_openai"]["perplexity,none"],
            results["results"]["lambada_openai"]["perplexity,none"]);
  EXPECT_GT(scratch["hgeval"]["tasks"]["arc_easy"]["tokens_fed"].get<int64_t>(),
            results["hgeval"]["tasks"]["arc_easy"]["tokens_fed"].get<int64_t>());
}

}  // namespace
