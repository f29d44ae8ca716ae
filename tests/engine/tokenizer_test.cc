// Tokenizer behaviour beyond the golden fixtures: llama2.c tok512, dispatch, errors,
// BOS policy, streaming decode, content hashes (their pinned values: sha256_test.cc).
#include "engine/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

std::unique_ptr<Tokenizer> Load(const std::string& relative) {
  auto tokenizer = LoadTokenizer(testing::SourcePath(relative));
  EXPECT_TRUE(tokenizer.ok()) << relative << ": " << tokenizer.status();
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

std::string ReadText(const std::string& relative) {
  std::ifstream in(testing::SourcePath(relative), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kMistral = "data/tokenizers/mistral-7b-v0.1/tokenizer.json";
constexpr const char* kMistralModel = "data/tokenizers/mistral-7b-v0.1/tokenizer.model";
constexpr const char* kGpt2 = "data/tokenizers/gpt2/tokenizer.json";
constexpr const char* kCl100k = "data/tokenizers/cl100k_base/cl100k_base.tiktoken";
constexpr const char* kTok512 = "data/models/stories260K/tok512.bin";

TEST(Llama2cTokenizerTest, FirstSentenceOfStoriesRoundTrips) {
  auto tok = Load(kTok512);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), "llama2c");
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->adds_bos());
  const std::string story = ReadText("data/models/stories260K/greedy_output_t0_n256.txt");
  const std::string sentence = story.substr(0, story.find('.') + 1);
  ASSERT_EQ(sentence, "Once upon a time, there was a little girl named Lily.");
  auto ids = tok->Encode(sentence, /*add_special=*/true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_FALSE(ids->empty());
  EXPECT_EQ(ids->front(), 1);
  // From a line-by-line Python port of run.c's encode() (its O(n^2) merge loop).
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315,
                                        421, 395, 317, 426}));
  // Merging happened: far fewer tokens than bytes.
  EXPECT_LT(ids->size(), sentence.size() / 2);
  for (const int32_t id : *ids) EXPECT_LT(id, 512);
  // The dummy prefix: the first text piece starts with a space (SentencePiece's "▁").
  EXPECT_EQ(tok->IdToPiece((*ids)[1])[0], ' ');
  auto text = tok->Decode(*ids);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, sentence);
  // Without BOS the start of the text still drops the dummy-prefix space.
  auto plain = tok->Encode(sentence, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(std::vector<int32_t>(ids->begin() + 1, ids->end()), *plain);
  EXPECT_EQ(*tok->Decode(*plain), sentence);
}

TEST(Llama2cTokenizerTest, WholeStoryRoundTripsAndUnknownCharsUseBytes) {
  auto tok = Load(kTok512);
  ASSERT_NE(tok, nullptr);
  std::string story = ReadText("data/models/stories260K/greedy_output_t0_n256.txt");
  story = story.substr(0, story.find("achieved tok/s"));
  auto ids = tok->Encode(story, true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*tok->Decode(*ids), story);
  // "ж" (D0 B6) is not in the 512-token vocabulary: two byte tokens (byte + 3).
  auto cyrillic = tok->Encode("ж", false);
  ASSERT_TRUE(cyrillic.ok());
  ASSERT_EQ(cyrillic->size(), 3u) << "dummy prefix + 2 bytes";
  EXPECT_EQ((*cyrillic)[1], 0xD0 + 3);
  EXPECT_EQ((*cyrillic)[2], 0xB6 + 3);
  EXPECT_EQ(*tok->Decode(*cyrillic), "ж");
  // "é" is (id 485).
  EXPECT_EQ(*tok->Encode("é", false), (std::vector<int32_t>{410, 485}));
  EXPECT_TRUE(tok->Encode("", true).ok());
  EXPECT_EQ(*tok->Encode("", true), std::vector<int32_t>{1});
  // BOS/EOS are stored as "\n<s>\n" / "\n</s>\n" in the file but shown by their names.
  EXPECT_EQ(tok->IdToPiece(1), "<s>");
  EXPECT_EQ(tok->IdToPiece(2), "</s>");
  EXPECT_EQ(*tok->Decode({1, 410, 485, 2}, /*skip_special=*/false), "<s>é</s>");
  EXPECT_EQ(*tok->Decode({1, 410, 485, 2}), "é");
}

