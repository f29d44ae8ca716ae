// lm-eval's multiple_choice output type: one loglikelihood request (context,
// target_delimiter + choice) per choice; acc (and acc_norm when enabled) per doc.
#ifndef HGEVAL_TASKS_COMMONSENSE_MULTIPLE_CHOICE_TASK_H_
#define HGEVAL_TASKS_COMMONSENSE_MULTIPLE_CHOICE_TASK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tasks/api/task.h"

namespace hgeval::tasks {

class MultipleChoiceTask : public Task {
 public:
  // The doc's zero-shot context (doc_to_text).
  virtual absl::StatusOr<std::string> DocToText(const Doc& doc) const = 0;
  virtual absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const = 0;
  // Index of the gold choice.
  virtual absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const = 0;
  // acc_norm reported too.
  virtual bool has_acc_norm() const = 0;

  RequestType output_type() const override { return RequestType::kLoglikelihood; }
  std::vector<MetricSpec> metrics() const override;
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override;
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override;
  nlohmann::json Target(const Doc& doc) const override;
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_COMMONSENSE_MULTIPLE_CHOICE_TASK_H_
