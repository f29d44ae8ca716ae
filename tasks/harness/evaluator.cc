#include "tasks/harness/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/util/status_macros.h"
#include "metrics/aggregation.h"
#include "metrics/multiple_choice.h"
#include "tasks/api/registry.h"

namespace hgeval::tasks {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Aggregated value and stderr (NaN: "N/A") of one metric, as lm-eval computes them.
absl::StatusOr<std::pair<double, double>> Aggregate(const Task& task, const MetricSpec& spec,
                                                    const std::vector<MetricSample>& samples,
                                                    int64_t bootstrap_iters) {
  if (spec.aggregation == Aggregation::kCorpus) {
    HG_ASSIGN_OR_RETURN(double value, task.AggregateCorpus(spec.name, samples));
    return std::pair<double, double>{value, kNaN};
  }
  std::vector<double> values, weights;
  for (const MetricSample& sample : samples) {
    values.push_back(sample.value);
    weights.push_back(sample.weight);
  }
  switch (spec.aggregation) {
    case Aggregation::kMean: {
      const double stderr_value =
          (bootstrap_iters > 0 && values.size() > 1) ? metrics::MeanStderr(values) : kNaN;
      return std::pair<double, double>{metrics::Mean(values), stderr_value};
    }
    case Aggregation::kPerplexity: {
      const double stderr_value = (bootstrap_iters > 0 && values.size() > 1)
                                      ? metrics::PerplexityStderr(values, bootstrap_iters)
                                      : kNaN;
      return std::pair<double, double>{metrics::Perplexity(values), stderr_value};
    }
    case Aggregation::kWeightedPerplexity:
      return std::pair<double, double>{metrics::WeightedPerplexity(values, weights), kNaN};
    case Aggregation::kBitsPerByte:
      return std::pair<double, double>{metrics::BitsPerByte(values, weights), kNaN};
    case Aggregation::kCorpus:
      break;
  }
  return std::pair<double, double>{kNaN, kNaN};
}

nlohmann::json NumberOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

}  // namespace

int64_t EffectiveDocCount(int64_t n, double limit) {
  if (limit <= 0) return n;
  if (limit < 1.0) return std::min<int64_t>(n, static_cast<int64_t>(std::ceil(n * limit)));
  return std::min<int64_t>(n, static_cast<int64_t>(limit));
}

