// LRA tokenisation with a checkpoint's vocabulary file: LRA's ListOps split, byte-level
// and character-level text, EOS, truncation, unknown tokens and malformed files.
#include "engine/tokenizer/lra_vocabulary.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

LraVocabulary Vocab(const nlohmann::json& json) {
  auto vocab = LraVocabulary::FromJson(json, "v.json");
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  return *vocab;
}

TEST(LraVocabularyTest, ListOpsDropsParenthesesAndAppendsEos) {
  LraVocabulary vocab = Vocab({{"kind", "listops"},
                               {"tokens", {"<pad>", "<unk>", "<eos>", "[MAX", "2", "9", "]"}},
                               {"pad_id", 0},
                               {"unk_id", 1},
                               {"eos_id", 2},
                               {"append_eos", true}});
  auto ids = vocab.Encode("( ( ( [MAX 2 ) 9 ) ] )");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (std::vector<int32_t>{3, 4, 5, 6, 2}));
  // A token outside the list is <unk>.
  EXPECT_EQ(*vocab.Encode("( [MIN 2 ] )"), (std::vector<int32_t>{1, 4, 6, 2}));
  EXPECT_EQ(vocab.size(), 7);
}

TEST(LraVocabularyTest, ListOpsClosingTokenSpelledXAsLra) {
  LraVocabulary vocab = Vocab({{"kind", "listops"}, {"tokens", {"<pad>", "X", "[SM", "4"}}});
  EXPECT_EQ(*vocab.Encode("( ( [SM 4 ) ] )"), (std::vector<int32_t>{2, 3, 1}));
  // Without an unk id an unknown token is an error that names it.
  auto unknown = vocab.Encode("( [MED 4 ] )");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("[MED"), std::string::npos);
}

TEST(LraVocabularyTest, BytesWithOffsetAndTruncation) {
  LraVocabulary vocab = Vocab({{"kind", "bytes"}, {"byte_offset", 1}, {"max_length", 3}});
  EXPECT_EQ(vocab.size(), 257);
  EXPECT_EQ(*vocab.Encode("AB"), (std::vector<int32_t>{66, 67}));
  EXPECT_EQ(*vocab.Encode("\xff"
                          "ABCD"),
            (std::vector<int32_t>{256, 66, 67}));
}

TEST(LraVocabularyTest, CharsAreCodePoints) {
  LraVocabulary vocab = Vocab({{"kind", "chars"},
                               {"tokens", {"<pad>", "<unk>", "<eos>", "a", "\xc3\xa9"}},
                               {"unk_id", 1},
                               {"eos_id", 2},
                               {"append_eos", true},
                               {"max_length", 4}});
  EXPECT_EQ(*vocab.Encode("a\xc3\xa9z"), (std::vector<int32_t>{3, 4, 1, 2}));
  // Truncated so that EOS still fits.
  EXPECT_EQ(*vocab.Encode("aaaaa"), (std::vector<int32_t>{3, 3, 3, 2}));
  EXPECT_FALSE(vocab.Encode("a\xc3").ok());
}

TEST(LraVocabularyTest, MalformedFilesNameTheField) {
  auto kind = LraVocabulary::FromJson({{"kind", "words"}}, "v.json");
  EXPECT_NE(kind.status().message().find("'kind'"), std::string::npos);
  auto no_tokens = LraVocabulary::FromJson({{"kind", "listops"}}, "v.json");
  EXPECT_NE(no_tokens.status().message().find("'tokens' is required"), std::string::npos);
  auto eos = LraVocabulary::FromJson(
      {{"kind", "listops"}, {"tokens", {"<pad>", "1"}}, {"eos_id", 5}}, "v.json");
  EXPECT_NE(eos.status().message().find("eos_id = 5"), std::string::npos);
  auto twice = LraVocabulary::FromJson({{"kind", "listops"}, {"tokens", {"1", "1"}}}, "v.json");
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos);
  auto needs_eos = LraVocabulary::FromJson({{"kind", "bytes"}, {"append_eos", true}}, "v.json");
  EXPECT_NE(needs_eos.status().message().find("append_eos needs an eos_id"), std::string::npos);
  EXPECT_EQ(LraVocabulary::Load("/nonexistent/lra_vocab.json").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hgeval
