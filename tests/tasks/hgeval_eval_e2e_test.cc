// The hgeval-eval tool end to end on stories260K: flags, the results JSON, the table on
// stdout, per-sample records, --nocontext_reuse giving the same numbers, and errors.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"

namespace {

std::string Tool() { return std::string(HGEVAL_BINARY_DIR) + "/tasks/tools/hgeval-eval"; }

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
  EXPECT_EQ(hgeval::testing::RunShell(Tool() + " --help", &out), 0);
  EXPECT_NE(out.find("--log_samples"), std::string::npos);
  EXPECT_EQ(hgeval::testing::RunShell(Tool() + " --tasks piqa 2>/dev/null", &out), 2);
  EXPECT_EQ(hgeval::testing::RunShell(BaseCommand() + " --tasks no_such_task 2>/dev/null", &out),
            1);
  EXPECT_EQ(
      hgeval::testing::RunShell(BaseCommand() + " --tasks piqa --bos sometimes 2>/dev/null", &out),
      1);
  // Few-shot is not implemented: refused, as `hgeval run` refuses it, not ignored.
  EXPECT_EQ(hgeval::testing::RunShell(BaseCommand() + " --tasks piqa --num_fewshot 5 2>&1", &out),
            1);
  EXPECT_NE(out.find("--num_fewshot 5 is not supported"), std::string::npos) << out;
  EXPECT_EQ(hgeval::testing::RunShell(Tool() + " --frobnicate 2>/dev/null", &out),
            1);  // Abseil refuses it
  EXPECT_EQ(hgeval::testing::RunShell(Tool() + " stray 2>/dev/null", &out), 2);
  EXPECT_EQ(hgeval::testing::RunShell(Tool() + " --tasks list", &out), 0);
  EXPECT_NE(out.find("winogrande"), std::string::npos);
}

TEST(HgevalEvalTest, RunsTasksAndWritesLmEvalOutputs) {
  const std::string dir = hgeval::testing::MakeTempDir("hgeval_eval");
  std::string table;
  const std::string common = BaseCommand() + " --tasks arc_easy,lambada_openai --limit 4" +
                             " --bos none --bootstrap_iters 1000";
  ASSERT_EQ(
      hgeval::testing::RunShell(common + " --output " + dir + "/r.json --log_samples", &table), 0);
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
  // --log_samples: lm-eval's per-task samples_<task>_<time>.jsonl beside --output, one
  // JSON record a line with JSON arguments and metrics (not in the results JSON).
  EXPECT_FALSE(results.contains("samples"));
  for (const std::string task : {"arc_easy", "lambada_openai"}) {
    SCOPED_TRACE(task);
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("samples_" + task + "_", 0) == 0 && entry.path().extension() == ".jsonl") {
        files.push_back(entry.path().string());
      }
    }
    ASSERT_EQ(files.size(), 1u);
    std::istringstream lines(ReadAll(files[0]));
    int records = 0;
    for (std::string line; std::getline(lines, line); ++records) {
      const nlohmann::json record = nlohmann::json::parse(line);
      EXPECT_EQ(record["task"], task);
      EXPECT_EQ(record["doc_id"], records);
      EXPECT_TRUE(record["arguments"].is_array());
      EXPECT_TRUE(record["arguments"][0].is_array());
      EXPECT_TRUE(record["arguments"][0][0].is_string());
      EXPECT_TRUE(record["resps"][0].is_array());
      EXPECT_TRUE(record["acc"].is_number() || record["perplexity"].is_array());
    }
    EXPECT_EQ(records, 4);
  }

  // From scratch: the same numbers (LLaMA forks are exact), more tokens fed.
  ASSERT_EQ(
      hgeval::testing::RunShell(common + " --nocontext_reuse --output " + dir + "/r2.json", &table),
      0);
  const auto scratch = nlohmann::json::parse(ReadAll(dir + "/r2.json"));
  EXPECT_EQ(scratch["config"]["context_reuse"], false);
  EXPECT_EQ(scratch["results"]["arc_easy"]["acc,none"], results["results"]["arc_easy"]["acc,none"]);
  EXPECT_EQ(scratch["results"]["lambada_openai"]["perplexity,none"],
            results["results"]["lambada_openai"]["perplexity,none"]);
  EXPECT_GT(scratch["hgeval"]["tasks"]["arc_easy"]["tokens_fed"].get<int64_t>(),
            results["hgeval"]["tasks"]["arc_easy"]["tokens_fed"].get<int64_t>());
}

TEST(HgevalEvalTest, LoadsAModelFolderAndItsTokenizerAsTheServerDoes) {
  // The server's loading rule: a folder holding one llama2.c .bin loads that file, and
  // the tokenizer defaults to the model's folder (tok512.bin), for a .bin path too.
  using hgeval::testing::SourcePath;
  const std::string dir = hgeval::testing::MakeTempDir("hgeval_eval_folder");
  const std::string rest = " --tasks arc_easy --limit 2 --bos none --noprogress --data_dir " +
                           SourcePath("data") + " --output " + dir;
  std::string table;
  ASSERT_EQ(
      hgeval::testing::RunShell(
          BaseCommand() + " --tasks arc_easy --limit 2 --bos none --output " + dir + "/given.json",
          &table),
      0);
  ASSERT_EQ(hgeval::testing::RunShell(Tool() + " --model " + SourcePath("data/models/stories260K") +
                                          rest + "/folder.json",
                                      &table),
            0)
      << table;
  ASSERT_EQ(hgeval::testing::RunShell(Tool() + " --model " +
                                          SourcePath("data/models/stories260K/stories260K.bin") +
                                          rest + "/bin.json",
                                      &table),
            0)
      << table;
  const auto given = nlohmann::json::parse(ReadAll(dir + "/given.json"));
  for (const char* name : {"/folder.json", "/bin.json"}) {
    SCOPED_TRACE(name);
    const auto got = nlohmann::json::parse(ReadAll(dir + name));
    EXPECT_EQ(got["results"], given["results"]);
    EXPECT_EQ(got["config"]["model_hash"], given["config"]["model_hash"]);
    EXPECT_EQ(got["config"]["tokenizer_hash"], given["config"]["tokenizer_hash"]);
  }
}

}  // namespace
