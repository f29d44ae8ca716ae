// Encode/decode throughput of every tokenizer. Disabled by default (a measurement, not a
// check); run with
//   HGEVAL_TOKENIZER_BENCH_TEXT=/path/to/text.txt \
//     build/tests/engine/tokenizer_throughput_test --gtest_also_run_disabled_tests
// Without the variable the text is the golden fixture texts repeated to ~1 MB.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

std::string BenchText() {
  if (const char* path = std::getenv("HGEVAL_TOKENIZER_BENCH_TEXT"); path && *path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::ifstream in(testing::SourcePath("tests/golden/tokenizers/gpt2.tokenizer_json.jsonl"));
  std::string all, line;
  while (std::getline(in, line))
    all += nlohmann::json::parse(line).at("text").get<std::string>() + "\n";
  std::string text;
  while (text.size() < (1u << 20)) text += all;
  return text;
}

// Lines as documents: how tasks call Encode (one request per document).
std::vector<std::string> Documents(const std::string& text) {
  std::vector<std::string> docs;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) docs.push_back(line);
  }
  return docs;
}

TEST(TokenizerThroughputTest, DISABLED_EncodeDecode) {
  const std::string text = BenchText();
  const std::vector<std::string> docs = Documents(text);
  for (const char* path :
       {"data/tokenizers/mistral-7b-v0.1/tokenizer.json",
        "data/tokenizers/mistral-7b-v0.1/tokenizer.model", "data/tokenizers/llama-2/tokenizer.json",
        "data/tokenizers/gpt2/tokenizer.json", "data/tokenizers/cl100k_base/cl100k_base.tiktoken",
        "data/models/stories260K/tok512.bin"}) {
    auto tok = LoadTokenizer(testing::SourcePath(path));
    ASSERT_TRUE(tok.ok()) << tok.status();
    using Clock = std::chrono::steady_clock;
    // Cold: the first pass fills the word caches; warm: the second pass.
    for (const char* pass : {"cold", "warm"}) {
      size_t tokens = 0;
      const auto start = Clock::now();
      const std::clock_t cpu_start = std::clock();
      for (const std::string& doc : docs) tokens += (*tok)->Encode(doc, false)->size();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      // CPU time too: wall time is noisy on a shared machine.
      const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      std::printf(
          "%-50s encode %s: %zu bytes, %zu tokens, wall %.3f s (%.0f tokens/s), cpu %.3f s "
          "(%.0f tokens/s, %.1f MB/s)\n",
          path, pass, text.size(), tokens, seconds, tokens / seconds, cpu, tokens / cpu,
          text.size() / cpu / 1e6);
    }
    auto ids = (*tok)->Encode(text, false);
    ASSERT_TRUE(ids.ok());
    const auto start = Clock::now();
    auto decoded = (*tok)->Decode(*ids);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ASSERT_TRUE(decoded.ok());
    std::printf("%-50s decode: %zu tokens, %.3f s, %.0f tokens/s\n", path, ids->size(), seconds,
                ids->size() / seconds);
  }
}

// Every core encoding its share of the documents at once, as tasks tokenize: measures what
// the tokenizers' caches cost when threads share them.
TEST(TokenizerThroughputTest, DISABLED_EncodeOnEveryCore) {
  const std::string text = BenchText();
  const std::vector<std::string> docs = Documents(text);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (const char* path :
       {"data/tokenizers/mistral-7b-v0.1/tokenizer.json", "data/tokenizers/llama-2/tokenizer.json",
        "data/tokenizers/gpt2/tokenizer.json",
        "data/tokenizers/cl100k_base/cl100k_base.tiktoken"}) {
    auto tok = LoadTokenizer(testing::SourcePath(path));
    ASSERT_TRUE(tok.ok()) << tok.status();
    for (const char* pass : {"cold", "warm"}) {
      std::vector<size_t> tokens(threads, 0);
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> workers;
      for (unsigned t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          for (size_t d = t; d < docs.size(); d += threads) {
            tokens[t] += (*tok)->Encode(docs[d], false)->size();
          }
        });
      }
      for (std::thread& w : workers) w.join();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      size_t total = 0;
      for (size_t n : tokens) total += n;
      std::printf("%-50s encode %s on %u threads: %zu tokens, wall %.3f s (%.1f MB/s)\n", path,
                  pass, threads, total, seconds, text.size() / seconds / 1e6);
    }
  }
}

}  // namespace
}  // namespace hgeval
