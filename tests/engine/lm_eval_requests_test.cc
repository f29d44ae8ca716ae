// lm-eval's request rules, tested once against the one module every route uses
// (engine/lm_eval/requests.h), with lm-eval's behaviour written next to each case.
#include <string>
#include <vector>

#include "engine/lm_eval/requests.h"
#include "engine/runtime/stop_tokens.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::lm_eval {
namespace {

class LmEvalRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTokenizer(hgeval::testing::SourcePath("data/models/stories260K/tok512.bin"));
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = *std::move(t);
    prefix_ = tokenizer_->bos_id();
    ASSERT_GE(prefix_, 0);
  }
  std::vector<int32_t> Encode(const std::string& text, bool special) {
    return *tokenizer_->Encode(text, special);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  int32_t prefix_ = -1;
};

// Python's str.rstrip() strips Unicode whitespace, not only ASCII: lm-eval moves
// "Answer:\u00a0" 's no-break space and "\u3000" (ideographic space) to the continuation.
TEST_F(LmEvalRequestsTest, UnicodeTrailingWhitespaceMovesToTheContinuation) {
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a \t\n"), 3u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xc2\xa0"), 2u);       // U+00A0
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xe3\x80\x80 "), 4u);  // U+3000, space
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\x1f"), 1u);           // unit separator
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xe2\x80\x8b"), 0u);   // U+200B is not
  // U+0085 and U+00A0 are whitespace as code points (C2 85, C2 A0); the lone bytes 0x85
  // and 0xA0 are no code point at all, nor is the overlong C0 A0 (a space's bits).
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xc2\x85"), 2u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("\x85"), 0u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("\xa0"), 0u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xa0"), 0u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("a\xc0\xa0"), 0u);
  EXPECT_EQ(TrailingPythonWhitespaceBytes("\x85 "), 1u);
  for (const std::string space : {" ", "\xc2\xa0", "\xe3\x80\x80"}) {
    auto pair = EncodeLmEvalPair(*tokenizer_, "Once upon a" + space, "time", false, prefix_);
    ASSERT_TRUE(pair.ok()) << pair.status();
    // context_enc = encode("Once upon a"); continuation = encode(whole)[len(context_enc):].
    const std::vector<int32_t> context = Encode("Once upon a", false);
    const std::vector<int32_t> whole = Encode("Once upon a" + space + "time", false);
    EXPECT_EQ(pair->context, context);
    EXPECT_EQ(pair->continuation,
              std::vector<int32_t>(whole.begin() + context.size(), whole.end()));
  }
}

// lm-eval >= 0.4.9.2 adds the tokenizer's BOS, except to text that already starts with
// the BOS token's text (has_bos_prefix): no second BOS.
TEST_F(LmEvalRequestsTest, TextStartingWithTheBosTextGetsNoSecondBos) {
  const std::string bos_text = tokenizer_->IdToPiece(prefix_);
  ASSERT_FALSE(bos_text.empty());
  EXPECT_EQ(*EncodeLmEvalText(*tokenizer_, "Hello", true), Encode("Hello", true));
  EXPECT_EQ(*EncodeLmEvalText(*tokenizer_, "Hello", false), Encode("Hello", false));
  EXPECT_EQ(*EncodeLmEvalText(*tokenizer_, bos_text + "Hello", true),
            Encode(bos_text + "Hello", false));
}

// An empty context is [prefix token] (BOS, else EOS) and the continuation is encoded
// alone without special tokens; a whitespace-only context (which lm-eval would assert on)
// is conditioned on the prefix token too, its whitespace moving to the continuation.
TEST_F(LmEvalRequestsTest, EmptyOrWhitespaceContextIsThePrefixToken) {
  auto empty = EncodeLmEvalPair(*tokenizer_, "", "The end", true, prefix_);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->context, std::vector<int32_t>{prefix_});
  EXPECT_EQ(empty->continuation, Encode("The end", false));
  auto blank = EncodeLmEvalPair(*tokenizer_, "  ", "x", false, prefix_);
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->context, std::vector<int32_t>{prefix_});
  EXPECT_EQ(blank->continuation, Encode("  x", false));
  auto none = EncodeLmEvalPair(*tokenizer_, "", "x", false, /*prefix_token=*/-1);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_continuation = EncodeLmEvalPair(*tokenizer_, "a", "", false, prefix_);
  EXPECT_EQ(no_continuation.status().code(), absl::StatusCode::kInvalidArgument);
}

