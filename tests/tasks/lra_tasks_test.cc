// The six LRA tasks through the evaluator on small random-weight classifiers and the
// fixture data (tests/tasks/lra_data, official formats): every doc is classified, the
// accuracy is the share of docs whose predicted class is the label, and equals what the
// engine's classifier gives on the same inputs directly.
#include "tasks/lra/lra_tasks.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/model/lra_classifier.h"
#include "engine/model/lra_input.h"
#include "engine/tokenizer/lra_vocabulary.h"
#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/lra/cifar10.h"
#include "tasks/lra/engine_lra_classifier.h"
#include "tasks/lra/pathfinder.h"
#include "tests/support/paths.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval::tasks::lra {
namespace {

struct Case {
  const char* task;
  testing::LraTestSpec spec;
  int64_t docs;
};

// gtest prints a parameter into the ctest name; its bytes would hold pointers that change
// from run to run.
void PrintTo(const Case& c, std::ostream* os) { *os << c.task; }

class LraTasksTest : public ::testing::TestWithParam<Case> {};

TEST_P(LraTasksTest, AccuracyIsTheShareOfCorrectPredictions) {
  const Case& c = GetParam();
  const std::string dir = testing::MakeTempDir(std::string("lra_task_") + c.task);
  testing::WriteRandomLraCheckpoint(dir, c.spec);
  auto lm = EngineLraClassifier::Load(dir);
  ASSERT_TRUE(lm.ok()) << lm.status();
  auto task = CreateTask(c.task);
  ASSERT_TRUE(task.ok()) << task.status();
  EvaluatorOptions options;
  options.data_dir = testing::SourcePath("tests/tasks/lra_data");
  options.log_samples = true;
  auto report = RunTask(**lm, **task, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->n_effective, c.docs);
  ASSERT_EQ(report->metrics.size(), 1u);
  EXPECT_EQ(report->metrics[0].name, "acc");

  // The same inputs straight through the engine.
  auto docs = (*task)->LoadDocs(options.data_dir);
  ASSERT_TRUE(docs.ok());
  auto model = LoadLraClassifier(dir, {});
  ASSERT_TRUE(model.ok());
  std::optional<LraVocabulary> vocab;
  if (!c.spec.vocab_kind.empty()) vocab = *LraVocabulary::Load(dir + "/lra_vocab.json");
  int correct = 0;
  for (const Doc& doc : *docs) {
    auto requests = (*task)->Requests(doc);
    ASSERT_TRUE(requests.ok());
    LraInput input;
    for (const ClassifyDocument& d : (*requests)[0].documents) {
      auto converted = MakeLraDocument((*model)->config(), vocab ? &*vocab : nullptr, d.text,
                                       d.pixels, d.channels);
      ASSERT_TRUE(converted.ok()) << converted.status();
      input.documents.push_back(*converted);
    }
    std::vector<std::vector<float>> logits;
    ASSERT_TRUE((*model)->Classify({input}, &logits).ok());
    correct += PredictedClass(logits[0]) == doc["label"].get<int>();
  }
  EXPECT_DOUBLE_EQ(report->values[0], static_cast<double>(correct) / c.docs);
  ASSERT_EQ(report->samples.size(), static_cast<size_t>(c.docs));
  EXPECT_EQ(report->samples[0]["resps"][0][0].size(), static_cast<size_t>(c.spec.classes));
}

testing::LraTestSpec Tokens(std::string kind, int classes, bool retrieval = false,
                            std::string mixer = "hgrn2") {
  testing::LraTestSpec s;
  s.vocab_kind = std::move(kind);
  s.classes = classes;
  s.retrieval = retrieval;
  s.mixer = std::move(mixer);
  return s;
}

testing::LraTestSpec Pixels(int channels, int side, int classes, std::string mixer = "hgrn2") {
  testing::LraTestSpec s;
  s.vocab_kind = "";
  s.channels = channels;
  s.image_side = side;
  s.classes = classes;
  s.mixer = std::move(mixer);
  s.norm = "layer";
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    AllSix, LraTasksTest,
    ::testing::Values(Case{"lra_listops", Tokens("listops", 10), 3},
                      Case{"lra_text", Tokens("bytes", 2, false, "hgrn1"), 2},
                      Case{"lra_retrieval", Tokens("bytes", 2, true), 2},
                      Case{"lra_image", Pixels(1, 32, 10), 2},  // RGB made gray
                      Case{"lra_pathfinder", Pixels(1, 32, 2, "hgrn1"), 1},
                      Case{"lra_pathx", Pixels(1, 128, 2), 1}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.task); });

TEST(LraTaskErrorsTest, MissingDataAndWrongModelSay) {
  auto task = CreateTask("lra_image");
  ASSERT_TRUE(task.ok());
  EXPECT_EQ((*task)->LoadDocs("/nonexistent").status().code(), absl::StatusCode::kNotFound);
  // A text model given an image.
  const std::string dir = testing::MakeTempDir("lra_wrong_input");
  testing::WriteRandomLraCheckpoint(dir, Tokens("listops", 10));
  auto lm = EngineLraClassifier::Load(dir);
  ASSERT_TRUE(lm.ok()) << lm.status();
  EvaluatorOptions options;
  options.data_dir = testing::SourcePath("tests/tasks/lra_data");
  auto report = RunTask(**lm, **task, options);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("classifies text"), std::string::npos)
      << report.status();
  // A language-model request to a classifier.
  EXPECT_EQ((*lm)->Loglikelihood({}, {}).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace hgeval::tasks::lra
