// Request preparation: lm-eval pair tokenization, rolling windows, validation messages.
#include "server/core/request_prep.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace v1 = ::hgeval::v1;

std::vector<int32_t> Range(int n) {
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = 100 + i;
  return v;
}

std::vector<int32_t> Fed(const TokenPair& w) {
  std::vector<int32_t> fed = w.context;
  fed.insert(fed.end(), w.continuation.begin(), w.continuation.end() - 1);
  return fed;
}

TEST(RollingWindowsTest, TenTokensWindowFourMatchesTheSpecExample) {
  const int32_t p = 1;
  std::vector<TokenPair> w = lm_eval::MakeRollingWindows(Range(10), p, 4);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_THAT(Fed(w[0]), ElementsAre(p, 100, 101, 102));
  EXPECT_THAT(w[0].continuation, ElementsAre(100, 101, 102, 103));
  EXPECT_THAT(Fed(w[1]), ElementsAre(103, 104, 105, 106));
  EXPECT_THAT(w[1].continuation, ElementsAre(104, 105, 106, 107));
  EXPECT_THAT(Fed(w[2]), ElementsAre(105, 106, 107, 108));
  EXPECT_THAT(w[2].continuation, ElementsAre(108, 109));
}

TEST(RollingWindowsTest, NineTokensWindowFourLastWindowHasFullInput) {
  std::vector<TokenPair> w = lm_eval::MakeRollingWindows(Range(9), 1, 4);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_THAT(Fed(w[2]), ElementsAre(104, 105, 106, 107));
  EXPECT_THAT(w[2].continuation, ElementsAre(108));
}

TEST(RollingWindowsTest, EveryTokenPredictedOnceAndNoWindowExceedsTheLength) {
  for (int n : {1, 2, 3, 7, 8, 33}) {
    for (int L : {1, 2, 5, 8}) {
      std::vector<TokenPair> windows = lm_eval::MakeRollingWindows(Range(n), 1, L);
      std::vector<int32_t> predicted;
      for (const TokenPair& w : windows) {
        EXPECT_LE(static_cast<int>(Fed(w).size()), L);
        EXPECT_FALSE(w.context.empty());
        predicted.insert(predicted.end(), w.continuation.begin(), w.continuation.end());
      }
      EXPECT_EQ(predicted, Range(n)) << "n=" << n << " L=" << L;
    }
  }
  EXPECT_TRUE(lm_eval::MakeRollingWindows({}, 1, 4).empty());
}

class PreparePairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tok = LoadTokenizer(hgeval::testing::SourcePath("data/models/stories260K/tok512.bin"));
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = *std::move(tok);
    limits_.vocab_size = 512;
    limits_.max_length = 64;
    limits_.model_name = "m";
  }
  absl::StatusOr<TokenPair> Prepare(const v1::LoglikelihoodPair& pair) {
    return PreparePair(ToPairInput(pair), 3, *tokenizer_, false, limits_);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  PairLimits limits_;
};

TEST_F(PreparePairTest, TrailingSpaceMovesToTheContinuationAndEncodingIsJoint) {
  v1::LoglikelihoodPair pair;
  pair.set_context("Once upon a ");
  pair.set_continuation("time");
  absl::StatusOr<TokenPair> p = Prepare(pair);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->context, *tokenizer_->Encode("Once upon a", false));
  std::vector<int32_t> whole = *tokenizer_->Encode("Once upon a time", false);
  std::vector<int32_t> tail(whole.begin() + p->context.size(), whole.end());
  EXPECT_EQ(p->continuation, tail);
}

TEST_F(PreparePairTest, EmptyContextBecomesThePrefixToken) {
  v1::LoglikelihoodPair pair;
  pair.set_continuation("Once");
  absl::StatusOr<TokenPair> p = Prepare(pair);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->context, ElementsAre(lm_eval::PrefixToken(*tokenizer_)));
  EXPECT_EQ(p->continuation, *tokenizer_->Encode("Once", false));
}

TEST_F(PreparePairTest, IdsPassThrough) {
  v1::LoglikelihoodPair pair;
  for (int id : {5, 6, 7}) pair.add_context_ids(id);
  pair.add_continuation_ids(9);
  absl::StatusOr<TokenPair> p = Prepare(pair);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(p->context, ElementsAre(5, 6, 7));
  EXPECT_THAT(p->continuation, ElementsAre(9));
}