// Over-long pairs: lm-eval keeps (context + continuation)[-(max_length + 1):], cutting
// the context only; rolling windows predict every token once, max_length per window.
TEST_F(LmEvalRequestsTest, OverLongPairsKeepTheirLastTokensAndWindowsCoverEveryToken) {
  TokenPair pair{{1, 2, 3, 4, 5, 6}, {7, 8}};
  TruncateLmEvalPair(4, &pair);
  EXPECT_EQ(pair.context, (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(pair.continuation, (std::vector<int32_t>{7, 8}));
  TokenPair fits{{1, 2}, {3}};
  TruncateLmEvalPair(4, &fits);
  EXPECT_EQ(fits.context, (std::vector<int32_t>{1, 2}));
  const std::vector<int32_t> tokens = {10, 11, 12, 13, 14, 15, 16};
  const std::vector<TokenPair> windows = MakeRollingWindows(tokens, 1, 3);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].context, std::vector<int32_t>{1});
  EXPECT_EQ(windows[0].continuation, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(windows[1].context, (std::vector<int32_t>{12}));
  EXPECT_EQ(windows[1].continuation, (std::vector<int32_t>{13, 14, 15}));
  EXPECT_EQ(windows[2].context, (std::vector<int32_t>{13, 14, 15}));
  EXPECT_EQ(windows[2].continuation, (std::vector<int32_t>{16}));
}

// generate_until keeps the last max_length - max_gen_toks context tokens; lm-eval asserts
// that this is positive, and so do the evaluator and jobs (they used to disagree: no
// truncation in process, one token kept in jobs).
TEST(GenerationContextTest, KeepsTheLastTokensAndRefusesNoRoom) {
  std::vector<int32_t> context = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(TruncateGenerationContext(8, 4, &context).ok());
  EXPECT_EQ(context, (std::vector<int32_t>{3, 4, 5, 6}));
  ASSERT_TRUE(TruncateGenerationContext(100, 4, &context).ok());
  EXPECT_EQ(context.size(), 4u);
  for (int64_t max_gen_toks : {8, 9}) {
    const absl::Status s = TruncateGenerationContext(8, max_gen_toks, &context);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("must be less than max_length (8)"), std::string::npos) << s;
  }
}

// One generate_until request for every route (HFLM.generate_until): tok_encode, the
// last max_length - max_gen_toks tokens, an empty prompt conditioned on the prefix
// token, the generation stop tokens end it (EOS; BOS too for this llama2.c tokenizer:
// engine/runtime/stop_tokens.h, the rule of every route) and EOS's text joins the stop
// sequences.
TEST_F(LmEvalRequestsTest, GenerateUntilRequestIsLmEvals) {
  const std::vector<std::string> until = {"\n\n"};
  const std::vector<int32_t> whole = Encode("Once upon a time there was a cat", true);
  ASSERT_GT(whole.size(), 4u);
  auto cut = MakeLmEvalGenerateRequest(*tokenizer_, "Once upon a time there was a cat", until,
                                       /*max_gen_toks=*/6, /*add_bos=*/true,
                                       /*max_length=*/10, prefix_);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->prompt, std::vector<int32_t>(whole.end() - 4, whole.end()));
  EXPECT_EQ(cut->max_new_tokens, 6);
  EXPECT_EQ(cut->sampling.temperature, 0.0f);  // greedy
  const int32_t eos = tokenizer_->eos_id();
  ASSERT_GE(eos, 0);
  EXPECT_EQ(cut->stop_tokens, (std::vector<int32_t>{eos, tokenizer_->bos_id()}));
  EXPECT_EQ(cut->stop_tokens, GenerationStopTokens(*tokenizer_));
  std::vector<std::string> stops = until;
  const std::string eos_text = *tokenizer_->Decode(std::vector<int32_t>{eos}, false);
  if (!eos_text.empty()) stops.push_back(eos_text);
  EXPECT_EQ(cut->stop_strings.strings(), stops);

  auto empty = MakeLmEvalGenerateRequest(*tokenizer_, "", until, 6, false, 10, prefix_);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->prompt, std::vector<int32_t>{prefix_});
  auto no_room = MakeLmEvalGenerateRequest(*tokenizer_, "a", until, 10, false, 10, prefix_);
  EXPECT_EQ(no_room.status().code(), absl::StatusCode::kInvalidArgument);
}

// HFLM.prefix_token_id: BOS, else EOS.
TEST_F(LmEvalRequestsTest, PrefixTokenIsBosElseEos) {
  EXPECT_EQ(PrefixToken(*tokenizer_), tokenizer_->bos_id());
}

// HFLM.max_length: the request's, else max_position_embeddings, else the model's own
// context limit, else 2048.
TEST(LmEvalMaxLengthTest, FirstPositiveOfRequestConfigAndModelElse2048) {
  EXPECT_EQ(MaxLength(100, 512, 256), 100);
  EXPECT_EQ(MaxLength(0, 512, 256), 512);
  EXPECT_EQ(MaxLength(0, 0, 256), 256);
  EXPECT_EQ(MaxLength(0, 0, 0), 2048);
}

}  // namespace
}  // namespace hgeval::lm_eval