TEST(LoadTokenizerTest, FolderDispatch) {
  struct Want {
    const char* folder;
    const char* kind;
  };
  for (const Want& w :
       {Want{"data/tokenizers/mistral-7b-v0.1", "hf-bpe"},
        Want{"data/tokenizers/llama-2", "hf-bpe"}, Want{"data/tokenizers/gpt2", "hf-bytelevel"},
        Want{"data/tokenizers/cl100k_base", "tiktoken"},
        Want{"data/models/stories260K", "llama2c"}}) {
    auto tok = Load(w.folder);
    ASSERT_NE(tok, nullptr) << w.folder;
    EXPECT_EQ(tok->kind(), w.kind) << w.folder;
  }
  auto model = Load(kMistralModel);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->kind(), "sentencepiece");
}

TEST(LoadTokenizerTest, ClearErrors) {
  auto missing = LoadTokenizer(testing::SourcePath("data/tokenizers/no-such-thing"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto unknown = LoadTokenizer(testing::SourcePath("data/tokenizers/mistral-7b-v0.1/LICENSE"));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  // A folder with two candidate files is ambiguous.
  const std::string dir = testing::MakeTempDir("tok-ambiguous");
  std::ofstream(dir + "/a.tiktoken") << "IQ== 0\n";
  std::ofstream(dir + "/b.tiktoken") << "IQ== 0\n";
  EXPECT_EQ(LoadTokenizer(dir).status().code(), absl::StatusCode::kInvalidArgument);
  // Garbage where a SentencePiece model should be.
  std::ofstream(dir + "/tokenizer.model") << "not a protobuf at all";
  auto sp = LoadTokenizer(dir + "/tokenizer.model");
  EXPECT_EQ(sp.status().code(), absl::StatusCode::kInvalidArgument) << sp.status();
  // Truncated llama2.c file.
  const std::string tok512 = ReadText(kTok512);
  std::ofstream(dir + "/tok512.bin", std::ios::binary) << tok512.substr(0, 1000);
  auto truncated = LoadTokenizer(dir + "/tok512.bin");
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument) << truncated.status();
  // tiktoken file missing single bytes.
  auto tiktoken = LoadTokenizer(dir + "/a.tiktoken");
  EXPECT_EQ(tiktoken.status().code(), absl::StatusCode::kInvalidArgument) << tiktoken.status();
}

TEST(TokenizerTest, InvalidUtf8IsInvalidArgument) {
  for (const char* path : {kMistral, kMistralModel, kGpt2, kCl100k, kTok512}) {
    auto tok = Load(path);
    ASSERT_NE(tok, nullptr);
    for (const std::string bad : {std::string("abc\xff"), std::string("\xc3"),
                                  std::string("\xed\xa0\x80"), std::string("a\xc0\xafz")}) {
      auto ids = tok->Encode(bad, false);
      EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument) << path;
    }
  }
}

TEST(TokenizerTest, DecodeRejectsOutOfRangeIds) {
  for (const char* path : {kMistral, kMistralModel, kGpt2, kCl100k, kTok512}) {
    auto tok = Load(path);
    ASSERT_NE(tok, nullptr);
    EXPECT_FALSE(tok->Decode({-1}).ok()) << path;
    EXPECT_FALSE(tok->Decode({tok->vocab_size()}).ok()) << path;
  }
}

