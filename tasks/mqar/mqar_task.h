// The `mqar` task: zoology's MQAR test sets (tasks/mqar/generator.h) scored on any causal
// LM the engine loads, by token-level requests (the model's argmax at each labelled
// position). Accuracy per example is the mean over its labelled positions; the task
// reports the mean over examples overall ("acc") and per (L, K) config ("acc_L64_K4", ...),
// as zoology's valid/accuracy and its per-slice means.
//
// Docs interleave the configs (doc i is example i / C of config i % C), so a --limit of
// n * C evaluates the first n examples of every config.
#ifndef HGEVAL_TASKS_MQAR_MQAR_TASK_H_
#define HGEVAL_TASKS_MQAR_MQAR_TASK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "tasks/api/task.h"

namespace hgeval::tasks::mqar {

struct MqarSetting {
  int64_t input_seq_len = 64;
  int64_t num_kv_pairs = 4;
};

struct MqarTaskOptions {
  // The HGRN2 paper's configs (zoology's Figure 2 plus (512, 64)).
  std::vector<MqarSetting> settings = {{64, 4}, {128, 8}, {256, 16}, {512, 64}};
  int64_t vocab_size = 8192;
  int64_t examples_per_setting = 3000;
  double power_a = 0.01;
  // Every setting's segment seed; unset: zoology's standard test seed
  // (ZoologyStandardTestSeed()), what a zoology run with DataConfig.seed 123 tests on.
  std::optional<uint32_t> seed;
};

// "acc_L<L>_K<K>".
std::string MqarSettingMetric(const MqarSetting& setting);

// Mean of predictions[j] == labels[j] over the labelled positions (zoology's per-example
// accuracy); `predictions` holds one entry per labelled position, in order. NaN when
// nothing is labelled.
double MqarExampleAccuracy(absl::Span<const int32_t> predictions, absl::Span<const int64_t> labels);

class MqarTask : public Task {
 public:
  explicit MqarTask(MqarTaskOptions options = {});

  std::string name() const override { return "mqar"; }
  double version() const override { return 1.0; }
  RequestType output_type() const override { return RequestType::kTokenTargets; }
  nlohmann::json config() const override;
  std::vector<MetricSpec> metrics() const override;
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override;
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override;
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override;
  nlohmann::json Target(const Doc& doc) const override;

 private:
  MqarTaskOptions options_;
  uint32_t seed_ = 0;
};

}  // namespace hgeval::tasks::mqar

#endif  // HGEVAL_TASKS_MQAR_MQAR_TASK_H_
