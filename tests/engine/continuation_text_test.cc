// The exact continuation text (engine/tokenizer/continuation_text.h), what the service
// returns over gRPC and HTTP: for SentencePiece, BPE (HF tokenizer.json) and llama2.c
// tokenizers and every split of a sentence into prompt and completion, the continuation's
// text is prompt + completion decoded minus the prompt's text, and the concatenation of
// the completion's token_texts (Detokenize's, which `text_offset` counts) equals it. A
// word after the split keeps its leading space.
#include "engine/tokenizer/continuation_text.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

struct Case {
  std::string name;
  std::string path;
};

class ContinuationTextTest : public ::testing::TestWithParam<Case> {};

// Detokenize's token_texts: each id's share of the text decoded one id after another.
std::vector<std::string> TokenTexts(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  StreamingDecoder decoder(&tokenizer);
  std::vector<std::string> texts;
  for (int32_t id : ids) texts.push_back(*decoder.Push(id));
  texts.back() += *decoder.Finish();
  return texts;
}

TEST_P(ContinuationTextTest, IsTheWholeTextMinusThePromptAndAgreesWithTokenTexts) {
  auto tokenizer = LoadTokenizer(testing::SourcePath(GetParam().path));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& tok = **tokenizer;
  const std::string sentence = "Once upon a time Lily saw a big dog. She said: \"hello\"\nThe end.";
  for (bool bos : {false, true}) {
    auto ids = tok.Encode(sentence, bos);
    ASSERT_TRUE(ids.ok()) << ids.status();
    ASSERT_GT(ids->size(), 8u);
    const std::vector<std::string> token_texts = TokenTexts(tok, *ids);
    const std::string whole = *tok.Decode(*ids);
    bool saw_checked = false;
    for (size_t k = 1; k < ids->size(); ++k) {
      SCOPED_TRACE(GetParam().name + " bos=" + std::to_string(bos) + " split " + std::to_string(k));
      const std::vector<int32_t> prompt(ids->begin(), ids->begin() + k);
      const std::vector<int32_t> completion(ids->begin() + k, ids->end());
      auto text = ContinuationText(tok, prompt, completion);
      ASSERT_TRUE(text.ok()) << text.status();
      std::string from_token_texts;
      for (size_t j = k; j < token_texts.size(); ++j) from_token_texts += token_texts[j];
      EXPECT_EQ(*text, from_token_texts);
      const std::string prompt_text = *tok.Decode(prompt);
      ASSERT_EQ(whole.compare(0, prompt_text.size(), prompt_text), 0) << prompt_text;
      EXPECT_EQ(*text, whole.substr(prompt_text.size()));
      if (prompt_text.size() >= 4 && prompt_text.compare(prompt_text.size() - 4, 4, "Lily") == 0) {
        EXPECT_EQ(text->substr(0, 4), " saw");
        saw_checked = true;
      }
    }
    EXPECT_TRUE(saw_checked) << "no split fell before \" saw\"";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizers, ContinuationTextTest,
    ::testing::Values(Case{"sentencepiece", "data/tokenizers/llama-2/tokenizer.model"},
                      Case{"hf_bpe_bytelevel", "data/tokenizers/gpt2/tokenizer.json"},
                      Case{"hf_sentencepiece_bpe", "data/tokenizers/llama-2/tokenizer.json"},
                      Case{"llama2c", "data/models/stories260K/tok512.bin"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace hgeval
