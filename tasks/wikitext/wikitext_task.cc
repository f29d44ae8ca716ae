// wikitext: loglikelihood_rolling over the detokenized article; word_perplexity,
// byte_perplexity and bits_per_byte counted on the original page text.
#include "tasks/wikitext/wikitext_task.h"

#include <memory>

#include "absl/status/status.h"
#include "engine/util/status_macros.h"
#include "metrics/text_counts.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"
#include "tasks/api/text_preprocess.h"

namespace hgeval::tasks {

std::vector<std::string> SplitWikitextPages(const std::string& raw) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {  // Python str.split("\n") keeps a trailing empty field
    const size_t end = raw.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(raw.substr(start));
      break;
    }
    lines.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string page;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) page += '\n';
      page += parts[i];
    }
    return page;
  };
  std::vector<std::string> pages;
  std::vector<std::string> current;
  for (const std::string& line : lines) {
    const std::string rline = PyStrip(PyReplace(PyReplace(line, "= = =", "==="), "= =", "=="));
    const bool heading = rline.size() >= 2 && rline.compare(0, 2, "= ") == 0 && rline.size() >= 2 &&
                         rline.compare(rline.size() - 2, 2, " =") == 0;
    if (heading) {
      std::string page = join(current);
      if (!PyStrip(page).empty()) pages.push_back(std::move(page));
      current.clear();
    }
    current.push_back(line);
  }
  pages.push_back(join(current));
  return pages;
}

std::vector<MetricSpec> TextPerplexityMetricSpecs() {
  return {{"word_perplexity", Aggregation::kWeightedPerplexity, false},
          {"byte_perplexity", Aggregation::kWeightedPerplexity, false},
          {"bits_per_byte", Aggregation::kBitsPerByte, false}};
}

DocMetrics TextPerplexityMetrics(const std::string& text, double loglikelihood) {
  const double words = static_cast<double>(metrics::PythonWhitespaceSplitCount(text));
  const double bytes = static_cast<double>(metrics::Utf8ByteCount(text));
  return DocMetrics{{"word_perplexity", {loglikelihood, words}},
                    {"byte_perplexity", {loglikelihood, bytes}},
                    {"bits_per_byte", {loglikelihood, bytes}}};
}

namespace {

// windowless: hgeval's variant for recurrent models, one pass per article carrying the
// state (reported as the separate task "wikitext_windowless"; lm-eval's form is
// "wikitext").
class WikitextTask : public Task {
 public:
  explicit WikitextTask(bool windowless) : windowless_(windowless) {}
  std::string name() const override { return windowless_ ? "wikitext_windowless" : "wikitext"; }
  double version() const override { return 2.0; }
  RequestType output_type() const override { return RequestType::kLoglikelihoodRolling; }
  nlohmann::json config() const override {
    return {{"dataset_path", "EleutherAI/wikitext_document_level"},
            {"dataset_name", "wikitext-2-raw-v1"},
            {"test_split", "test"},
            {"output_type", "loglikelihood_rolling"},
            {"doc_to_text", ""},
            {"doc_to_target", "preprocess_wikitext.wikitext_detokenizer"},
            {"process_results", "preprocess_wikitext.process_results"},
            {"data_files", "wikitext/wiki.test.raw.gz (split into pages)"},
            {"rolling", windowless_ ? "windowless: one pass per article, state carried "
                                      "(hgeval; recurrent models)"
                                    : "lm-eval max_length windows"}};
  }
  std::vector<MetricSpec> metrics() const override { return TextPerplexityMetricSpecs(); }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    HG_ASSIGN_OR_RETURN(std::string raw, ReadDataFileOrGz(data_dir + "/wikitext/wiki.test.raw"));
    std::vector<Doc> docs;
    for (auto& page : SplitWikitextPages(raw)) docs.push_back({{"page", std::move(page)}});
    return docs;
  }
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    Request r;
    r.type = RequestType::kLoglikelihoodRolling;
    r.context = WikitextDetokenize(doc.at("page").get<std::string>());
    r.windowless = windowless_;
    return std::vector<Request>{r};
  }
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override {
    if (responses.size() != 1) return absl::InternalError("wikitext needs 1 response");
    return TextPerplexityMetrics(doc.at("page").get<std::string>(), responses[0].logprob);
  }

 private:
  bool windowless_;
};

HGEVAL_REGISTER_TASK("wikitext", [] { return std::make_unique<WikitextTask>(false); });
HGEVAL_REGISTER_TASK("wikitext_windowless", [] { return std::make_unique<WikitextTask>(true); });

}  // namespace
}  // namespace hgeval::tasks
