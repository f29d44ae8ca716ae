// Text processing of the tasks, checked against the spec (docs/specs/lm-eval-tasks.md):
// HellaSwag preprocessing, winogrande partial contexts, the wikitext page split,
// detokenizer and word/byte counts, and lm-eval's rolling windows.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/text_counts.h"
#include "tasks/api/registry.h"
#include "tasks/api/text_preprocess.h"
#include "tasks/models/engine_language_model.h"
#include "tasks/wikitext/wikitext_task.h"
#include "tasks/winogrande/winogrande_task.h"
#include "tests/support/paths.h"

namespace hgeval::tasks {
namespace {

std::vector<Doc> LoadOrDie(const std::string& name) {
  auto task = CreateTask(name);
  EXPECT_TRUE(task.ok()) << task.status();
  auto docs = (*task)->LoadDocs(hgeval::testing::SourcePath("data"));
  EXPECT_TRUE(docs.ok()) << docs.status();
  return docs.ok() ? *docs : std::vector<Doc>{};
}

// Python's str.strip() / str.rstrip() with no argument strip what str.isspace() accepts:
// Unicode White_Space plus U+001C..U+001F, e.g.
//   "\u3000\x1ca b\xa0\u2003\n".strip() == "a b". Ill-formed UTF-8 bytes are never space.
TEST(PyStripTest, StripsPythonWhitespaceOnly) {
  const std::string text =
      "\xE3\x80\x80\x1C"
      "a b\xC2\xA0\xE2\x80\x83\n";
  EXPECT_EQ(PyStrip(text), "a b");
  EXPECT_EQ(PyRstrip(text),
            "\xE3\x80\x80\x1C"
            "a b");
  EXPECT_EQ(PyStrip(" \t\xE2\x80\xA8 "), "");
  EXPECT_EQ(PyStrip(""), "");
  // U+200B (zero width space) is not whitespace for Python; ill-formed bytes are kept.
  EXPECT_EQ(PyStrip(" \xE2\x80\x8B\xFF "), "\xE2\x80\x8B\xFF");
}

TEST(HellaswagTest, PreprocessFollowsLmEvalSteps) {
  // strip; " [title]" -> ". "; delete [..] (non-greedy); one pass of "  " -> " ".
  EXPECT_EQ(
      HellaswagPreprocess("Home: How to  cook [title] Boil water. [step] Stir  it  [header] Done"),
      "Home: How to cook. Boil water. Stir it  Done");
  // '.' does not match a newline, so "[b\nc]" stays; three spaces become two.
  EXPECT_EQ(HellaswagPreprocess("  A [b\nc] d [e] f   g "), "A [b\nc] d f  g");
  EXPECT_EQ(PyCapitalizeAscii("the lady IS"), "The lady is");
}

TEST(HellaswagTest, RealDocsWithCapitalisedCtxB) {
  auto docs = LoadOrDie("hellaswag");
  ASSERT_EQ(docs.size(), 10042u);
  auto task = CreateTask("hellaswag");
  ASSERT_TRUE(task.ok());
  auto requests = (*task)->Requests(docs[0]);
  ASSERT_TRUE(requests.ok());
  ASSERT_EQ(requests->size(), 4u);
  EXPECT_EQ((*requests)[0].context, "Roof shingle removal: A man is sitting on a roof. He");
  EXPECT_EQ((*requests)[0].continuation, " is using wrap to wrap a pair of skis.");
  EXPECT_EQ((*requests)[3].continuation, " starts pulling up roofing on a roof.");
  EXPECT_EQ((*task)->Target(docs[0]), 3);
  EXPECT_EQ(
      docs[1]["query"],
      "Clean and jerk: A lady walks to a barbell. She bends down and grabs the pole. The lady");
  EXPECT_EQ(docs[1]["choices"][0], "swings and lands in her arms.");
  EXPECT_EQ(docs[2]["query"],
            "Canoeing: Two women in a child are shown in a canoe while a man pulls the canoe "
            "while standing in the water, with other individuals visible in the background. "
            "The child and a different man");
  EXPECT_EQ((*task)->Target(docs[2]), 2);
  // A WikiHow doc: the bracketed URL is deleted by lm-eval's regex, the double space
  // collapsed; the last sentence starts upper-case, so nothing is capitalised.
  EXPECT_EQ(docs[3505]["query"],
            "Family Life: How to entertain a toddler. Ask the toddler what he or she would like "
            "to do instead of doing what you would like to do.. Visit a site like to find loads "
            "of creative activities for toddlers and preschoolers.. Choose small, simple games "
            "like candy land or chutes and ladders.");
}

TEST(HellaswagTest, RawUpstreamFormIsProcessedExactly) {
  const std::string dir = hgeval::testing::MakeTempDir("hellaswag_raw");
  ASSERT_EQ(system(("mkdir -p " + dir + "/hellaswag").c_str()), 0);
  FILE* f = fopen((dir + "/hellaswag/hellaswag_val.jsonl").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(
      R"({"activity_label": "Home and Garden", "ctx_a": "[header] How to clean a rug [title] Vacuum it.", "ctx_b": "then BRUSH it", "endings": ["[step] Rinse  well.", " Dry it. "], "label": "1"})"
      "\n",
      f);
  fclose(f);
  auto task = CreateTask("hellaswag");
  ASSERT_TRUE(task.ok());
  auto docs = (*task)->LoadDocs(dir);
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  // ctx_b.capitalize() lower-cases the rest: "Then brush it".
  EXPECT_EQ((*docs)[0]["query"], "Home and Garden: How to clean a rug. Vacuum it. Then brush it");
  // strip() runs before the bracket deletion, so the space after "[step]" stays.
  EXPECT_EQ((*docs)[0]["choices"][0], " Rinse well.");
  EXPECT_EQ((*docs)[0]["choices"][1], "Dry it.");
  EXPECT_EQ((*task)->Target((*docs)[0]), 1);
}

TEST(WinograndeTest, PartialContextsAndSharedTarget) {
  auto docs = LoadOrDie("winogrande");
  ASSERT_EQ(docs.size(), 1267u);
  auto parts = SplitWinogrande(docs[0]);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->contexts[0], "Sarah was a much better surgeon than Maria so Sarah");
  EXPECT_EQ(parts->contexts[1], "Sarah was a much better surgeon than Maria so Maria");
  EXPECT_EQ(parts->target, "always got the easier cases.");
  EXPECT_EQ(parts->gold, 1);
  // A target that begins with punctuation still gets the " " delimiter.
  Doc punct = {
      {"sentence", "I gave it to _."}, {"option1", "him"}, {"option2", "her"}, {"answer", "1"}};
  auto task = CreateTask("winogrande");
  ASSERT_TRUE(task.ok());
  auto requests = (*task)->Requests(punct);
  ASSERT_TRUE(requests.ok());
  EXPECT_EQ((*requests)[0].context, "I gave it to him");
  EXPECT_EQ((*requests)[1].context, "I gave it to her");
  EXPECT_EQ((*requests)[0].continuation, " .");
}

TEST(WikitextTest, DetokenizerRules) {
  EXPECT_EQ(WikitextDetokenize("a @-@ b @,@ c @.@ d"), "a-b,c.d");
  EXPECT_EQ(WikitextDetokenize("He said \" hello world \" and ( so on ) [ x ] { y }"),
            "He said \"hello world\" and (so on) [x] {y}");
  EXPECT_EQ(WikitextDetokenize("= = Section = ="), "== Section ==");
  EXPECT_EQ(WikitextDetokenize("= = = = Deep = = = ="), "==== Deep ====");
  EXPECT_EQ(WikitextDetokenize("the dogs ' toys"), "the dogs' toys");
  EXPECT_EQ(WikitextDetokenize("it 's"), "it's");
  EXPECT_EQ(WikitextDetokenize("a N b"), "a 1 b");
  EXPECT_EQ(WikitextDetokenize("5 \xC2\xB0 C"),
            "5\xC2\xB0"
            "C");
  EXPECT_EQ(WikitextDetokenize(" \n x"), "\nx");
  EXPECT_EQ(WikitextDetokenize("/' 5/"), "/'[0-9]/");
  EXPECT_EQ(WikitextDetokenize("' a ' b '"), "'a' b '");
  EXPECT_EQ(WikitextDetokenize("x ( a ( b ) c ) y"), "x (a ( b) c ) y");
  EXPECT_EQ(WikitextDetokenize("a : b ; c . d ! e ? f , g"), "a: b; c. d! e? f, g");
}

TEST(WikitextTest, SixtyTwoArticlesAndTheFirstOnesCounts) {
  auto docs = LoadOrDie("wikitext");
  ASSERT_EQ(docs.size(), 62u);
  const std::string page = docs[0]["page"];
  EXPECT_EQ(page.substr(0, 24), " = Robert Boulter = \n \n ");
  // len(re.split(r"\s+", page)) and len(page.encode()).
  EXPECT_EQ(metrics::PythonWhitespaceSplitCount(page), 1093);
  EXPECT_EQ(metrics::Utf8ByteCount(page), 5667);
  auto task = CreateTask("wikitext");
  ASSERT_TRUE(task.ok());
  auto requests = (*task)->Requests(docs[0]);
  ASSERT_TRUE(requests.ok());
  ASSERT_EQ(requests->size(), 1u);
  EXPECT_EQ((*requests)[0].type, RequestType::kLoglikelihoodRolling);
  const std::string& text = (*requests)[0].context;
  EXPECT_EQ(text.size(), 5423u);
  EXPECT_EQ(
      text.substr(0, 600),
      std::string(" = Robert Boulter =\n\nRobert Boulter is an English film, television and "
                  "theatre actor. He had a guest-starring role on the television series The Bill "
                  "in 2000. This was followed by a starring role in the play Herons written by "
                  "Simon Stephens, which was performed in 2001 at the Royal Court Theatre. He had "
                  "a guest role in the television series Judge John Deed in 2002. In 2004 Boulter "
                  "landed a role as \"Craig\" in the episode \"Teddy's Story\" of the television "
                  "series The Long Firm; he starred alongside actors Mark Strong and Derek Jacobi. "
                  "He was cast in the 2005 theatre productions of the Philip Ridle"));
  EXPECT_EQ(text.substr(text.size() - 200),
            std::string("and there and look like you know what you 're doing.\" Boulter starred in "
                        "the 2011 film Mercenaries directed by Paris Leonti.\n\n== Filmography "
                        "==\n\n\n=== Film ===\n\n\n=== Television ===\n\n\n=== Theatre ===\n\n\n"));
  EXPECT_FALSE((*requests)[0].windowless);
  // hgeval's windowless variant: same text, one pass per article.
  auto windowless = CreateTask("wikitext_windowless");
  ASSERT_TRUE(windowless.ok());
  auto w_requests = (*windowless)->Requests(docs[0]);
  ASSERT_TRUE(w_requests.ok());
  EXPECT_EQ((*w_requests)[0].context, text);
  EXPECT_TRUE((*w_requests)[0].windowless);
  // Totals over the 62 pages.
  int64_t words = 0, bytes = 0;
  for (const auto& doc : docs) {
    words += metrics::PythonWhitespaceSplitCount(doc["page"].get<std::string>());
    bytes += metrics::Utf8ByteCount(doc["page"].get<std::string>());
  }
  EXPECT_EQ(words, 241335);
  EXPECT_EQ(bytes, 1290527);
}

TEST(WikitextTest, PageSplitKeepsWhitespaceOnlyLeadAndTrailingPage) {
  const auto pages = SplitWikitextPages(" \n = A = \n x \n = = B = = \n y \n = C = \n z \n");
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0], " = A = \n x \n = = B = = \n y ");
  EXPECT_EQ(pages[1], " = C = \n z \n");
}