TEST(TokenizerTest, SpecialTokensAndBosPolicy) {
  auto json = Load(kMistral);
  ASSERT_NE(json, nullptr);
  EXPECT_EQ(json->bos_id(), 1);
  EXPECT_EQ(json->eos_id(), 2);
  EXPECT_TRUE(json->adds_bos());
  // HF tokenizers turns the literal text "<s>" into the BOS token.
  EXPECT_EQ(*json->Encode("<s>", false), std::vector<int32_t>{1});
  EXPECT_EQ(*json->Encode("Hello", true), (std::vector<int32_t>{1, 22557}));
  EXPECT_TRUE(json->IsSpecial(1));
  EXPECT_FALSE(json->IsSpecial(22557));
  EXPECT_EQ(*json->Decode({1, 22557, 2}, /*skip_special=*/true), "Hello");
  EXPECT_EQ(*json->Decode({1, 22557, 2}, /*skip_special=*/false), "<s> Hello</s>");

  // tokenizer_config.json decides when present.
  const std::string tokenizer_json = ReadText(kMistral);
  auto no_bos = LoadHfTokenizerFromJson(tokenizer_json, R"({"add_bos_token": false})");
  ASSERT_TRUE(no_bos.ok()) << no_bos.status();
  EXPECT_FALSE((*no_bos)->adds_bos());
  EXPECT_EQ(*(*no_bos)->Encode("Hello", true), std::vector<int32_t>{22557});
  auto with_eos =
      LoadHfTokenizerFromJson(tokenizer_json, R"({"add_bos_token": true, "add_eos_token": true})");
  ASSERT_TRUE(with_eos.ok());
  EXPECT_EQ(*(*with_eos)->Encode("Hello", true), (std::vector<int32_t>{1, 22557, 2}));
  EXPECT_NE((*with_eos)->ContentHash(), (*no_bos)->ContentHash());

  auto sp = Load(kMistralModel);
  ASSERT_NE(sp, nullptr);
  EXPECT_TRUE(sp->adds_bos());
  EXPECT_EQ(sp->bos_id(), 1);
  // SentencePiece treats "<s>" as text.
  EXPECT_NE(*sp->Encode("<s>", false), std::vector<int32_t>{1});
  EXPECT_EQ(*sp->Decode({1, 22557, 2}), "Hello");

  auto gpt2 = Load(kGpt2);
  ASSERT_NE(gpt2, nullptr);
  EXPECT_FALSE(gpt2->adds_bos());
  EXPECT_EQ(gpt2->eos_id(), 50256);
  EXPECT_EQ(*gpt2->Encode("a<|endoftext|>b", false), (std::vector<int32_t>{64, 50256, 65}));

  auto cl100k = Load(kCl100k);
  ASSERT_NE(cl100k, nullptr);
  EXPECT_EQ(cl100k->eos_id(), 100257);
  EXPECT_EQ(cl100k->vocab_size(), 100277);
  EXPECT_EQ(*cl100k->Decode({9906, 100257}, /*skip_special=*/false), "Hello<|endoftext|>");
  EXPECT_EQ(*cl100k->Decode({9906, 100257}), "Hello");
}

TEST(TokenizerTest, MergeFormatsAgree) {
  // A tiny SentencePiece-style BPE, merges as "a b" strings and as ["a", "b"] arrays.
  auto make = [](const std::string& merges) {
    return R"({"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
      "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "b": 4, "ab": 5, "▁ab": 6, "<0x21>": 7},
      "merges": )" +
           merges + R"(},
      "added_tokens": [{"id": 1, "content": "<s>", "special": true, "normalized": false}],
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
      "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
        {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1]}}},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"},
        "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}})";
  };
  auto strings = LoadHfTokenizerFromJson(make(R"(["a b", "▁ ab"])"));
  auto arrays = LoadHfTokenizerFromJson(make(R"([["a", "b"], ["▁", "ab"]])"));
  ASSERT_TRUE(strings.ok()) << strings.status();
  ASSERT_TRUE(arrays.ok()) << arrays.status();
  for (const auto* tok : {strings->get(), arrays->get()}) {
    // "ab!c": "!" by byte fallback, "c" unknown.
    EXPECT_EQ(*tok->Encode("ab!c", true), (std::vector<int32_t>{1, 6, 7, 0}));
    EXPECT_EQ(*tok->Decode({1, 6, 7}), "ab!");
  }
}

