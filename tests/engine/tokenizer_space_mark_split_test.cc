// A tokenizer.json without a pre-tokenizer (Llama-2's, Mistral's: the whole document is one
// BPE word) encodes a document as the pieces between its "▁" runs when no merge can join
// across them (hf_tokenizer.cc, BpeModel::SplitsAtSpaceMarks). The oracle here is the same
// file with one merge added that could join across (a never-seen symbol with "▁"), which
// turns the split off: BPE on the whole word, as before, and as HF tokenizers run it. The
// added merge never applies to these texts, so any difference is the split's.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The same tokenizer.json with an unused symbol (U+E000, private use) and a merge of it with "▁".
std::string WithCrossingMerge(const std::string& tokenizer_json) {
  nlohmann::json root = nlohmann::json::parse(tokenizer_json);
  nlohmann::json& model = root["model"];
  int64_t next_id = 0;
  for (const auto& [token, id] : model["vocab"].items()) next_id = std::max<int64_t>(next_id, id);
  for (const auto& added : root["added_tokens"]) {
    next_id = std::max<int64_t>(next_id, added["id"].get<int64_t>());
  }
  const std::string unused = "\xEE\x80\x80", mark = "\xE2\x96\x81";
  EXPECT_FALSE(model["vocab"].contains(unused));
  model["vocab"][unused] = ++next_id;
  model["vocab"][unused + mark] = ++next_id;
  nlohmann::json& merges = model["merges"];
  if (!merges.empty() && merges[0].is_array()) {
    merges.push_back(nlohmann::json::array({unused, mark}));
  } else {
    merges.push_back(unused + " " + mark);
  }
  return root.dump();
}

// Long documents: real essays, and the golden fixtures' edge cases (spaces, tabs, newlines,
// a literal "▁", digits, CJK, emoji, bytes without a piece) run together.
std::vector<std::string> Documents() {
  std::vector<std::string> docs;
  const std::filesystem::path essays = testing::SourcePath("data/niah/PaulGrahamEssays");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(essays)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size() && i < 8; ++i) docs.push_back(ReadFile(files[i].string()));
  std::ifstream in(testing::SourcePath("tests/golden/tokenizers/llama-2.tokenizer_json.jsonl"));
  EXPECT_TRUE(in);
  std::string line, joined;
  const char* separators[] = {" ", "  ", "\n", "\t ", " \xE2\x96\x81", "", "   \n  "};
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    joined += nlohmann::json::parse(line).at("text").get<std::string>();
    joined += separators[n++ % std::size(separators)];
    if (joined.size() > 4000) docs.push_back(std::exchange(joined, std::string()));
  }
  docs.push_back(joined);
  docs.push_back(" leading and trailing spaces  ");
  const std::string mark = "\xE2\x96\x81";
  docs.push_back(mark + mark + "starts with marks" + mark + "and" + mark + mark + "has them");
  return docs;
}

class SpaceMarkSplitTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SpaceMarkSplitTest, LongDocumentsEncodeAsBpeOnTheWholeDocument) {
  const std::string dir = testing::SourcePath(std::string("data/tokenizers/") + GetParam());
  const std::string json = ReadFile(dir + "/tokenizer.json");
  const std::string config = ReadFile(dir + "/tokenizer_config.json");
  auto split = LoadHfTokenizerFromJson(json, config);
  auto whole = LoadHfTokenizerFromJson(WithCrossingMerge(json), config);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(whole.ok()) << whole.status();
  size_t tokens = 0;
  for (const std::string& doc : Documents()) {
    for (const bool special : {false, true}) {
      auto a = (*split)->Encode(doc, special);
      auto b = (*whole)->Encode(doc, special);
      // A document that is not valid UTF-8 is refused the same way by both.
      ASSERT_EQ(a.status(), b.status());
      if (!a.ok()) continue;
      ASSERT_EQ(*a, *b) << "document of " << doc.size() << " bytes: " << doc.substr(0, 80);
      tokens += a->size();
    }
  }
  EXPECT_GT(tokens, 20000u);  // the documents are long, not a handful of words
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, SpaceMarkSplitTest,
                         ::testing::Values("llama-2", "mistral-7b-v0.1"));

}  // namespace
}  // namespace hgeval
