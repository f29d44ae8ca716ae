// The store codec: every stored kind comes back as it went in, rows written by earlier
// versions (the wire messages themselves) still decode, and damaged rows are DATA_LOSS.
#include "server/core/result_codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hgeval/v1/models.pb.h"

namespace hgeval::server {
namespace {

using ::testing::ElementsAre;
namespace v1 = ::hgeval::v1;

PairScore SomeScore() {
  PairScore s;
  s.score.logprob = -3.25;
  s.score.is_greedy = false;
  s.score.token_logprobs = {-1.0f, -2.25f};
  s.score.top_k = {{{7, -0.5f}, {9, -1.5f}}, {{3, -0.25f}}};
  s.context_tokens = 5;
  s.continuation_tokens = 2;
  s.cached = true;
  return s;
}

TEST(ResultCodecTest, PairScoreComesBackWithoutTheCachedFlag) {
  PairScore back;
  ASSERT_TRUE(DecodeStored(EncodeStored(SomeScore()), &back).ok());
  EXPECT_EQ(back.score.logprob, -3.25);
  EXPECT_FALSE(back.score.is_greedy);
  EXPECT_THAT(back.score.token_logprobs, ElementsAre(-1.0f, -2.25f));
  ASSERT_EQ(back.score.top_k.size(), 2u);
  EXPECT_EQ(back.score.top_k[0][1].token, 9);
  EXPECT_EQ(back.score.top_k[0][1].logprob, -1.5f);
  EXPECT_EQ(back.score.top_k[1][0].token, 3);
  EXPECT_EQ(back.context_tokens, 5);
  EXPECT_EQ(back.continuation_tokens, 2);
  EXPECT_FALSE(back.cached);
}

TEST(ResultCodecTest, ScoreRowsOfEarlierVersionsStillDecode) {
  // Earlier servers stored the wire message they answered with, minus `cached`.
  v1::LoglikelihoodResult wire;
  wire.set_logprob(-1.5);
  wire.set_is_greedy(true);
  wire.set_context_tokens(4);
  wire.set_continuation_tokens(1);
  wire.add_token_logprobs(-1.5f);
  PairScore back;
  ASSERT_TRUE(DecodeStored(wire.SerializeAsString(), &back).ok());
  EXPECT_EQ(back.score.logprob, -1.5);
  EXPECT_TRUE(back.score.is_greedy);
  EXPECT_THAT(back.score.token_logprobs, ElementsAre(-1.5f));
  EXPECT_EQ(back.context_tokens, 4);
  // And what this version stores is byte for byte what they stored.
  EXPECT_EQ(EncodeStored(back), wire.SerializeAsString());
}

TEST(ResultCodecTest, ClassificationComesBack) {
  Classification c;
  c.logits = {0.5f, -2.0f, 3.0f};
  c.predicted = 2;
  c.cached = true;
  Classification back;
  ASSERT_TRUE(DecodeStored(EncodeStored(c), &back).ok());
  EXPECT_THAT(back.logits, ElementsAre(0.5f, -2.0f, 3.0f));
  EXPECT_EQ(back.predicted, 2);
  EXPECT_FALSE(back.cached);
}

TEST(ResultCodecTest, GenerationKeepsItsFinishReasonAndRawBytes) {
  Generation g;
  g.text = std::string(" saw \xff\xfe a dog", 12);  // model output need not be UTF-8
  g.token_ids = {11, 12, 13};
  g.finish_reason = FinishReason::kStopString;
  g.prompt_tokens = 40;
  Generation back;
  ASSERT_TRUE(DecodeStored(EncodeStored(g), &back).ok());
  EXPECT_EQ(back.text, g.text);
  EXPECT_THAT(back.token_ids, ElementsAre(11, 12, 13));
  ASSERT_TRUE(back.finish_reason.has_value());
  EXPECT_EQ(*back.finish_reason, FinishReason::kStopString);
  EXPECT_EQ(back.prompt_tokens, 40);
}

TEST(ResultCodecTest, GenerationRowsWithoutAReasonSayUnknownNotLength) {
  // Job generations were stored without a finish reason before this codec.
  v1::GenerateResponse wire;
  wire.set_text("abc");
  wire.add_token_ids(5);
  wire.set_finished(true);
  Generation back;
  ASSERT_TRUE(DecodeStored(wire.SerializeAsString(), &back).ok());
  EXPECT_EQ(back.text, "abc");
  EXPECT_FALSE(back.finish_reason.has_value());
}

TEST(ResultCodecTest, NiahCellComesBackByteForByte) {
  niah::NiahCellResult cell;
  cell.generated = std::string("eat a sandwich\x80\n", 16);
  cell.generated_tokens = {1, 2, 3};
  cell.finish_reason = FinishReason::kStopToken;
  niah::NiahCellResult back;
  ASSERT_TRUE(DecodeStored(EncodeStored(cell), &back).ok());
  EXPECT_EQ(back.generated, cell.generated);
  EXPECT_THAT(back.generated_tokens, ElementsAre(1, 2, 3));
  EXPECT_EQ(back.finish_reason, FinishReason::kStopToken);
  EXPECT_TRUE(back.ran);
}

TEST(ResultCodecTest, DamagedRowsAreDataLoss) {
  const std::string garbage = "\xff\xff\xff\xff not a message";
  PairScore score;
  Classification classification;
  Generation generation;
  niah::NiahCellResult cell;
  EXPECT_EQ(DecodeStored(garbage, &score).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStored(garbage, &classification).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStored(garbage, &generation).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStored(garbage, &cell).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStored(R"({"text":"a","tokens":[1],"finish_reason":9})", &cell).code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace hgeval::server