TEST(TokenizerTest, InvalidTokenizerJsonIsInvalidArgument) {
  const char* cases[] = {
      "",
      "not json",
      "[]",
      "{}",
      R"({"model": 3})",
      R"({"model": {"type": "Unigram", "vocab": []}})",
      R"({"model": {"vocab": {"a": "x"}, "merges": []}})",
      R"({"model": {"vocab": {"a": -1}, "merges": []}})",
      R"({"model": {"vocab": {"a": 99999999}, "merges": []}})",
      R"({"model": {"vocab": {"a": 0, "b": 1}, "merges": ["a c"]}})",
      R"({"model": {"vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})",
      R"({"model": {"vocab": {"a": 0}, "merges": [1]}})",
      R"({"model": {"vocab": {"a": 0}, "unk_token": "<unk>"}})",
      R"({"model": {"vocab": {"a": 0}}, "normalizer": {"type": "NFKC"}})",
      R"({"model": {"vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}})",
      R"({"model": {"vocab": {"a": 0}}, "decoder": {"type": "WordPiece"}})",
      R"j({"model": {"vocab": {"a": 0}}, "normalizer": {"type": "Replace",
          "pattern": {"Regex": "(?!x)"}, "content": ""}})j",
      R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 5}]})",
      R"({"model": {"vocab": {"a": 0}}, "post_processor": {"type": "TemplateProcessing",
          "single": [{"SpecialToken": {"id": "<s>"}}], "special_tokens": {}}})",
  };
  for (const char* text : cases) {
    auto tok = LoadHfTokenizerFromJson(text);
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(absl::StrContains(tok.status().message(), "tokenizer.json")) << tok.status();
  }
}

TEST(TokenizerTest, FuzzSeedCorpusLoadsAndRoundTrips) {
  // The seeds must stay valid tokenizers, or the fuzzer starts from nothing but errors.
  for (const char* name : {"sp_bpe.json", "sp_bpe_array_merges.json", "byte_level.json",
                           "sequence_components.json", "no_decoder.json"}) {
    const std::string json = ReadText(std::string("tests/fuzz/corpus/tokenizer_json/") + name);
    auto tok = LoadHfTokenizerFromJson(json);
    ASSERT_TRUE(tok.ok()) << name << ": " << tok.status();
  }
  auto sp = LoadHfTokenizerFromJson(ReadText("tests/fuzz/corpus/tokenizer_json/sp_bpe.json"));
  ASSERT_TRUE(sp.ok());
  auto ids = (*sp)->Encode("Hello world!", true);
  ASSERT_TRUE(ids.ok());
  // ▁Hello ▁w or l d <0x21>
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 23, 21, 22, 12, 16, 4}));
  EXPECT_EQ(*(*sp)->Decode(*ids), "Hello world!");
  auto bytes =
      LoadHfTokenizerFromJson(ReadText("tests/fuzz/corpus/tokenizer_json/byte_level.json"));
  ASSERT_TRUE(bytes.ok());
  // Merges: "l l" (0), "H e" (1), "Ġ w" (2); no "He ll" merge.
  EXPECT_EQ(*(*bytes)->Encode("Hello wo", false), (std::vector<int32_t>{7, 6, 3, 10, 3}));
  EXPECT_EQ(*(*bytes)->Decode({7, 6, 3, 10, 3}), "Hello wo");
}

TEST(StreamingDecoderTest, ByteFallbackTokensWaitForTheWholeCharacter) {
  auto tok = Load(kMistral);
  ASSERT_NE(tok, nullptr);
  // "😀" is F0 9F 98 80: four byte-fallback tokens "<0xF0>"... (id = byte + 3).
  StreamingDecoder stream(tok.get());
  EXPECT_EQ(*stream.Push(1), "");           // BOS
  EXPECT_EQ(*stream.Push(22557), "Hello");  // "▁Hello": leading space stripped at start
  EXPECT_EQ(*stream.Push(28705), " ");      // "▁"
  EXPECT_EQ(*stream.Push(0xF0 + 3), "");
  EXPECT_EQ(*stream.Push(0x9F + 3), "");
  EXPECT_EQ(*stream.Push(0x98 + 3), "");
  EXPECT_EQ(*stream.Push(0x80 + 3), "😀");
  EXPECT_EQ(*stream.Push(1526), " world");
  EXPECT_EQ(*stream.Finish(), "");
  EXPECT_EQ(*tok->Decode({1, 22557, 28705, 0xF3, 0xA2, 0x9B, 0x83, 1526}), "Hello 😀 world");
}

