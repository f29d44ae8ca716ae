// winogrande (lm-eval tasks/winogrande): partial evaluation. The two contexts are the
// sentence up to the blank with each option filled in; the shared continuation is the
// rest of the sentence after the blank; acc = argmax of its log-likelihood.
#include "tasks/winogrande/winogrande_task.h"

#include <memory>

#include "absl/status/status.h"
#include "engine/util/status_macros.h"
#include "metrics/multiple_choice.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"
#include "tasks/api/text_preprocess.h"

namespace hgeval::tasks {

absl::StatusOr<WinograndeParts> SplitWinogrande(const Doc& doc) {
  if (!doc.contains("sentence") || !doc.contains("option1") || !doc.contains("option2")) {
    return absl::DataLossError("winogrande doc needs sentence, option1, option2");
  }
  const std::string sentence = doc.at("sentence").get<std::string>();
  const size_t blank = sentence.find('_');
  if (blank == std::string::npos) return absl::DataLossError("winogrande sentence has no _");
  WinograndeParts parts;
  const std::string head = sentence.substr(0, blank);
  parts.contexts = {head + doc.at("option1").get<std::string>(),
                    head + doc.at("option2").get<std::string>()};
  parts.target = PyStrip(sentence.substr(blank + 1));
  const std::string answer = doc.value("answer", "");
  parts.gold = answer == "1" ? 0 : answer == "2" ? 1 : -100;
  return parts;
}

namespace {

class WinograndeTask : public Task {
 public:
  std::string name() const override { return "winogrande"; }
  double version() const override { return 1.0; }
  RequestType output_type() const override { return RequestType::kLoglikelihood; }
  nlohmann::json config() const override {
    return {{"dataset_path", "allenai/winogrande"},
            {"dataset_name", "winogrande_xl"},
            {"validation_split", "validation"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "preprocess_winogrande.doc_to_text"},
            {"doc_to_target", "preprocess_winogrande.doc_to_target"},
            {"doc_to_choice", "preprocess_winogrande.doc_to_choice"},
            {"target_delimiter", " "},
            {"data_files", "winogrande/winogrande_xl_validation.jsonl"}};
  }
  std::vector<MetricSpec> metrics() const override { return {{"acc", Aggregation::kMean, true}}; }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    const std::string path = data_dir + "/winogrande/winogrande_xl_validation.jsonl";
    HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(path));
    return ParseJsonLines(text, path);
  }
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(WinograndeParts parts, SplitWinogrande(doc));
    std::vector<Request> out;
    for (const std::string& context : parts.contexts) {
      Request r;
      r.context = context;
      r.continuation = " " + parts.target;
      out.push_back(std::move(r));
    }
    return out;
  }
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override {
    HG_ASSIGN_OR_RETURN(WinograndeParts parts, SplitWinogrande(doc));
    if (responses.size() != 2) return absl::InternalError("winogrande needs 2 responses");
    std::vector<double> lls = {responses[0].logprob, responses[1].logprob};
    return DocMetrics{{"acc", {metrics::Acc(lls, parts.gold), 1.0}}};
  }
  nlohmann::json Target(const Doc& doc) const override {
    auto parts = SplitWinogrande(doc);
    return parts.ok() ? nlohmann::json(parts->gold) : nlohmann::json(nullptr);
  }
};

HGEVAL_REGISTER_TASK("winogrande", [] { return std::make_unique<WinograndeTask>(); });

}  // namespace
}  // namespace hgeval::tasks
