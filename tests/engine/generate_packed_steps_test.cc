// hgeval::Generate, the decode loop of the evaluator and the NIAH sweep: a step's Forward calls
// packed to a token budget (what the evaluator uses to bound memory) give the same tokens as one
// call per step, and every result counts the tokens it fed (prompt, then each emitted token that
// was fed back).
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

TEST(GeneratePackedStepsTest, PackingDoesNotChangeTokensAndFedTokensAreCounted) {
  auto model =
      LoadModel(testing::SourcePath("data/models/stories260K/stories260K.bin"), LoadOptions());
  auto tokenizer = LoadTokenizer(testing::SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(model.ok() && tokenizer.ok());
  std::vector<GenerateRequest> requests;
  for (const char* prompt :
       {"Once upon a time", "Lily and Tom went to the park to play", "The little dog"}) {
    GenerateRequest r;
    r.prompt = *(*tokenizer)->Encode(prompt, true);
    r.max_new_tokens = 24;
    r.stop_tokens = {(*tokenizer)->eos_id()};
    r.stop_strings = {"."};
    requests.push_back(std::move(r));
  }
  requests[2].stop_strings = {};  // this one runs to its token budget
  auto whole = Generate(**model, tokenizer->get(), requests);
  ASSERT_TRUE(whole.ok()) << whole.status();
  GenerateOptions packed_options;
  packed_options.decode.max_batch_tokens = 5;  // shorter than every prompt: one per call
  int64_t last_finished = -1;
  packed_options.progress = [&](int64_t finished, int64_t total) {
    EXPECT_EQ(total, 3);
    EXPECT_GE(finished, last_finished);
    last_finished = finished;
  };
  auto packed = Generate(**model, tokenizer->get(), requests, packed_options);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(last_finished, 3);
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(i);
    const GenerateResult& a = (*whole)[i];
    const GenerateResult& b = (*packed)[i];
    ASSERT_FALSE(a.tokens.empty());
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.text, b.text);
    EXPECT_EQ(a.finish_reason, b.finish_reason);
    // The last emitted token ends the sequence unfed, unless a stop token (never kept)
    // ended it.
    const int64_t fed_back = static_cast<int64_t>(a.tokens.size()) -
                             (a.finish_reason == FinishReason::kStopToken ? 0 : 1);
    EXPECT_EQ(a.tokens_fed, static_cast<int64_t>(requests[i].prompt.size()) + fed_back);
    EXPECT_EQ(b.tokens_fed, a.tokens_fed);
  }
  EXPECT_EQ((*whole)[2].finish_reason, FinishReason::kLength);
  EXPECT_EQ((*whole)[2].tokens.size(), 24u);

  GenerateOptions cancelled;
  cancelled.cancelled = [] { return true; };
  EXPECT_EQ(Generate(**model, tokenizer->get(), requests, cancelled).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace hgeval
