#include "tasks/mqar/mqar_task.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "tasks/api/registry.h"
#include "tasks/mqar/generator.h"

namespace hgeval::tasks::mqar {
namespace {

// A doc carries what the stream drew; the sequence is rebuilt from it (cheaper to hold
// and to log than L inputs and L labels).
MqarExample ExampleOfDoc(const Doc& doc) {
  MqarDraw draw;
  draw.keys = doc.at("keys").get<std::vector<int32_t>>();
  draw.values = doc.at("values").get<std::vector<int32_t>>();
  draw.gaps = doc.at("gaps").get<std::vector<int32_t>>();
  return BuildMqarExample(doc.at("input_seq_len").get<int64_t>(), draw);
}

MqarSetting SettingOfDoc(const Doc& doc) {
  return {doc.at("input_seq_len").get<int64_t>(), doc.at("num_kv_pairs").get<int64_t>()};
}

}  // namespace

std::string MqarSettingMetric(const MqarSetting& setting) {
  return absl::StrCat("acc_L", setting.input_seq_len, "_K", setting.num_kv_pairs);
}

double MqarExampleAccuracy(absl::Span<const int32_t> predictions,
                           absl::Span<const int64_t> labels) {
  size_t labelled = 0;
  size_t correct = 0;
  for (int64_t label : labels) {
    if (label == kIgnoreLabel) continue;
    if (labelled < predictions.size() && predictions[labelled] == label) ++correct;
    ++labelled;
  }
  if (labelled == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(correct) / static_cast<double>(labelled);
}

MqarTask::MqarTask(MqarTaskOptions options)
    : options_(std::move(options)), seed_(options_.seed.value_or(ZoologyStandardTestSeed())) {}

nlohmann::json MqarTask::config() const {
  nlohmann::json settings = nlohmann::json::array();
  for (const MqarSetting& s : options_.settings) {
    settings.push_back({{"input_seq_len", s.input_seq_len},
                        {"num_kv_pairs", s.num_kv_pairs},
                        {"metric", MqarSettingMetric(s)}});
  }
  return {{"dataset_path", "generated: zoology multiquery_ar (HazyResearch/zoology)"},
          {"output_type", RequestTypeName(output_type())},
          {"vocab_size", options_.vocab_size},
          {"num_examples_per_setting", options_.examples_per_setting},
          {"power_a", options_.power_a},
          {"random_non_queries", false},
          {"seed", seed_},
          {"seed_rule", options_.seed ? "given"
                                      : "zoology prepare_data: np.random.seed(123), one "
                                        "train then one test randint"},
          {"settings", settings},
          {"doc_order", "interleaved: doc i is example i / C of setting i % C"},
          {"metric",
           "per example: mean of argmax == label over labelled positions; "
           "then the mean over examples"}};
}

std::vector<MetricSpec> MqarTask::metrics() const {
  std::vector<MetricSpec> out = {{"acc", Aggregation::kMean, true}};
  for (const MqarSetting& s : options_.settings) {
    out.push_back({MqarSettingMetric(s), Aggregation::kMean, true});
  }
  return out;
}

absl::StatusOr<std::vector<Doc>> MqarTask::LoadDocs(const std::string& /*data_dir*/) const {
  if (options_.settings.empty()) return absl::InvalidArgumentError("mqar: no settings");
  std::vector<std::vector<MqarDraw>> segments;
  for (const MqarSetting& s : options_.settings) {
    MqarSegmentSpec spec;
    spec.vocab_size = options_.vocab_size;
    spec.input_seq_len = s.input_seq_len;
    spec.num_kv_pairs = s.num_kv_pairs;
    spec.power_a = options_.power_a;
    spec.num_examples = options_.examples_per_setting;
    spec.seed = seed_;
    HG_ASSIGN_OR_RETURN(std::vector<MqarDraw> draws, DrawMqarSegment(spec));
    segments.push_back(std::move(draws));
  }
  std::vector<Doc> docs;
  docs.reserve(segments.size() * static_cast<size_t>(options_.examples_per_setting));
  for (size_t e = 0; e < static_cast<size_t>(options_.examples_per_setting); ++e) {
    for (size_t s = 0; s < segments.size(); ++s) {
      const MqarDraw& draw = segments[s][e];
      docs.push_back({{"input_seq_len", options_.settings[s].input_seq_len},
                      {"num_kv_pairs", options_.settings[s].num_kv_pairs},
                      {"example", e},
                      {"keys", draw.keys},
                      {"values", draw.values},
                      {"gaps", draw.gaps}});
    }
  }
  return docs;
}

absl::StatusOr<std::vector<Request>> MqarTask::Requests(const Doc& doc) const {
  const MqarExample example = ExampleOfDoc(doc);
  Request request;
  request.type = RequestType::kTokenTargets;
  request.tokens.assign(example.inputs.begin(), example.inputs.end());
  request.targets.reserve(example.labels.size());
  for (int64_t label : example.labels) {
    request.targets.push_back(label == kIgnoreLabel ? -1 : static_cast<int32_t>(label));
  }
  return std::vector<Request>{std::move(request)};
}

absl::StatusOr<DocMetrics> MqarTask::Process(const Doc& doc,
                                             absl::Span<const Response> responses) const {
  if (responses.size() != 1) {
    return absl::InternalError(absl::StrCat("mqar: expected 1 response, got ", responses.size()));
  }
  const MqarExample example = ExampleOfDoc(doc);
  const auto labelled = std::count_if(example.labels.begin(), example.labels.end(),
                                      [](int64_t label) { return label != kIgnoreLabel; });
  if (static_cast<size_t>(labelled) != responses[0].argmax.size()) {
    return absl::InternalError(absl::StrCat("mqar: ", responses[0].argmax.size(),
                                            " predictions for ", labelled, " labels"));
  }
  const double accuracy = MqarExampleAccuracy(responses[0].argmax, example.labels);
  return DocMetrics{{"acc", {accuracy, 1.0}},
                    {MqarSettingMetric(SettingOfDoc(doc)), {accuracy, 1.0}}};
}

nlohmann::json MqarTask::Target(const Doc& doc) const { return doc.at("values"); }

HGEVAL_REGISTER_TASK("mqar", [] { return std::make_unique<MqarTask>(); });

}  // namespace hgeval::tasks::mqar