TEST(StreamingDecoderTest, MultiByteCharactersSplitAcrossByteLevelTokens) {
  for (const char* path : {kGpt2, kCl100k, kMistralModel, kTok512}) {
    auto tok = Load(path);
    ASSERT_NE(tok, nullptr);
    const std::string text = "emoji 😀🎉👍🏽 end, 日本語 and café";
    auto ids = tok->Encode(text, false);
    ASSERT_TRUE(ids.ok());
    StreamingDecoder stream(tok.get());
    std::string streamed;
    int held_back = 0;
    for (const int32_t id : *ids) {
      auto piece = stream.Push(id);
      ASSERT_TRUE(piece.ok());
      if (piece->empty()) ++held_back;
      // Every emitted piece is whole UTF-8 on its own.
      for (unsigned char c : piece->substr(0, 1)) EXPECT_NE(c & 0xC0, 0x80) << path;
      streamed += *piece;
    }
    streamed += *stream.Finish();
    EXPECT_EQ(streamed, text) << path;
    if (std::string(path) != kMistralModel) EXPECT_GT(held_back, 0) << path;
  }
}

TEST(StreamingDecoderTest, IncompleteTailBecomesReplacementCharacter) {
  auto tok = Load(kCl100k);
  ASSERT_NE(tok, nullptr);
  // Token 9468 is the bytes F0 9F (the start of many emoji); nothing follows.
  StreamingDecoder stream(tok.get());
  EXPECT_EQ(*stream.Push(9906), "Hello");
  EXPECT_EQ(*stream.Push(9468), "");
  EXPECT_EQ(*stream.Finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(*tok->Decode({9906, 9468}), "Hello\xEF\xBF\xBD");
}

TEST(TokenizerTest, ContentHashIsStableAndDistinct) {
  auto a = Load(kMistral);
  auto b = Load(kMistral);
  auto c = Load(kMistralModel);
  auto d = Load(kGpt2);
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(a->ContentHash(), b->ContentHash());
  EXPECT_EQ(a->ContentHash().size(), 64u);
  EXPECT_NE(a->ContentHash(), c->ContentHash());
  EXPECT_NE(a->ContentHash(), d->ContentHash());
}

TEST(TokenizerTest, ConcurrentEncodeAgreesWithSerialEncode) {
  // Encode is const and shared across request threads; the word caches are the only
  // shared mutable state.
  std::vector<std::string> texts;
  {
    std::ifstream in(testing::SourcePath("tests/golden/tokenizers/gpt2.tokenizer_json.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      const size_t start = line.find("\"text\": \"") + 9;
      texts.push_back(line.substr(start, line.find("\", \"ids\"") - start));  // raw JSON text
    }
  }
  ASSERT_GT(texts.size(), 400u);
  for (const char* path : {kMistral, kGpt2, kCl100k, kMistralModel}) {
    auto tok = Load(path);
    ASSERT_NE(tok, nullptr);
    std::vector<std::vector<int32_t>> serial;
    for (const std::string& t : texts) serial.push_back(*tok->Encode(t, true));
    auto fresh = Load(path);  // empty caches, filled concurrently
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
      threads.emplace_back([&, w] {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i * 7 + w * 101) % texts.size();
          auto ids = fresh->Encode(texts[k], true);
          if (!ids.ok() || *ids != serial[k]) ++mismatches[w];
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int w = 0; w < 4; ++w) EXPECT_EQ(mismatches[w], 0) << path << " thread " << w;
  }
}

}  // namespace
}  // namespace hgeval
