// `hgeval-engine score` tokenises text pairs with the same lm-eval rules as the evaluator
// and the server (engine/lm_eval/requests.h): the pairs below are the ones its former
// encoder got wrong (trailing whitespace other than spaces, a merge across the boundary,
// a context longer than max_length), and the CLI must give the evaluator's tokens and
// log-likelihoods for each.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/models/engine_language_model.h"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"

namespace hgeval::tasks {
namespace {

std::string Binary() { return std::string(HGEVAL_BINARY_DIR) + "/engine/tools/hgeval-engine"; }
std::string Stories() {
  return hgeval::testing::SourcePath("data/models/stories260K/stories260K.bin");
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The JSON that `hgeval-engine score --json` prints for one context and its continuations.
nlohmann::json ScoreWithCli(const std::string& context, const std::string& continuation) {
  const std::string command = Quote(Binary()) + " score --json --bos=tokenizer --model " +
                              Quote(Stories()) + " --context " + Quote(context) +
                              " --continuation " + Quote(continuation) + " </dev/null";
  const testing::ShellResult run = testing::RunShell(command);
  if (run.exit_code != 0) return nullptr;
  return nlohmann::json::parse(run.out, nullptr, false);
}

TEST(ScoreCliAgreesWithEvaluator, SameTokensAndLoglikelihoods) {
  ASSERT_TRUE(std::filesystem::exists(Binary()))
      << Binary() << " is missing: build the hgeval-engine target";
  auto model = LoadModel(Stories(), LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(hgeval::testing::SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EngineLanguageModelOptions options;
  options.bos_regime = BosRegime::kTokenizer;
  options.context_reuse = false;
  EngineLanguageModel lm(model->get(), tokenizer->get(), options);

  std::string long_context;
  while (long_context.size() < 4 * static_cast<size_t>(lm.max_length())) {
    long_context += "Once upon a time there was a little girl named Lily. ";
  }
  const std::vector<LoglikelihoodRequest> requests = {
      {"Once upon a time\n", "there was a girl"},  // a newline moves to the continuation
      {"Once upon a time \t", "there was"},        // so does a tab after a space
      {"Once up", "on a time"},                    // "upon" merges across the boundary
      {" ", "Once upon a time"},                   // a whitespace-only context
      {long_context, " and her mom"},              // cut on the left to max_length
  };
  for (const LoglikelihoodRequest& r : requests) {
    SCOPED_TRACE("context \"" + r.context.substr(0, 40) + "\", continuation \"" + r.continuation +
                 "\"");
    auto want_tokens = lm.Tokenize(r);
    ASSERT_TRUE(want_tokens.ok()) << want_tokens.status();
    auto want = lm.Loglikelihood({&r, 1});
    ASSERT_TRUE(want.ok()) << want.status();

    const nlohmann::json got = ScoreWithCli(r.context, r.continuation);
    ASSERT_TRUE(got.is_array() && got.size() == 1) << got;
    EXPECT_EQ(got[0]["context_ids"], nlohmann::json(want_tokens->context));
    std::vector<int32_t> continuation_ids;
    for (const auto& t : got[0]["tokens"]) continuation_ids.push_back(t["id"].get<int32_t>());
    EXPECT_EQ(continuation_ids, want_tokens->continuation);
    EXPECT_NEAR(got[0]["logprob"].get<double>(), (*want)[0].logprob, 1e-6);
    EXPECT_EQ(got[0]["is_greedy"].get<bool>(), (*want)[0].is_greedy);
  }
}

}  // namespace
}  // namespace hgeval::tasks
