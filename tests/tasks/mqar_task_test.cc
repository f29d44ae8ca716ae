// The mqar task without a real model: the test-set layout, the accuracy of hand-made
// predictions (per example, per setting and overall), --limit across settings, and the
// default registered task.
#include "tasks/mqar/mqar_task.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/mqar/generator.h"

namespace hgeval::tasks::mqar {
namespace {

TEST(MqarExampleAccuracyTest, MeanOverLabelledPositionsOnly) {
  const std::vector<int64_t> labels = {-100, 7, -100, 9, 3, -100};
  EXPECT_DOUBLE_EQ(MqarExampleAccuracy(std::vector<int32_t>{7, 1, 3}, labels), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(MqarExampleAccuracy(std::vector<int32_t>{7, 9, 3}, labels), 1.0);
  EXPECT_DOUBLE_EQ(MqarExampleAccuracy(std::vector<int32_t>{0, 0, 0}, labels), 0.0);
  EXPECT_TRUE(std::isnan(MqarExampleAccuracy({}, std::vector<int64_t>{-100, -100})));
}

TEST(MqarGeneratorTest, ExampleLayoutFollowsZoology) {
  MqarSegmentSpec spec;
  spec.input_seq_len = 128;
  spec.num_kv_pairs = 8;
  spec.num_examples = 50;
  spec.seed = 99;
  auto draws = DrawMqarSegment(spec);
  ASSERT_TRUE(draws.ok()) << draws.status();
  for (const MqarDraw& draw : *draws) {
    const MqarExample e = BuildMqarExample(spec.input_seq_len, draw);
    ASSERT_EQ(e.inputs.size(), 128u);
    ASSERT_EQ(e.labels.size(), 128u);
    int labelled = 0;
    for (size_t t = 0; t < e.inputs.size(); ++t) {
      if (t < 16) {
        const int64_t lo = t % 2 == 0 ? 1 : 4096;
        EXPECT_GE(e.inputs[t], lo);
        EXPECT_LT(e.inputs[t], lo + 4095 + (t % 2));
        EXPECT_EQ(e.labels[t], kIgnoreLabel);
        continue;
      }
      if (e.labels[t] == kIgnoreLabel) continue;
      ++labelled;
      // The label at a query is the value that followed the same key in the kv block.
      bool found = false;
      for (size_t j = 0; j < 16; j += 2) {
        if (e.inputs[j] == e.inputs[t]) {
          EXPECT_EQ(e.inputs[j + 1], e.labels[t]);
          found = true;
        }
      }
      EXPECT_TRUE(found) << "query " << e.inputs[t] << " at " << t;
      EXPECT_EQ(e.inputs[t + 1], 0);
    }
    EXPECT_EQ(labelled, 8);
  }
}

TEST(MqarGeneratorTest, RejectsWhatZoologyAsserts) {
  MqarSegmentSpec spec;
  spec.input_seq_len = 63;
  EXPECT_FALSE(DrawMqarSegment(spec).ok());
  spec.input_seq_len = 64;
  spec.num_kv_pairs = 17;
  EXPECT_FALSE(DrawMqarSegment(spec).ok());
  spec.num_kv_pairs = 4;
  spec.vocab_size = 64;
  EXPECT_FALSE(DrawMqarSegment(spec).ok());
}

// Answers every request with the right token at the first labelled position and a wrong
// one (token 0, never a value) at the others.
class FirstOnlyModel : public LanguageModel {
 public:
  absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest>, const CallOptions&) override {
    return absl::UnimplementedError("text");
  }
  absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(absl::Span<const RollingRequest>,
                                                                  const CallOptions&) override {
    return absl::UnimplementedError("text");
  }
  absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest>, const CallOptions&) override {
    return absl::UnimplementedError("text");
  }
  absl::StatusOr<std::vector<TokenTargetsResult>> ScoreTokenTargets(
      absl::Span<const TokenTargetsRequest> requests, const CallOptions&) override {
    std::vector<TokenTargetsResult> out;
    for (const auto& r : requests) {
      TokenTargetsResult result;
      for (int32_t target : r.targets) {
        if (target < 0) continue;
        result.argmax.push_back(result.argmax.empty() ? target : 0);
      }
      result.n_tokens = static_cast<int64_t>(result.argmax.size());
      out.push_back(std::move(result));
      seen_lengths.push_back(static_cast<int64_t>(r.tokens.size()));
    }
    return out;
  }
  LanguageModelInfo info() const override { return {}; }

