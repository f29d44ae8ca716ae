// The task plugin contract: a task loads its dataset docs, turns each doc into requests
// (loglikelihood, loglikelihood_rolling, generate_until), turns the responses into per-doc
// metric samples, and names how each metric aggregates. Tasks are found by their
// lm-evaluation-harness name in the registry (tasks/api/registry.h).
#ifndef HGEVAL_TASKS_API_TASK_H_
#define HGEVAL_TASKS_API_TASK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "tasks/api/classify_request.h"

namespace hgeval::tasks {

// A dataset record, as the task's loader produced it (also written with --log_samples).
using Doc = nlohmann::json;

enum class RequestType {
  kLoglikelihood,
  kLoglikelihoodRolling,
  kGenerateUntil,
  kTokenTargets,  // hgeval's token-level scoring (synthetic tasks such as MQAR)
  kClassify,      // hgeval's sequence classification (Long Range Arena's classifiers)
};
const char* RequestTypeName(RequestType type);  // lm-eval's names where lm-eval has them

struct Request {
  RequestType type = RequestType::kLoglikelihood;
  std::string context;             // loglikelihood / generate_until context; rolling: the text
  std::string continuation;        // loglikelihood only
  std::vector<std::string> until;  // generate_until only
  int max_gen_toks = 256;          // generate_until only
  bool windowless = false;         // loglikelihood_rolling only: one pass, no windows
  std::vector<int32_t> tokens;     // token_targets only: fed from an empty state
  std::vector<int32_t> targets;    // token_targets only: per token, -1 when not scored
  std::vector<ClassifyDocument> documents;  // classify only: one, or two (retrieval)
};

struct Response {
  double logprob = 0.0;
  bool is_greedy = false;
  int64_t n_tokens = 0;
  std::string text;             // generate_until
  std::vector<int32_t> argmax;  // token_targets: the prediction at each scored position
  std::vector<float> logits;    // classify: one per class
  int32_t predicted = -1;       // classify: the argmax of the logits (lowest on ties)
};

// How per-doc samples of a metric combine into the task's number.
enum class Aggregation {
  kMean,                // mean of values; stderr = sample stddev / sqrt(n)
  kPerplexity,          // exp(-mean(values)); stderr bootstrapped
  kWeightedPerplexity,  // exp(-sum(value) / sum(weight)); stderr "N/A"
  kBitsPerByte,         // -(sum(value) / sum(weight)) / ln 2; stderr "N/A"
  // The task computes the number from every doc's sample at once (Task::AggregateCorpus),
  // as lm-eval's custom aggregation functions do (SCROLLS' ROUGE, F1); stderr "N/A".
  kCorpus,
};

struct MetricSpec {
  std::string name;  // "acc", "acc_norm", "perplexity", "word_perplexity", ...
  Aggregation aggregation = Aggregation::kMean;
  bool higher_is_better = true;
};

// One doc's contribution to one metric: value (and the weight, for weighted
// aggregations: words or bytes). A corpus-level metric (Aggregation::kCorpus) gets the
// doc's item instead: what it predicted and the references it is scored against.
struct MetricSample {
  double value = 0.0;
  double weight = 1.0;
  std::string prediction;
  std::vector<std::string> references;
};

using DocMetrics = std::vector<std::pair<std::string, MetricSample>>;

class Task {
 public:
  virtual ~Task() = default;

  virtual std::string name() const = 0;  // lm-eval task name
  virtual double version() const = 0;    // lm-eval task version
  virtual RequestType output_type() const = 0;
  // Task description for the results' "configs" (dataset, split, templates, ...).
  virtual nlohmann::json config() const = 0;
  virtual std::vector<MetricSpec> metrics() const = 0;

  // Every doc of the evaluation split, in dataset order. `data_dir` is the repository's
  // data/ folder (or a user's copy with the same layout).
  virtual absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const = 0;
  // The doc's requests, in the order Process expects their responses.
  virtual absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const = 0;
  // Per-doc metric samples from the responses (one per request, same order).
  virtual absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                             absl::Span<const Response> responses) const = 0;
  // The value of a kCorpus metric from the samples of every evaluated doc, in doc order.
  virtual absl::StatusOr<double> AggregateCorpus(const std::string& metric,
                                                 absl::Span<const MetricSample> samples) const {
    return absl::UnimplementedError("task " + name() + " has no corpus-level metric " + metric);
  }
  // For --log_samples: the gold target as lm-eval logs it (index or string).
  virtual nlohmann::json Target(const Doc& doc) const { return nullptr; }
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_API_TASK_H_
