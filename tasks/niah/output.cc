#include "tasks/niah/output.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace hgeval::niah {
namespace {

using Json = nlohmann::json;

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStopToken:
      return "stop_token";
    case FinishReason::kStopString:
      return "stop_string";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

Json MetricsToJson(const metrics::NiahMetrics& m, const metrics::NiahMetricOptions& o) {
  Json named = Json::array();
  for (const metrics::NiahNamedAccuracy& n : m.named) {
    named.push_back({{"length", n.length},
                     {"grid_length", n.grid_length},
                     {"acc_at", n.acc_at},
                     {"acc_up_to", n.acc_up_to},
                     {"columns_up_to", n.columns_up_to}});
  }
  return Json{{"threshold", o.threshold},
              {"depth_alpha", o.depth_alpha},
              {"length_alpha", o.length_alpha},
              {"weighted_average_accuracy", m.weighted_average_accuracy},
              {"niah_score", m.niah_score},
              {"average_accuracy", m.average_accuracy},
              {"acc_at_length", m.acc_at_length},
              {"acc_up_to_length", m.acc_up_to_length},
              {"column_penalty", m.column_penalty},
              {"named", named}};
}

// RFC 4180: quote every text field, double the quotes inside.
std::string CsvQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string FormatNumber(double v) { return absl::StrFormat("%.6g", v); }

}  // namespace

std::string NiahHeatmapTitle(std::string_view model_name, std::string_view mode) {
  return absl::StrCat("Needle In A HayStack - ", std::string(mode), " mode - ",
                      model_name.empty() ? std::string("model") : std::string(model_name));
}

std::string NiahResultToJson(const NiahResult& r) {
  const NiahOptions& o = r.options;
  const NiahTexts texts = o.texts.value_or(DefaultNiahTexts(o.mode));
  Json scores = Json::array();
  for (const auto& column : r.grid.scores) {
    Json col = Json::array();
    for (double s : column) col.push_back(std::isnan(s) ? Json(nullptr) : Json(s));
    scores.push_back(col);
  }
  Json cells = Json::array();
  for (const NiahCellResult& c : r.cells) {
    Json cell{{"length", c.layout.length},
              {"depth", c.layout.depth},
              {"ran", c.ran},
              {"context_tokens", c.layout.context_tokens},
              {"target_insertion", c.layout.target_insertion},
              {"insertion_point", c.layout.insertion_point},
              {"prompt_tokens", c.prompt_tokens}};
    if (c.ran) {
      cell["score"] = c.score;
      cell["success"] = c.success;
      cell["rouge1_score"] = c.rouge1_score;
      cell["key_phrase_score"] = c.key_phrase_score;
      cell["generated"] = c.generated;
      cell["generated_tokens"] = c.generated_tokens;
      cell["finish_reason"] = FinishReasonName(c.finish_reason);
    }
    cells.push_back(std::move(cell));
  }
  Json doc{{"task", "niah"},
           {"mode", NiahModeName(o.mode)},
           {"model", o.model_name},
           {"model_hash", o.model_hash},
           {"training_length", o.training_length},
           {"tokenizer", r.tokenizer_kind},
           {"tokenizer_hash", r.tokenizer_hash},
           {"settings",
            {{"buffer_tokens", o.buffer_tokens},
             {"max_new_tokens", o.max_new_tokens},
             {"stop_strings", o.stop_strings},
             {"stop_at_eos", !o.ignore_eos},  // the results file's established key
             {"decoding", "greedy"},
             {"scorer", NiahScorerName(o.scorer)},
             {"rouge_use_stemmer", o.rouge_use_stemmer},
             {"prefix_reuse", o.prefix_reuse},
             {"max_batch", o.max_batch},
             {"max_cells", o.max_cells},
             {"needle", texts.needle},
             {"retrieval_question", texts.retrieval_question},
             {"prompt_suffix", texts.prompt_suffix},
             {"expected_answer", texts.expected_answer},
             {"key_phrases", texts.key_phrases},
             {"haystack", "Paul Graham essays, sorted file names, repeated"},
             {"sentence_end_rule",
              "token decoding alone to \".\" after leading whitespace is removed"}}},
           {"grid", {{"lengths", r.grid.lengths}, {"depths", r.grid.depths}, {"scores", scores}}},
           {"metrics", MetricsToJson(r.metrics, o.metric_options)},
           {"stats",
            {{"cells_total", r.stats.cells_total},
             {"cells_run", r.stats.cells_run},
             {"haystack_tokens", r.stats.haystack_tokens},
             {"prefill_tokens_fed", r.stats.prefill_tokens_fed},
             {"decode_tokens_fed", r.stats.decode_tokens_fed},
             {"naive_prefill_tokens", r.stats.naive_prefill_tokens},
             {"snapshots", r.stats.snapshots},
             {"wall_seconds", r.stats.wall_seconds}}},
           {"cells", cells}};
  return doc.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string NiahResultToCsv(const NiahResult& r) {
  std::string csv =
      "length,depth,score,success,generated,rouge1_score,key_phrase_score,prompt_tokens,"
      "insertion_point\n";
  for (const NiahCellResult& c : r.cells) {
    if (!c.ran) continue;
    absl::StrAppend(&csv, c.layout.length, ",", FormatNumber(c.layout.depth), ",",
                    FormatNumber(c.score), ",", c.success ? 1 : 0, ",", CsvQuote(c.generated), ",",
                    FormatNumber(c.rouge1_score), ",", FormatNumber(c.key_phrase_score), ",",
                    c.prompt_tokens, ",", c.layout.insertion_point, "\n");
  }
  return csv;
}

absl::Status WriteNiahOutputs(const NiahResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{kNiahResultsJson, NiahResultToJson(result)},
        std::pair<std::string, std::string>{kNiahGridCsv, NiahResultToCsv(result)}}) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<NiahHeatmapInput> ParseNiahResultsJson(std::string_view json_text) {
  try {
    const Json doc = Json::parse(json_text);
    NiahHeatmapInput input;
    input.model_name = doc.value("model", "");
    input.mode = doc.value("mode", "");
    input.training_length = doc.value("training_length", int64_t{0});
    const Json& grid = doc.at("grid");
    input.grid.lengths = grid.at("lengths").get<std::vector<int64_t>>();
    input.grid.depths = grid.at("depths").get<std::vector<double>>();
    for (const Json& column : grid.at("scores")) {
      std::vector<double> scores;
      for (const Json& s : column) {
        scores.push_back(s.is_null() ? std::numeric_limits<double>::quiet_NaN() : s.get<double>());
      }
      input.grid.scores.push_back(std::move(scores));
    }
    metrics::NiahMetricOptions options;
    if (doc.contains("metrics")) {
      const Json& m = doc.at("metrics");
      options.threshold = m.value("threshold", options.threshold);
      options.depth_alpha = m.value("depth_alpha", options.depth_alpha);
      options.length_alpha = m.value("length_alpha", options.length_alpha);
    }
    auto metrics = metrics::ComputeNiahMetrics(input.grid, options);
    if (!metrics.ok()) return metrics.status();
    input.metrics = *std::move(metrics);
    return input;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("NIAH results JSON: ", e.what()));
  }
}

}  // namespace hgeval::niah
