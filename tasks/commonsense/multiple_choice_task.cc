#include "tasks/commonsense/multiple_choice_task.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "metrics/multiple_choice.h"

namespace hgeval::tasks {

std::vector<MetricSpec> MultipleChoiceTask::metrics() const {
  std::vector<MetricSpec> specs = {{"acc", Aggregation::kMean, true}};
  if (has_acc_norm()) specs.push_back({"acc_norm", Aggregation::kMean, true});
  return specs;
}

absl::StatusOr<std::vector<Request>> MultipleChoiceTask::Requests(const Doc& doc) const {
  HG_ASSIGN_OR_RETURN(std::string context, DocToText(doc));
  HG_ASSIGN_OR_RETURN(std::vector<std::string> choices, DocToChoice(doc));
  std::vector<Request> requests;
  for (const std::string& choice : choices) {
    Request r;
    r.type = RequestType::kLoglikelihood;
    r.context = context;
    r.continuation = " " + choice;  // target_delimiter
    requests.push_back(std::move(r));
  }
  return requests;
}

absl::StatusOr<DocMetrics> MultipleChoiceTask::Process(const Doc& doc,
                                                       absl::Span<const Response> responses) const {
  HG_ASSIGN_OR_RETURN(std::vector<std::string> choices, DocToChoice(doc));
  HG_ASSIGN_OR_RETURN(int64_t gold, DocToTarget(doc));
  if (responses.size() != choices.size()) {
    return absl::InternalError(absl::StrCat(name(), ": ", responses.size(), " responses for ",
                                            choices.size(), " choices"));
  }
  std::vector<double> lls;
  for (const Response& r : responses) lls.push_back(r.logprob);
  DocMetrics out = {{"acc", {metrics::Acc(lls, gold), 1.0}}};
  if (has_acc_norm()) out.push_back({"acc_norm", {metrics::AccNorm(lls, choices, gold), 1.0}});
  return out;
}

nlohmann::json MultipleChoiceTask::Target(const Doc& doc) const {
  auto gold = DocToTarget(doc);
  return gold.ok() ? nlohmann::json(*gold) : nlohmann::json(nullptr);
}

}  // namespace hgeval::tasks
