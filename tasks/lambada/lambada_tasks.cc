// lambada_openai and lambada_standard (lm-eval tasks/lambada): context = the passage
// without its last space-separated word, continuation = " " + that word; acc =
// is_greedy, perplexity = exp(-mean per-doc log-likelihood).
#include <memory>

#include "absl/status/status.h"
#include "engine/util/status_macros.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"

namespace hgeval::tasks {
namespace {

class LambadaTask : public Task {
 public:
  LambadaTask(std::string name, bool openai) : name_(std::move(name)), openai_(openai) {}
  std::string name() const override { return name_; }
  double version() const override { return 1.0; }
  RequestType output_type() const override { return RequestType::kLoglikelihood; }
  nlohmann::json config() const override {
    return {{"dataset_path", openai_ ? "EleutherAI/lambada_openai" : "cimec/lambada"},
            {"dataset_name", openai_ ? nlohmann::json("default") : nlohmann::json(nullptr)},
            {"test_split", "test"},
            {"output_type", "loglikelihood"},
            {"doc_to_text", "{{text.split(' ')[:-1]|join(' ')}}"},
            {"doc_to_target", "{{' '+text.split(' ')[-1]}}"},
            {"data_files", openai_ ? "lambada_openai/lambada_test.jsonl.gz"
                                   : "lambada_standard/lambada_test_plain_text.txt.gz"}};
  }
  std::vector<MetricSpec> metrics() const override {
    return {{"perplexity", Aggregation::kPerplexity, false}, {"acc", Aggregation::kMean, true}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    if (openai_) {
      const std::string path = data_dir + "/lambada_openai/lambada_test.jsonl";
      HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(path));
      return ParseJsonLines(text, path);
    }
    const std::string path = data_dir + "/lambada_standard/lambada_test_plain_text.txt";
    HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(path));
    std::vector<Doc> docs;
    // HF cimec/lambada: f.read().splitlines(), one passage per line, kept as is.
    for (auto& line : SplitLines(text)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      docs.push_back({{"text", line}, {"domain", nullptr}});
    }
    return docs;
  }
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    const std::string text = doc.value("text", "");
    const size_t last_space = text.rfind(' ');
    Request r;
    if (last_space == std::string::npos) {
      r.context = "";
      r.continuation = " " + text;
    } else {
      r.context = text.substr(0, last_space);
      r.continuation = " " + text.substr(last_space + 1);
    }
    return std::vector<Request>{r};
  }
  absl::StatusOr<DocMetrics> Process(const Doc&,
                                     absl::Span<const Response> responses) const override {
    if (responses.size() != 1) return absl::InternalError("lambada needs 1 response");
    return DocMetrics{{"perplexity", {responses[0].logprob, 1.0}},
                      {"acc", {responses[0].is_greedy ? 1.0 : 0.0, 1.0}}};
  }
  nlohmann::json Target(const Doc& doc) const override {
    const std::string text = doc.value("text", "");
    return " " + text.substr(text.rfind(' ') + 1);
  }

 private:
  std::string name_;
  bool openai_;
};

HGEVAL_REGISTER_TASK("lambada_openai",
                     [] { return std::make_unique<LambadaTask>("lambada_openai", true); });
HGEVAL_REGISTER_TASK("lambada_standard",
                     [] { return std::make_unique<LambadaTask>("lambada_standard", false); });

}  // namespace
}  // namespace hgeval::tasks
