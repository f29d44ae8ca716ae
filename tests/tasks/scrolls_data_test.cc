// SCROLLS data: the raw ContractNLI and QMSum readers rebuild the SCROLLS-form records
// of the shared data set exactly, the SCROLLS jsonl reader, lm-eval's duplicate-id
// merge, the question/text split and QuALITY's choice extraction.
#include "tasks/scrolls/scrolls_data.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::tasks {
namespace {

// FNV-1a 64 over id, pid, input, output of every record, each followed by a NUL byte.
// The expected values were computed with Python over the SCROLLS-form files that
// ../shared/data/_provenance/convert_scrolls.py built from the same raw releases
// (contract_nli_validation.jsonl.gz, qmsum_validation.jsonl.gz).
uint64_t Digest(const std::vector<ScrollsRecord>& records) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const ScrollsRecord& r : records) {
    for (const std::string* part : {&r.id, &r.pid, &r.input, &r.output}) {
      for (unsigned char c : *part) h = (h ^ c) * 0x100000001b3ull;
      h = (h ^ 0) * 0x100000001b3ull;
    }
  }
  return h;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(ScrollsDataTest, ContractNliRawReaderMatchesScrollsRecords) {
  auto records = LoadScrollsValidation(hgeval::testing::SourcePath("data"), "contract_nli");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1037u);  // SCROLLS contract_nli validation size
  EXPECT_EQ(records->front().id, "3_nda-11");
  EXPECT_EQ(records->front().pid, "3_nda-11_0");
  EXPECT_EQ(records->front().output, "Entailment");
  const std::string start =
      "Receiving Party shall not reverse engineer any objects which embody Disclosing "
      "Party's Confidential Information.\n\nOISAIR PROJECT\n";
  EXPECT_EQ(records->front().input.substr(0, start.size()), start);
  EXPECT_EQ(records->back().id, "610_nda-4");
  EXPECT_EQ(Digest(*records), 0x4494702b1285e45cull);
}

TEST(ScrollsDataTest, QmsumRawReaderMatchesScrollsRecords) {
  auto records = LoadScrollsValidation(hgeval::testing::SourcePath("data"), "qmsum");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 272u);  // SCROLLS qmsum validation size
  EXPECT_EQ(records->front().id, "qmsum_val_0_0");
  const std::string start =
      "What were the main discussion points of the meeting?\n\nProfessor E: So . OK .";
  EXPECT_EQ(records->front().input.substr(0, start.size()), start);
  EXPECT_EQ(records->back().id, "qmsum_val_34_6");
  EXPECT_EQ(Digest(*records), 0x30eb83b5981f31e7ull);
}

TEST(ScrollsDataTest, ScrollsFormIsPreferredOverRawFiles) {
  const std::string root = hgeval::testing::MakeTempDir("scrolls_form");
  ASSERT_EQ(system(("mkdir -p " + root + "/scrolls/qmsum").c_str()), 0);
  WriteFile(root + "/scrolls/qmsum/validation.jsonl",
            "{\"id\": \"a\", \"pid\": \"a_0\", \"input\": \"Q?\\n\\nT\", \"output\": \"x\"}\n"
            "\n"
            "{\"id\": \"b\", \"input\": \"Q2\\n\\nT2\", \"output\": \"y\"}\n");
  WriteFile(root + "/scrolls/qmsum/val.jsonl", "not json\n");
  auto records = LoadScrollsValidation(root, "qmsum");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].input, "Q?\n\nT");
  EXPECT_EQ((*records)[1].pid, "");  // pid may be absent
  EXPECT_EQ(LoadScrollsValidation(root, "gov_report").status().code(), absl::StatusCode::kNotFound);
}

TEST(ScrollsDataTest, RecordWithoutOutputIsAnError) {
  auto records = ParseScrollsRecords("{\"id\": \"a\", \"input\": \"x\"}\n", "fixture");
  EXPECT_EQ(records.status().code(), absl::StatusCode::kDataLoss);
}

TEST(ScrollsDataTest, DuplicateIdsMergeIntoOneDocWithEveryOutput) {
  const std::vector<ScrollsRecord> records = {
      {"q1", "q1_0", "in 1", "first"},
      {"q2", "q2_0", "in 2", "only"},
      {"q1", "q1_1", "in 1 again", "second"},
  };
  const std::vector<Doc> docs = MergeDuplicateIds(records);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["id"], "q1");
  EXPECT_EQ(docs[0]["pid"], "q1_0");  // the first record's fields are kept
  EXPECT_EQ(docs[0]["input"], "in 1");
  EXPECT_EQ(docs[0]["outputs"], nlohmann::json({"first", "second"}));
  EXPECT_EQ(docs[1]["outputs"], nlohmann::json({"only"}));
}

TEST(ScrollsDataTest, QuestionIsSplitAtTheFirstBlankLine) {
  QuestionAndText split = SplitQuestion("Who?\n\nPart one.\n\nPart two.");
  EXPECT_EQ(split.question, "Who?");
  EXPECT_EQ(split.text, "Part one.\n\nPart two.");
  // No blank line: find() is -1, so input[:-1] and input[1:] (code points, not bytes).
  split = SplitQuestion("ab\xC3\xA9");
  EXPECT_EQ(split.question, "ab");
  EXPECT_EQ(split.text, "b\xC3\xA9");
  split = SplitQuestion("");
  EXPECT_EQ(split.question, "");
  EXPECT_EQ(split.text, "");
}

TEST(ScrollsDataTest, QualityChoicesAreExtracted) {
  Doc doc;
  doc["id"] = "x";
  doc["text"] = "(A) Red (B) Blue\n(C)  Green  (D) Black  and\twhite\n\nThe sky is blue.\n\nEnd.";
  doc["outputs"] = {"Blue"};
  ASSERT_TRUE(ExtractQualityChoices(doc).ok());
  // " (B) " ends "Red"; "\n" is not a space, so "Blue\n" is a piece, collapsed to "Blue".
  EXPECT_EQ(doc["choices"], nlohmann::json({"Red", "Blue", "Green", "Black and white"}));
  EXPECT_EQ(doc["gold"], 1);
  EXPECT_EQ(doc["text"], "The sky is blue.\n\nEnd.");
}

TEST(ScrollsDataTest, QualityAnswerOutsideTheChoicesIsAnError) {
  Doc doc;
  doc["text"] = "(A) a (B) b (C) c (D) d\n\ntext";
  doc["outputs"] = {"e"};
  EXPECT_FALSE(ExtractQualityChoices(doc).ok());
  doc["text"] = "(A) a (B) b\n\ntext";  // no (D)
  doc["outputs"] = {"a"};
  EXPECT_FALSE(ExtractQualityChoices(doc).ok());
}

}  // namespace
}  // namespace hgeval::tasks