namespace {

absl::StatusOr<TaskReport> RunTaskUnguarded(LanguageModel& model, const Task& task,
                                            const EvaluatorOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  TaskReport report;
  report.name = task.name();
  report.version = task.version();
  report.config = task.config();
  report.metrics = task.metrics();

  HG_ASSIGN_OR_RETURN(std::vector<Doc> docs, task.LoadDocs(options.data_dir));
  report.n_original = static_cast<int64_t>(docs.size());
  report.n_effective = EffectiveDocCount(report.n_original, options.limit);
  docs.resize(static_cast<size_t>(report.n_effective));

  // Requests of every doc, flattened; offsets[i] is doc i's first request.
  std::vector<Request> requests;
  std::vector<size_t> offsets;
  for (const Doc& doc : docs) {
    offsets.push_back(requests.size());
    HG_ASSIGN_OR_RETURN(std::vector<Request> doc_requests, task.Requests(doc));
    for (auto& r : doc_requests) requests.push_back(std::move(r));
  }
  offsets.push_back(requests.size());
  report.n_requests = static_cast<int64_t>(requests.size());

  // One model call per request type, in request order.
  std::vector<Response> responses(requests.size());
  const int64_t total = report.n_requests;
  int64_t finished_before = 0;
  model.ResetStats();
  for (RequestType type :
       {RequestType::kLoglikelihood, RequestType::kLoglikelihoodRolling,
        RequestType::kGenerateUntil, RequestType::kTokenTargets, RequestType::kClassify}) {
    std::vector<size_t> indices;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].type == type) indices.push_back(i);
    }
    if (indices.empty()) continue;
    CallOptions call;
    call.cancelled = options.cancelled;
    if (options.progress) {
      const std::string name = report.name;
      call.progress = [&options, name, finished_before, total](int64_t done, int64_t) {
        options.progress(name, finished_before + done, total);
      };
    }
    if (type == RequestType::kLoglikelihood) {
      std::vector<LoglikelihoodRequest> batch;
      batch.reserve(indices.size());
      for (size_t i : indices) batch.push_back({requests[i].context, requests[i].continuation});
      HG_ASSIGN_OR_RETURN(auto results, model.Loglikelihood(batch, call));
      for (size_t k = 0; k < indices.size(); ++k) {
        responses[indices[k]].logprob = results[k].logprob;
        responses[indices[k]].is_greedy = results[k].is_greedy;
        responses[indices[k]].n_tokens = results[k].n_tokens;
      }
    } else if (type == RequestType::kLoglikelihoodRolling) {
      std::vector<RollingRequest> batch;
      batch.reserve(indices.size());
      for (size_t i : indices) batch.push_back({requests[i].context, requests[i].windowless});
      HG_ASSIGN_OR_RETURN(auto results, model.LoglikelihoodRolling(batch, call));
      for (size_t k = 0; k < indices.size(); ++k) {
        responses[indices[k]].logprob = results[k].logprob;
        responses[indices[k]].n_tokens = results[k].n_tokens;
      }
    } else if (type == RequestType::kTokenTargets) {
      std::vector<TokenTargetsRequest> batch;
      batch.reserve(indices.size());
      for (size_t i : indices) batch.push_back({requests[i].tokens, requests[i].targets});
      HG_ASSIGN_OR_RETURN(auto results, model.ScoreTokenTargets(batch, call));
      for (size_t k = 0; k < indices.size(); ++k) {
        responses[indices[k]].logprob = results[k].logprob;
        responses[indices[k]].n_tokens = results[k].n_tokens;
        responses[indices[k]].argmax = std::move(results[k].argmax);
      }
    } else if (type == RequestType::kClassify) {
      std::vector<ClassifyRequest> batch;
      batch.reserve(indices.size());
      for (size_t i : indices) batch.push_back({requests[i].documents});
      HG_ASSIGN_OR_RETURN(auto results, model.Classify(batch, call));
      for (size_t k = 0; k < indices.size(); ++k) {
        responses[indices[k]].logits = std::move(results[k].logits);
        responses[indices[k]].predicted = results[k].predicted;
      }
    } else {
      std::vector<GenerateUntilRequest> batch;
      batch.reserve(indices.size());
      for (size_t i : indices) {
        batch.push_back({requests[i].context, requests[i].until, requests[i].max_gen_toks});
      }
      HG_ASSIGN_OR_RETURN(auto results, model.GenerateUntil(batch, call));
      for (size_t k = 0; k < indices.size(); ++k) {
        responses[indices[k]].text = results[k].text;
        responses[indices[k]].n_tokens = results[k].n_tokens;
      }
    }
    finished_before += static_cast<int64_t>(indices.size());
  }
  report.stats = model.stats();

  // Per-doc metrics, then aggregation.
  std::map<std::string, std::vector<MetricSample>> samples;
  for (size_t d = 0; d < docs.size(); ++d) {
    absl::Span<const Response> doc_responses(responses.data() + offsets[d],
                                             offsets[d + 1] - offsets[d]);
    HG_ASSIGN_OR_RETURN(DocMetrics doc_metrics, task.Process(docs[d], doc_responses));
    for (const auto& [metric, sample] : doc_metrics) samples[metric].push_back(sample);
    if (options.log_samples) {
      nlohmann::json record;
      record["task"] = report.name;
      record["doc_id"] = d;
      record["doc"] = docs[d];
      record["target"] = task.Target(docs[d]);
      nlohmann::json arguments = nlohmann::json::array();
      nlohmann::json resps = nlohmann::json::array();
      for (size_t r = offsets[d]; r < offsets[d + 1]; ++r) {
        const Request& request = requests[r];
        const Response& response = responses[r];
        switch (request.type) {
          case RequestType::kLoglikelihood:
            arguments.push_back({request.context, request.continuation});
            resps.push_back({response.logprob, response.is_greedy});
            break;
          case RequestType::kLoglikelihoodRolling:
            arguments.push_back({request.context});
            resps.push_back(response.logprob);
            break;
          case RequestType::kGenerateUntil:
            arguments.push_back(
                {request.context,
                 {{"until", request.until}, {"max_gen_toks", request.max_gen_toks}}});
            resps.push_back(response.text);
            break;
          case RequestType::kTokenTargets:
            arguments.push_back({request.tokens, request.targets});
            resps.push_back({response.logprob, response.argmax});
            break;
          case RequestType::kClassify: {
            // The documents are in the logged doc; their sizes identify the input.
            nlohmann::json sizes = nlohmann::json::array();
            for (const ClassifyDocument& d : request.documents) {
              sizes.push_back(d.pixels.empty() ? d.text.size() : d.pixels.size());
            }
            arguments.push_back(sizes);
            resps.push_back({response.logits, response.predicted});
            break;
          }
        }
      }
      record["arguments"] = arguments;
      record["resps"] = resps;
      record["filtered_resps"] = resps;
      for (const auto& [metric, sample] : doc_metrics) {
        // A named copy: clang before 16 cannot capture structured bindings.
        const std::string& metric_name = metric;
        auto aggregated_as = [&](std::initializer_list<Aggregation> kinds) {
          return std::any_of(
              report.metrics.begin(), report.metrics.end(), [&](const MetricSpec& m) {
                return m.name == metric_name &&
                       std::find(kinds.begin(), kinds.end(), m.aggregation) != kinds.end();
              });
        };
        if (aggregated_as({Aggregation::kCorpus})) {
          // lm-eval logs the (prediction, references) item.
          record[metric] = nlohmann::json::array({sample.prediction, sample.references});
        } else if (aggregated_as({Aggregation::kWeightedPerplexity, Aggregation::kBitsPerByte})) {
          record[metric] = {sample.value, sample.weight};
        } else {
          record[metric] = sample.value;
        }
      }
      report.samples.push_back(std::move(record));
    }
  }
  for (const MetricSpec& spec : report.metrics) {
    HG_ASSIGN_OR_RETURN(auto aggregated,
                        Aggregate(task, spec, samples[spec.name], options.bootstrap_iters));
    report.values.push_back(aggregated.first);
    report.stderrs.push_back(aggregated.second);
  }
  report.seconds = Seconds(start);
  return report;
}

}  // namespace