TEST_F(PreparePairTest, Errors) {
  v1::LoglikelihoodPair both;
  both.set_context("a");
  both.set_continuation("b");
  both.add_continuation_ids(3);
  EXPECT_EQ(Prepare(both).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Prepare(both).status().message(), HasSubstr("pairs[3] gives both text"));

  v1::LoglikelihoodPair empty;
  empty.set_context("a");
  EXPECT_EQ(Prepare(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Prepare(empty).status().message(), HasSubstr("pairs[3] has an empty continuation"));

  v1::LoglikelihoodPair bad_id;
  bad_id.add_context_ids(1);
  bad_id.add_continuation_ids(512);
  EXPECT_EQ(Prepare(bad_id).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Prepare(bad_id).status().message(),
              HasSubstr("pairs[3].continuation_ids[0] = 512 is outside the vocabulary (size 512)"));

  v1::LoglikelihoodPair utf8;
  utf8.set_context("ok");
  utf8.set_continuation(std::string("a\xC3\x28", 3));
  EXPECT_EQ(Prepare(utf8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      Prepare(utf8).status().message(),
      HasSubstr("pairs[3].continuation is not valid UTF-8 (invalid byte sequence at offset 1)"));

  v1::LoglikelihoodPair longer;
  for (int i = 0; i < 70; ++i) longer.add_context_ids(7);
  longer.add_continuation_ids(8);
  EXPECT_EQ(Prepare(longer).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Prepare(longer).status().message(),
              HasSubstr("feeds 70 tokens (context 70 + continuation 1 - 1); model 'm' accepts at "
                        "most 64 tokens"));
}

TEST_F(PreparePairTest, TruncationKeepsTheLastMaxLengthPlusOneTokens) {
  limits_.truncate = true;
  v1::LoglikelihoodPair pair;
  for (int i = 0; i < 100; ++i) pair.add_context_ids(i);
  pair.add_continuation_ids(200);
  pair.add_continuation_ids(201);
  absl::StatusOr<TokenPair> p = Prepare(pair);
  ASSERT_TRUE(p.ok());
  // (context + continuation)[-65:] -> 63 context tokens, the continuation whole.
  ASSERT_EQ(p->context.size(), 63u);
  EXPECT_EQ(p->context.front(), 37);
  EXPECT_EQ(p->context.back(), 99);
  EXPECT_THAT(p->continuation, ElementsAre(200, 201));
}

TEST(Utf8Test, AcceptsValidRejectsOverlongAndSurrogates) {
  EXPECT_TRUE(ValidateUtf8("héllo ✓ 𝄞", "t").ok());
  EXPECT_FALSE(ValidateUtf8(std::string("\xC0\xAF"), "t").ok());      // overlong '/'
  EXPECT_FALSE(ValidateUtf8(std::string("\xED\xA0\x80"), "t").ok());  // surrogate
  EXPECT_FALSE(ValidateUtf8(std::string("abc\xE2\x82"), "t").ok());   // truncated
}

// The offset is that of the first ill-formed sequence's first byte, after any valid prefix.
TEST(Utf8Test, NamesTheOffsetOfTheFirstBadSequence) {
  struct Case {
    std::string text;
    const char* offset;
  };
  for (const Case& c : {Case{"\x80", "offset 0)"},                      // stray continuation
                        Case{"ab\xF8\x88\x80\x80\x80", "offset 2)"},    // 5-byte form
                        Case{"\xC3\xA9\xF4\x90\x80\x80", "offset 2)"},  // > U+10FFFF
                        Case{"\xE2\x9C\x93\xE0\x80\xAF", "offset 3)"},  // overlong 3-byte
                        Case{"\xF0\x9D\x84\x9Ex\xE2\x28\xA1", "offset 5)"}}) {
    const absl::Status status = ValidateUtf8(c.text, "prompt");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.offset)) << status.message();
  }
}

TEST(DigestTest, DependsOnEveryPart) {
  TokenPair a{{1, 2}, {3}};
  TokenPair b{{1}, {2, 3}};
  EXPECT_NE(ScoreDigest(a, 0), ScoreDigest(b, 0));
  EXPECT_NE(ScoreDigest(a, 0), ScoreDigest(a, 5));
  EXPECT_EQ(ScoreDigest(a, 0), ScoreDigest(TokenPair{{1, 2}, {3}}, 0));
  EXPECT_NE(GenerateDigest({1}, 5, {"\n"}, 0, 1, 0, false, false),
            GenerateDigest({1}, 5, {"\n\n"}, 0, 1, 0, false, false));
  // The text rule is part of the key: the two rules store different texts.
  EXPECT_NE(GenerateDigest({1}, 5, {"\n"}, 0, 1, 0, false, false),
            GenerateDigest({1}, 5, {"\n"}, 0, 1, 0, false, true));
}

}  // namespace
}  // namespace hgeval::server