  std::vector<int64_t> seen_lengths;
};

TEST(MqarTaskTest, AccuracyPerSettingAndOverallFromHandMadePredictions) {
  MqarTaskOptions options;
  options.settings = {{16, 2}, {32, 4}};
  options.vocab_size = 64;
  options.examples_per_setting = 3;
  options.seed = 5;
  MqarTask task(options);
  FirstOnlyModel model;
  EvaluatorOptions eval;
  eval.log_samples = true;
  auto report = RunTask(model, task, eval);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->n_original, 6);
  EXPECT_EQ(report->n_effective, 6);
  // Docs alternate between the settings.
  EXPECT_EQ(model.seen_lengths, (std::vector<int64_t>{16, 32, 16, 32, 16, 32}));
  ASSERT_EQ(report->metrics.size(), 3u);
  EXPECT_EQ(report->metrics[0].name, "acc");
  EXPECT_EQ(report->metrics[1].name, "acc_L16_K2");
  EXPECT_EQ(report->metrics[2].name, "acc_L32_K4");
  // 1 of 2 right in every (16, 2) example, 1 of 4 in every (32, 4) one; overall is the
  // mean over the six examples.
  EXPECT_DOUBLE_EQ(report->values[1], 0.5);
  EXPECT_DOUBLE_EQ(report->values[2], 0.25);
  EXPECT_DOUBLE_EQ(report->values[0], (3 * 0.5 + 3 * 0.25) / 6);
  ASSERT_EQ(report->samples.size(), 6u);
  EXPECT_EQ(report->samples[1]["acc_L32_K4"], 0.25);
  EXPECT_FALSE(report->samples[1].contains("acc_L16_K2"));

  // A limit of 4 takes the first two examples of each setting.
  eval.limit = 4;
  model.seen_lengths.clear();
  report = RunTask(model, task, eval);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->n_effective, 4);
  EXPECT_EQ(model.seen_lengths, (std::vector<int64_t>{16, 32, 16, 32}));
}

TEST(MqarTaskTest, RequestsCarryTheGeneratedExample) {
  MqarTaskOptions options;
  options.settings = {{64, 4}};
  options.examples_per_setting = 5;
  MqarTask task(options);
  auto docs = task.LoadDocs("");
  ASSERT_TRUE(docs.ok()) << docs.status();
  MqarSegmentSpec spec;
  spec.num_examples = 5;
  spec.seed = ZoologyStandardTestSeed();
  auto examples = GenerateMqarSegment(spec);
  ASSERT_TRUE(examples.ok());
  for (size_t i = 0; i < 5; ++i) {
    auto requests = task.Requests((*docs)[i]);
    ASSERT_TRUE(requests.ok());
    ASSERT_EQ(requests->size(), 1u);
    const Request& r = (*requests)[0];
    EXPECT_EQ(r.type, RequestType::kTokenTargets);
    const MqarExample& e = (*examples)[i];
    EXPECT_EQ(std::vector<int64_t>(r.tokens.begin(), r.tokens.end()), e.inputs);
    for (size_t t = 0; t < e.labels.size(); ++t) {
      EXPECT_EQ(r.targets[t], e.labels[t] == kIgnoreLabel ? -1 : e.labels[t]);
    }
  }
}

TEST(MqarTaskTest, RegisteredWithTheStandardSettings) {
  auto task = CreateTask("mqar");
  ASSERT_TRUE(task.ok()) << task.status();
  std::vector<std::string> names;
  for (const auto& m : (*task)->metrics()) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"acc", "acc_L64_K4", "acc_L128_K8", "acc_L256_K16",
                                             "acc_L512_K64"}));
  const nlohmann::json config = (*task)->config();
  EXPECT_EQ(config["vocab_size"], 8192);
  EXPECT_EQ(config["num_examples_per_setting"], 3000);
  EXPECT_EQ(config["seed"], ZoologyStandardTestSeed());
}

}  // namespace
}  // namespace hgeval::tasks::mqar