// Task code reads docs with nlohmann::json, which throws on malformed data: the
// exceptions stop here and become statuses.
absl::StatusOr<TaskReport> RunTask(LanguageModel& model, const Task& task,
                                   const EvaluatorOptions& options) {
  try {
    return RunTaskUnguarded(model, task, options);
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("task ", task.name(), ": ", e.what()));
  }
}

absl::StatusOr<EvaluationReport> RunTasks(LanguageModel& model,
                                          const std::vector<std::string>& task_names,
                                          const EvaluatorOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  EvaluationReport report;
  report.model = model.info();
  report.options = options;
  for (const std::string& name : task_names) {
    HG_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, CreateTask(name));
    HG_ASSIGN_OR_RETURN(TaskReport task_report, RunTask(model, *task, options));
    report.tasks.push_back(std::move(task_report));
  }
  report.total_seconds = Seconds(start);
  return report;
}

nlohmann::json ResultsJson(const EvaluationReport& report) {
  nlohmann::json out;
  out["results"] = nlohmann::json::object();
  out["group_subtasks"] = nlohmann::json::object();
  out["configs"] = nlohmann::json::object();
  out["versions"] = nlohmann::json::object();
  out["n-shot"] = nlohmann::json::object();
  out["higher_is_better"] = nlohmann::json::object();
  out["n-samples"] = nlohmann::json::object();
  nlohmann::json work = nlohmann::json::object();
  for (const TaskReport& task : report.tasks) {
    nlohmann::json result;
    result["alias"] = task.name;
    nlohmann::json higher;
    for (size_t m = 0; m < task.metrics.size(); ++m) {
      const std::string& metric = task.metrics[m].name;
      result[metric + ",none"] = NumberOrNull(task.values[m]);
      result[metric + "_stderr,none"] =
          std::isfinite(task.stderrs[m]) ? nlohmann::json(task.stderrs[m]) : "N/A";
      higher[metric] = task.metrics[m].higher_is_better;
    }
    out["results"][task.name] = result;
    out["group_subtasks"][task.name] = nlohmann::json::array();
    nlohmann::json config = task.config;
    config["task"] = task.name;
    config["num_fewshot"] = 0;
    config["metadata"] = {{"version", task.version}};
    out["configs"][task.name] = config;
    out["versions"][task.name] = task.version;
    out["n-shot"][task.name] = 0;
    out["higher_is_better"][task.name] = higher;
    out["n-samples"][task.name] = {{"original", task.n_original}, {"effective", task.n_effective}};
    work[task.name] = {{"requests", task.n_requests},
                       {"tokens_fed", task.stats.tokens_fed},
                       {"tokens_scored", task.stats.tokens_scored},
                       {"tokens_generated", task.stats.tokens_generated},
                       {"truncated_requests", task.stats.truncated_requests},
                       {"seconds", task.seconds}};
  }
  // Groups with a score: the mean of the members' score metric, when every member ran.
  for (const TaskGroup& group : RegisteredTaskGroups()) {
    if (group.score_metric.empty() || group.members.empty()) continue;
    double sum = 0;
    size_t found = 0;
    for (const std::string& member : group.members) {
      for (const TaskReport& task : report.tasks) {
        if (task.name != member) continue;
        for (size_t m = 0; m < task.metrics.size(); ++m) {
          if (task.metrics[m].name == group.score_metric) {
            sum += task.values[m];
            ++found;
          }
        }
      }
    }
    if (found != group.members.size()) continue;
    const std::string& metric = group.score_metric;
    out["groups"][group.name] = {{"alias", group.name},
                                 {metric + ",none", NumberOrNull(sum / found)},
                                 {metric + "_stderr,none", "N/A"}};
    out["group_subtasks"][group.name] = group.members;
    out["higher_is_better"][group.name] = {{metric, true}};
  }
  const LanguageModelInfo& m = report.model;
  nlohmann::json config;
  config["model"] = m.model;
  config["model_args"] = absl::StrCat("pretrained=", m.model, ",tokenizer=", m.tokenizer,
                                      ",max_length=", m.max_length);
  config["model_hash"] = m.model_hash;
  config["model_family"] = m.family;
  config["tokenizer"] = m.tokenizer;
  config["tokenizer_hash"] = m.tokenizer_hash;
  config["bos_regime"] = m.bos_regime;
  config["max_length"] = m.max_length;
  config["prefix_token_id"] = m.prefix_token_id;
  config["dtype"] = m.dtype;
  config["backend"] = m.backend;
  config["device"] = m.backend;
  config["context_reuse"] = m.context_reuse;
  config["rolling_mode"] = m.rolling_mode;
  config["batch_size"] = "auto";
  config["batch_sizes"] = nlohmann::json::array();
  config["use_cache"] = nullptr;
  config["limit"] =
      report.options.limit > 0 ? nlohmann::json(report.options.limit) : nlohmann::json(nullptr);
  config["bootstrap_iters"] = report.options.bootstrap_iters;
  config["gen_kwargs"] = nullptr;
  config["random_seed"] = 0;
  config["numpy_seed"] = 1234;
  config["torch_seed"] = 1234;
  config["fewshot_seed"] = 1234;
  out["config"] = config;
  out["max_length"] = m.max_length;
  out["date"] = static_cast<double>(std::time(nullptr));
  out["total_evaluation_time_seconds"] = absl::StrFormat("%.6f", report.total_seconds);
  out["hgeval"] = {{"tasks", work}, {"harness", "hgeval (lm-eval v0.4.x semantics)"}};
  return out;
}

nlohmann::json SamplesByTask(const EvaluationReport& report) {
  nlohmann::json out = nlohmann::json::object();
  for (const TaskReport& task : report.tasks) out[task.name] = task.samples;
  return out;
}

}  // namespace hgeval::tasks
