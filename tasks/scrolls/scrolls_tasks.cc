#include "tasks/scrolls/scrolls_tasks.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/util/status_macros.h"
#include "metrics/multiple_choice.h"
#include "metrics/scrolls_metrics.h"
#include "metrics/squad.h"
#include "metrics/text_counts.h"
#include "tasks/api/registry.h"
#include "tasks/scrolls/scrolls_data.h"

namespace hgeval::tasks {
namespace {

// What the task asks and how it is scored.
enum class ScrollsKind {
  kSummary,         // gov_report, summ_screen_fd: the whole input, a fixed question
  kQuerySummary,    // qmsum: the input's own question
  kQuestionAnswer,  // narrative_qa
  kQasper,          // yes/no by loglikelihood, else generated
  kMultipleChoice,  // quality, contract_nli
};

struct ScrollsTaskSpec {
  std::string name;    // lm-eval task name
  std::string subset;  // SCROLLS subset (data folder, dataset_name)
  ScrollsKind kind;
};

constexpr int kMaxGenToks = 256;  // lm-eval's model default; the tasks set none
const char* const kContractNliChoices[] = {"Not mentioned", "Entailment", "Contradiction"};

const std::vector<ScrollsTaskSpec>& Specs() {
  static const auto* specs = new std::vector<ScrollsTaskSpec>{
      {"scrolls_govreport", "gov_report", ScrollsKind::kSummary},
      {"scrolls_summscreenfd", "summ_screen_fd", ScrollsKind::kSummary},
      {"scrolls_qmsum", "qmsum", ScrollsKind::kQuerySummary},
      {"scrolls_qasper", "qasper", ScrollsKind::kQasper},
      {"scrolls_narrativeqa", "narrative_qa", ScrollsKind::kQuestionAnswer},
      {"scrolls_quality", "quality", ScrollsKind::kMultipleChoice},
      {"scrolls_contractnli", "contract_nli", ScrollsKind::kMultipleChoice},
  };
  return *specs;
}

std::string Str(const Doc& doc, const char* key) { return doc.at(key).get<std::string>(); }

class ScrollsTask : public Task {
 public:
  explicit ScrollsTask(ScrollsTaskSpec spec) : spec_(std::move(spec)) {}

  std::string name() const override { return spec_.name; }
  double version() const override { return 2; }

  RequestType output_type() const override {
    return generates() ? RequestType::kGenerateUntil : RequestType::kLoglikelihood;
  }

  nlohmann::json config() const override {
    nlohmann::json c;
    c["task"] = spec_.name;
    c["tag"] = "scrolls";
    c["dataset_path"] = "tau/scrolls";
    c["dataset_name"] = spec_.subset;
    c["validation_split"] = "validation";
    c["doc_to_text"] = DocToTextTemplate();
    c["doc_to_target"] = "\" \" + \", \".join(outputs)";
    c["output_type"] =
        spec_.kind == ScrollsKind::kMultipleChoice ? "multiple_choice"
        : spec_.kind == ScrollsKind::kQasper
            ? "generate_until (yes/no questions: loglikelihood of \" yes\" and \" no\")"
            : "generate_until";
    if (generates()) {
      c["generation_kwargs"] = {
          {"until", {"\n"}}, {"max_gen_toks", kMaxGenToks}, {"do_sample", false}};
    }
    c["metric_list"] = nlohmann::json::array();
    for (const MetricSpec& m : metrics()) {
      c["metric_list"].push_back({{"metric", m.name},
                                  {"aggregation", AggregationName(m)},
                                  {"higher_is_better", m.higher_is_better}});
    }
    return c;
  }