std::vector<int32_t> Range(int n) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(RollingWindowsTest, TenTokensWindowFour) {
  const int32_t p = 100;
  auto windows = lm_eval::MakeRollingWindows(Range(10), p, 4);
  ASSERT_EQ(windows.size(), 3u);
  // Inputs [p,0,1,2] / [3,4,5,6] / [5,6,7,8]; scored 0..3 / 4..7 / 8,9.
  EXPECT_EQ(windows[0].context, (std::vector<int32_t>{p}));
  EXPECT_EQ(windows[0].continuation, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(windows[1].context, (std::vector<int32_t>{3}));
  EXPECT_EQ(windows[1].continuation, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(windows[2].context, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(windows[2].continuation, (std::vector<int32_t>{8, 9}));
}

TEST(RollingWindowsTest, NineTokensWindowFour) {
  auto windows = lm_eval::MakeRollingWindows(Range(9), 100, 4);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[2].context, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(windows[2].continuation, (std::vector<int32_t>{8}));
}

TEST(RollingWindowsTest, ShortAndEmptyTexts) {
  EXPECT_TRUE(lm_eval::MakeRollingWindows({}, 1, 4).empty());
  auto windows = lm_eval::MakeRollingWindows(Range(3), 7, 4);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].context, (std::vector<int32_t>{7}));
  EXPECT_EQ(windows[0].continuation, (std::vector<int32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace hgeval::tasks
