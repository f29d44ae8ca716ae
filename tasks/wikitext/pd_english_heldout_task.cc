// pd_english_heldout: the validation perplexity of the demonstration checkpoint series
// (docs/series.md): loglikelihood_rolling over each held-out document of pd_english
// (data/series/pd_english_heldout.txt, documents separated by "\n<|endoftext|>\n", made
// by scripts/train/series_tokens.py), word_perplexity, byte_perplexity and bits_per_byte
// counted on the document text as wikitext counts them (TextPerplexityMetrics). Not an lm-eval
// task.
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "engine/util/status_macros.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"
#include "tasks/wikitext/wikitext_task.h"

namespace hgeval::tasks {
namespace {

constexpr char kDocumentSeparator[] = "\n<|endoftext|>\n";

class PdEnglishHeldoutTask : public Task {
 public:
  std::string name() const override { return "pd_english_heldout"; }
  double version() const override { return 1.0; }
  RequestType output_type() const override { return RequestType::kLoglikelihoodRolling; }
  nlohmann::json config() const override {
    return {{"dataset_path", "pd_english (held-out documents, scripts/train/series_tokens.py)"},
            {"output_type", "loglikelihood_rolling"},
            {"data_files", "series/pd_english_heldout.txt"},
            {"rolling", "lm-eval max_length windows"}};
  }
  std::vector<MetricSpec> metrics() const override { return TextPerplexityMetricSpecs(); }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    HG_ASSIGN_OR_RETURN(std::string raw,
                        ReadDataFileOrGz(data_dir + "/series/pd_english_heldout.txt"));
    if (!raw.empty() && raw.back() == '\n') raw.pop_back();
    std::vector<Doc> docs;
    for (absl::string_view text : absl::StrSplit(raw, kDocumentSeparator)) {
      docs.push_back({{"text", std::string(text)}});
    }
    return docs;
  }
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    Request r;
    r.type = RequestType::kLoglikelihoodRolling;
    r.context = doc.at("text").get<std::string>();
    return std::vector<Request>{r};
  }
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override {
    if (responses.size() != 1) return absl::InternalError("pd_english_heldout needs 1 response");
    return TextPerplexityMetrics(doc.at("text").get<std::string>(), responses[0].logprob);
  }
};

HGEVAL_REGISTER_TASK("pd_english_heldout", [] { return std::make_unique<PdEnglishHeldoutTask>(); });

}  // namespace
}  // namespace hgeval::tasks