  std::vector<MetricSpec> metrics() const override {
    switch (spec_.kind) {
      case ScrollsKind::kSummary:
      case ScrollsKind::kQuerySummary:
        return {{"rouge1", Aggregation::kCorpus, true},
                {"rouge2", Aggregation::kCorpus, true},
                {"rougeL", Aggregation::kCorpus, true},
                {"scrolls_score", Aggregation::kCorpus, true}};
      case ScrollsKind::kQuestionAnswer:
      case ScrollsKind::kQasper:
        return {{"f1", Aggregation::kCorpus, true}, {"scrolls_score", Aggregation::kCorpus, true}};
      case ScrollsKind::kMultipleChoice:
        return {{"acc", Aggregation::kMean, true},
                {"acc_norm", Aggregation::kMean, true},
                {"em", Aggregation::kMean, true},
                {"scrolls_score", Aggregation::kCorpus, true}};
    }
    return {};
  }

  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    HG_ASSIGN_OR_RETURN(std::vector<ScrollsRecord> records,
                        LoadScrollsValidation(data_dir, spec_.subset));
    std::vector<Doc> docs = MergeDuplicateIds(records);
    for (Doc& doc : docs) HG_RETURN_IF_ERROR(PrepareDoc(doc));
    return docs;
  }

  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    const std::string context = DocToText(doc);
    std::vector<Request> requests;
    if (spec_.kind == ScrollsKind::kMultipleChoice) {
      for (const auto& choice : doc.at("choices")) {
        Request r;
        r.type = RequestType::kLoglikelihood;
        r.context = context;
        r.continuation = " " + choice.get<std::string>();
        requests.push_back(std::move(r));
      }
      return requests;
    }
    if (spec_.kind == ScrollsKind::kQasper && doc.at("is_yes_no").get<bool>()) {
      for (const char* answer : {" yes", " no"}) {
        Request r;
        r.type = RequestType::kLoglikelihood;
        r.context = context;
        r.continuation = answer;
        requests.push_back(std::move(r));
      }
      return requests;
    }
    Request r;
    r.type = RequestType::kGenerateUntil;
    r.context = context;
    r.until = {"\n"};
    r.max_gen_toks = kMaxGenToks;
    requests.push_back(std::move(r));
    return requests;
  }

  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override {
    if (spec_.kind == ScrollsKind::kMultipleChoice) return ProcessMultipleChoice(doc, responses);
    if (responses.empty()) return absl::InternalError(spec_.name + ": no response");
    MetricSample item;
    item.references = doc.at("outputs").get<std::vector<std::string>>();
    if (spec_.kind == ScrollsKind::kQasper && doc.at("is_yes_no").get<bool>()) {
      if (responses.size() != 2) return absl::InternalError(spec_.name + ": want 2 responses");
      // lm-eval compares the (loglikelihood, is_greedy) tuples: a tie in loglikelihood
      // falls to the greedy flag, and a full tie to " no".
      const Response& yes = responses[0];
      const Response& no = responses[1];
      const bool pick_yes =
          yes.logprob > no.logprob || (yes.logprob == no.logprob && yes.is_greedy && !no.is_greedy);
      item.prediction = pick_yes ? " yes" : " no";
    } else if (spec_.kind == ScrollsKind::kQasper &&
               metrics::PythonStrip(responses[0].text).empty()) {
      item.prediction = "Unanswerable";
    } else {
      item.prediction = responses[0].text;
    }
    DocMetrics out;
    for (const MetricSpec& m : metrics()) out.push_back({m.name, item});
    return out;
  }

  absl::StatusOr<double> AggregateCorpus(const std::string& metric,
                                         absl::Span<const MetricSample> samples) const override {
    if (spec_.kind == ScrollsKind::kMultipleChoice) {
      if (metric != "scrolls_score") return Task::AggregateCorpus(metric, samples);
      // The official score of these tasks is the exact match; lm-eval's em (100 *
      // acc_norm) stands for it, rounded as SCROLLS rounds its numbers.
      double sum = 0;
      for (const MetricSample& s : samples) sum += s.value;
      return metrics::PythonRound(samples.empty() ? 0.0 : sum / samples.size(), 4);
    }
    std::vector<std::string> predictions;
    std::vector<std::vector<std::string>> references;
    for (const MetricSample& s : samples) {
      predictions.push_back(s.prediction);
      references.push_back(s.references);
    }
    if (spec_.kind == ScrollsKind::kQuestionAnswer || spec_.kind == ScrollsKind::kQasper) {
      if (metric == "f1" || metric == "scrolls_score") {
        return metrics::ScrollsF1(predictions, references);
      }
      return Task::AggregateCorpus(metric, samples);
    }
    const metrics::ScrollsRougeScores rouge = metrics::ScrollsRouge(predictions, references);
    if (metric == "rouge1") return rouge.rouge1;
    if (metric == "rouge2") return rouge.rouge2;
    if (metric == "rougeL") return rouge.rougeL;
    if (metric == "scrolls_score") return rouge.geometric_mean;
    return Task::AggregateCorpus(metric, samples);
  }

  nlohmann::json Target(const Doc& doc) const override {
    return " " + absl::StrJoin(doc.at("outputs").get<std::vector<std::string>>(), ", ");
  }

 private:
  bool generates() const { return spec_.kind != ScrollsKind::kMultipleChoice; }

