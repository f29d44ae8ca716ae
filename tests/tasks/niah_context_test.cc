// NIAH context construction with real tokenizers (Mistral-7B, Llama-2; llama2.c tok512
// for the small models): haystack order, every prompt's token count, the needle position
// after the sentence-end back-off, depths 0 and 100.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"
#include "tasks/niah/haystack.h"
#include "tests/support/paths.h"

namespace hgeval::niah {
namespace {

using hgeval::testing::SourcePath;

const std::vector<Essay>& Essays() {
  static const auto* essays = [] {
    auto e = ReadHaystackEssays(SourcePath("data/niah/PaulGrahamEssays"));
    return new std::vector<Essay>(e.ok() ? *std::move(e) : std::vector<Essay>{});
  }();
  return *essays;
}

TEST(NiahHaystackTest, EssaysAreReadInSortedFileNameOrder) {
  const std::vector<Essay>& essays = Essays();
  ASSERT_EQ(essays.size(), 49u);
  EXPECT_EQ(essays.front().name, "addiction.txt");
  EXPECT_EQ(essays[1].name, "aord.txt");
  EXPECT_EQ(essays.back().name, "worked.txt");
  EXPECT_TRUE(std::is_sorted(essays.begin(), essays.end(),
                             [](const Essay& a, const Essay& b) { return a.name < b.name; }));
  EXPECT_EQ(essays.front().text.substr(0, 9), "July 2010");
  EXPECT_FALSE(ReadHaystackEssays(SourcePath("data/niah/no-such-folder")).ok());
}

struct TokenizerCase {
  const char* name;
  const char* path;
};

// gtest prints a parameter into the ctest name; its bytes would hold pointers that change
// from run to run.
void PrintTo(const TokenizerCase& c, std::ostream* os) { *os << c.name; }

class NiahContextTest : public ::testing::TestWithParam<TokenizerCase> {
 protected:
  void SetUp() override {
    auto tokenizer = LoadTokenizer(SourcePath(GetParam().path));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = *std::move(tokenizer);
  }
  // One encoded pass of the essays per tokenizer, shared by the tests (encoding the
  // 650 KB haystack is the slow part).
  const std::vector<int32_t>& Haystack() {
    static auto* cache = new std::map<std::string, std::vector<int32_t>>();
    auto it = cache->find(GetParam().name);
    if (it == cache->end()) {
      auto tokens = BuildHaystackTokens(*tokenizer_, Essays(), 16000);
      EXPECT_TRUE(tokens.ok()) << tokens.status();
      it =
          cache->emplace(GetParam().name, tokens.ok() ? *std::move(tokens) : std::vector<int32_t>{})
              .first;
    }
    return it->second;
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_P(NiahContextTest, HaystackStartsWithTheFirstEssayAndIsLongEnough) {
  const std::vector<int32_t>* haystack = &Haystack();
  ASSERT_GE(haystack->size(), 16000u);
  EXPECT_GE(haystack->size(), 16000u);
  auto head = tokenizer_->Decode(absl::MakeConstSpan(haystack->data(), 40));
  ASSERT_TRUE(head.ok());
  ASSERT_GT(head->size(), 20u);
  EXPECT_EQ(Essays().front().text.substr(0, head->size()), *head);
  // A haystack longer than one pass of the essays repeats them from the first essay.
  // One pass of the essays is far more than 16000 tokens.
  const std::vector<int32_t>* one_pass = haystack;
  auto two_passes = BuildHaystackTokens(*tokenizer_, Essays(), one_pass->size() + 1);
  ASSERT_TRUE(two_passes.ok());
  EXPECT_GT(two_passes->size(), one_pass->size() + one_pass->size() / 2);
}

TEST_P(NiahContextTest, EveryPaperGridPromptHasTheExpectedLayout) {
  const std::vector<int32_t>* haystack = &Haystack();
  ASSERT_GE(haystack->size(), 16000u);
  for (NiahMode mode : {NiahMode::kEasy, NiahMode::kStandard}) {
    const NiahTexts texts = DefaultNiahTexts(mode);
    auto builder = NiahContextBuilder::Create(*tokenizer_, *haystack, texts, 200);
    ASSERT_TRUE(builder.ok()) << builder.status();
    auto needle = tokenizer_->Encode(texts.needle, false);
    auto suffix = tokenizer_->Encode(texts.prompt_suffix, false);
    ASSERT_TRUE(needle.ok() && suffix.ok());
    ASSERT_EQ(builder->needle_tokens(), *needle);
    const int64_t bos = tokenizer_->adds_bos() ? 1 : 0;
    ASSERT_EQ(builder->prefix_offset(), bos);
    const int64_t needle_size = static_cast<int64_t>(needle->size());
    const int64_t suffix_size = static_cast<int64_t>(suffix->size());
    auto grid = NiahGridPreset("paper");
    ASSERT_TRUE(grid.ok());
    int backed_off = 0;
    for (int64_t length : grid->lengths) {
      for (double depth : grid->depths) {
        SCOPED_TRACE(::testing::Message() << GetParam().name << " L=" << length << " D=" << depth);
        auto layout = builder->Layout(length, depth);
        ASSERT_TRUE(layout.ok()) << layout.status();
        // Context trimmed so that context + needle = L - buffer.
        const int64_t n = length - 200 - needle_size;
        ASSERT_EQ(layout->context_tokens, n);
        const std::vector<int32_t> prompt = builder->PromptTokens(*layout);
        ASSERT_EQ(static_cast<int64_t>(prompt.size()), bos + length - 200 + suffix_size);
        if (bos) ASSERT_EQ(prompt[0], tokenizer_->bos_id());
        // Insertion point: int(n * depth / 100), backed off to just after a ".".
        const int64_t ip = layout->insertion_point;
        if (depth == 100) {
          ASSERT_EQ(ip, n);
        } else {
          ASSERT_EQ(layout->target_insertion, static_cast<int64_t>(n * (depth / 100.0)));
          ASSERT_LE(ip, layout->target_insertion);
          if (ip > 0) {
            auto piece = tokenizer_->Decode(absl::MakeConstSpan(&(*haystack)[ip - 1], 1));
            ASSERT_TRUE(piece.ok());
            ASSERT_TRUE(piece->size() >= 1 && piece->back() == '.') << *piece;
          }
          for (int64_t i = ip; i < layout->target_insertion; ++i) {
            ASSERT_FALSE(builder->IsSentenceEnd((*haystack)[i])) << i;
          }
          if (ip < layout->target_insertion) ++backed_off;
        }
        if (depth == 0) ASSERT_EQ(ip, 0);
        // [BOS] haystack[0:ip] needle haystack[ip:n] suffix.
        ASSERT_TRUE(std::equal(haystack->begin(), haystack->begin() + ip, prompt.begin() + bos));
        ASSERT_TRUE(std::equal(needle->begin(), needle->end(), prompt.begin() + bos + ip));
        ASSERT_TRUE(std::equal(haystack->begin() + ip, haystack->begin() + n,
                               prompt.begin() + bos + ip + needle_size));
        ASSERT_TRUE(std::equal(suffix->begin(), suffix->end(), prompt.end() - suffix_size));
        // The reuse split: prefix + rest is the prompt.
        std::vector<int32_t> joined = builder->PrefixTokens(ip);
        ASSERT_EQ(static_cast<int64_t>(joined.size()), bos + ip);
        const std::vector<int32_t> rest = builder->RestTokens(*layout);
        joined.insert(joined.end(), rest.begin(), rest.end());
        ASSERT_EQ(joined, prompt);
      }
    }
    // Most targets fall inside a sentence and move back; a sentence is short.
    EXPECT_GT(backed_off, 35 * 34 / 2);
  }
}

TEST_P(NiahContextTest, MidDepthNeedleFollowsASentenceEnd) {
  const std::vector<int32_t>* haystack = &Haystack();
  ASSERT_GE(haystack->size(), 16000u);
  auto builder = NiahContextBuilder::Create(*tokenizer_, *haystack,
                                            DefaultNiahTexts(NiahMode::kStandard), 200);
  ASSERT_TRUE(builder.ok());
  auto layout = builder->Layout(4000, 50);
  ASSERT_TRUE(layout.ok());
  EXPECT_GT(layout->insertion_point, 0);
  EXPECT_LT(layout->target_insertion - layout->insertion_point, 300);
  auto text = tokenizer_->Decode(builder->PromptTokens(*layout));
  ASSERT_TRUE(text.ok());
  const size_t at = text->find("The best thing to do in San Francisco is eat a sandwich");
  ASSERT_NE(at, std::string::npos);
  // The text before the needle ends a sentence: "." then the needle's newline (a
  // SentencePiece tokenizer may put the needle's own leading space in between).
  const std::string before = text->substr(0, at);
  EXPECT_NE(before.find_last_of('.'), std::string::npos);
  EXPECT_TRUE(before.ends_with(".\n") || before.ends_with(". \n"))
      << before.substr(before.size() - 20);
  EXPECT_TRUE(text->ends_with("Answer: The best thing to do in San Francisco is"));
  // The needle sits once in the prompt.
  EXPECT_EQ(text->find("Dolores Park", at + 100), std::string::npos);
}

TEST_P(NiahContextTest, DepthZeroAndHundredPutTheNeedleAtTheEnds) {
  const std::vector<int32_t>* haystack = &Haystack();
  ASSERT_GE(haystack->size(), 16000u);
  auto builder =
      NiahContextBuilder::Create(*tokenizer_, *haystack, DefaultNiahTexts(NiahMode::kEasy), 200);
  ASSERT_TRUE(builder.ok());
  auto first = builder->Layout(2000, 0);
  auto last = builder->Layout(2000, 100);
  ASSERT_TRUE(first.ok() && last.ok());
  auto first_text = tokenizer_->Decode(builder->PromptTokens(*first));
  auto last_text = tokenizer_->Decode(builder->PromptTokens(*last));
  ASSERT_TRUE(first_text.ok() && last_text.ok());
  // Depth 0: the prompt opens with the needle (after BOS and any leading whitespace).
  const size_t q = first_text->find("What is the best thing to do in San Francisco? Answer:");
  EXPECT_LT(q, 4u);
  // Depth 100: the needle is followed directly by the quiz text (a SentencePiece
  // tokenizer adds a space where the separately encoded suffix starts).
  const size_t end = last_text->find("on a sunny day.\n");
  ASSERT_NE(end, std::string::npos);
  std::string after = last_text->substr(end + 16);
  after.erase(0, after.find_first_not_of(" \n"));
  EXPECT_TRUE(after.starts_with("There is an important piece of information hidden")) << after;
  // No room for the needle; just enough room.
  const int64_t needle_size = static_cast<int64_t>(builder->needle_tokens().size());
  EXPECT_FALSE(builder->Layout(200 + needle_size - 1, 50).ok());
  auto tight = builder->Layout(200 + needle_size, 50);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight->context_tokens, 0);
  EXPECT_FALSE(builder->Layout(2000, 101).ok());
}

TEST_P(NiahContextTest, SentenceEndRule) {
  const std::vector<int32_t>* haystack = &Haystack();
  ASSERT_GE(haystack->size(), 16000u);
  auto builder =
      NiahContextBuilder::Create(*tokenizer_, *haystack, DefaultNiahTexts(NiahMode::kEasy), 200);
  ASSERT_TRUE(builder.ok());
  int ends = 0;
  for (int64_t i = 0; i < 20000; ++i) {
    const int32_t token = (*haystack)[i];
    auto piece = tokenizer_->Decode(absl::MakeConstSpan(&token, 1));
    ASSERT_TRUE(piece.ok());
    std::string trimmed = *piece;
    trimmed.erase(0, trimmed.find_first_not_of(" \t\n\r"));
    ASSERT_EQ(builder->IsSentenceEnd(token), trimmed == ".") << *piece;
    ends += builder->IsSentenceEnd(token) ? 1 : 0;
  }
  EXPECT_GT(ends, 300);  // the essays' periods
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizers, NiahContextTest,
    ::testing::Values(TokenizerCase{"mistral", "data/tokenizers/mistral-7b-v0.1"},
                      TokenizerCase{"llama2", "data/tokenizers/llama-2"},
                      TokenizerCase{"tok512", "data/models/stories260K/tok512.bin"}),
    [](const ::testing::TestParamInfo<TokenizerCase>& info) { return info.param.name; });

}  // namespace
}  // namespace hgeval::niah