  // How config() describes a metric's aggregation.
  std::string AggregationName(const MetricSpec& m) const {
    if (m.aggregation != Aggregation::kCorpus) return "mean";
    if (spec_.kind == ScrollsKind::kMultipleChoice) return "mean of em, rounded to 4 decimals";
    return "SCROLLS metric over all (prediction, references) pairs";
  }

  std::string DocToTextTemplate() const {
    if (spec_.kind == ScrollsKind::kSummary) {
      return "{{input}}\n\nQuestion: What is a summary of the preceding text?\nAnswer:";
    }
    if (spec_.subset == "contract_nli") {
      return "{{text}}\n\nHypothesis: {{question}}\nConclusion:";
    }
    return "{{text}}\n\nQuestion: {{question}}\nAnswer:";
  }

  std::string DocToText(const Doc& doc) const {
    if (spec_.kind == ScrollsKind::kSummary) {
      return Str(doc, "input") + "\n\nQuestion: What is a summary of the preceding text?\nAnswer:";
    }
    if (spec_.subset == "contract_nli") {
      return Str(doc, "text") + "\n\nHypothesis: " + Str(doc, "question") + "\nConclusion:";
    }
    return Str(doc, "text") + "\n\nQuestion: " + Str(doc, "question") + "\nAnswer:";
  }

  // lm-eval's _process_doc for the task.
  absl::Status PrepareDoc(Doc& doc) const {
    if (spec_.kind == ScrollsKind::kSummary) return absl::OkStatus();
    QuestionAndText split = SplitQuestion(Str(doc, "input"));
    doc["question"] = std::move(split.question);
    doc["text"] = std::move(split.text);
    if (spec_.kind == ScrollsKind::kQasper) {
      // Yes/no when every reference normalises to "yes" or "no" (true with none).
      bool yes_no = true;
      for (const auto& output : doc.at("outputs")) {
        const std::string normal = metrics::SquadNormalize(output.get<std::string>());
        yes_no = yes_no && (normal == "yes" || normal == "no");
      }
      doc["is_yes_no"] = yes_no;
    }
    if (spec_.subset == "quality") return ExtractQualityChoices(doc);
    if (spec_.subset == "contract_nli") {
      const std::string gold = doc.at("outputs").at(0).get<std::string>();
      doc["choices"] = nlohmann::json::array();
      int64_t gold_index = -1;
      for (int64_t i = 0; i < 3; ++i) {
        doc["choices"].push_back(kContractNliChoices[i]);
        if (gold == kContractNliChoices[i]) gold_index = i;
      }
      if (gold_index < 0) {
        return absl::DataLossError(
            absl::StrCat("contract_nli doc ", Str(doc, "id"), ": unknown label \"", gold, "\""));
      }
      doc["gold"] = gold_index;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DocMetrics> ProcessMultipleChoice(const Doc& doc,
                                                   absl::Span<const Response> responses) const {
    const auto choices = doc.at("choices").get<std::vector<std::string>>();
    if (responses.size() != choices.size()) {
      return absl::InternalError(absl::StrCat(spec_.name, ": ", responses.size(), " responses for ",
                                              choices.size(), " choices"));
    }
    std::vector<double> lls;
    for (const Response& r : responses) lls.push_back(r.logprob);
    const int64_t gold = doc.at("gold").get<int64_t>();
    const double acc = metrics::Acc(lls, gold);
    const double acc_norm = metrics::AccNorm(lls, choices, gold);
    MetricSample em{acc_norm * 100.0};
    return DocMetrics{{"acc", {acc}}, {"acc_norm", {acc_norm}}, {"em", em}, {"scrolls_score", em}};
  }

  ScrollsTaskSpec spec_;
};

const bool kRegistered = [] {
  TaskGroup group{"scrolls", {}, "scrolls_score"};
  for (const ScrollsTaskSpec& spec : Specs()) {
    RegisterTask(spec.name, [spec] { return std::make_unique<ScrollsTask>(spec); });
    group.members.push_back(spec.name);
  }
  // The official SCROLLS score: the plain mean of the seven task scores.
  RegisterTaskGroup(std::move(group));
  return true;
}();

}  // namespace

const std::vector<std::string>& ScrollsTaskNames() {
  static const auto* names = [] {
    auto* out = new std::vector<std::string>();
    for (const ScrollsTaskSpec& spec : Specs()) out->push_back(spec.name);
    return out;
  }();
  return *names;
}

std::unique_ptr<Task> MakeScrollsTask(const std::string& name) {
  for (const ScrollsTaskSpec& spec : Specs()) {
    if (spec.name == name) return std::make_unique<ScrollsTask>(spec);
  }
  return nullptr;
}

}  // namespace hgeval::tasks
