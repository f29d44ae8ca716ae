// NIAH jobs: the sweep of tasks/niah run next to the model, resumable cell by cell through
// the result store.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/util/sha256.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/request_prep.h"
#include "server/core/result_codec.h"
#include "server/jobs/job_runner.h"
#include "tasks/niah/context.h"
#include "tasks/niah/haystack.h"
#include "tasks/niah/output.h"
#include "tasks/niah/sweep.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;
namespace {

using Json = nlohmann::json;

constexpr char kNiahCellKind[] = "niah_cell";

// Most cells one NIAH job may ask for (the paper grid has 1,225): checked on the spec's
// sizes before any list is sorted or any cell key built, so an absurd grid costs nothing.
constexpr int64_t kMaxNiahCells = 16384;

// Everything that decides a cell's generated tokens, as the digest of canonical JSON:
// the texts, the haystack's content, the cell's place and the decoding settings (scoring
// settings are left out: stored cells are rescored).
std::string CellDigest(const niah::NiahOptions& options, const std::string& essays_digest,
                       int64_t length, double depth) {
  const niah::NiahTexts& texts = *options.texts;
  const Json canonical{{"v", 1},
                       {"needle", texts.needle},
                       {"suffix", texts.prompt_suffix},
                       {"essays", essays_digest},
                       {"buffer_tokens", options.buffer_tokens},
                       {"length", length},
                       {"depth", depth},
                       {"max_new_tokens", options.max_new_tokens},
                       {"stop_strings", options.stop_strings},
                       // Spelled as when the first cells were stored: a new key would
                       // make every stored cell a miss.
                       {"stop_at_eos", !options.ignore_eos},
                       {"decoding", "greedy"}};
  return Sha256Hex(canonical.dump(-1, ' ', true, Json::error_handler_t::replace));
}

absl::StatusOr<std::string> EssaysDigest(const std::string& dir) {
  HG_ASSIGN_OR_RETURN(std::vector<niah::Essay> essays, niah::ReadHaystackEssays(dir));
  std::string all;
  for (const niah::Essay& essay : essays) {
    absl::StrAppend(&all, essay.name, "\n", Sha256Hex(essay.text), "\n");
  }
  return Sha256Hex(all);
}

v1::TaskResult MetricsResult(const niah::NiahResult& result, int64_t cells) {
  v1::TaskResult out;
  out.set_task("niah");
  out.set_samples(cells);
  out.set_version("1");
  auto& m = *out.mutable_metrics();
  m["weighted_avg_acc,none"] = result.metrics.weighted_average_accuracy;
  m["niah_score,none"] = result.metrics.niah_score;
  m["avg_acc,none"] = result.metrics.average_accuracy;
  for (const metrics::NiahNamedAccuracy& named : result.metrics.named) {
    m[absl::StrCat("acc@", named.length, ",none")] = named.acc_at;
    m[absl::StrCat("acc<=", named.length, ",none")] = named.acc_up_to;
  }
  return out;
}

}  // namespace

absl::StatusOr<niah::NiahOptions> NiahOptionsFromSpec(const v1::NiahJobSpec& spec) {
  niah::NiahOptions options;

  if (!spec.mode().empty()) {
    HG_ASSIGN_OR_RETURN(options.mode, niah::ParseNiahMode(spec.mode()));
  }
  HG_ASSIGN_OR_RETURN(options.grid,
                      niah::NiahGridPreset(spec.preset().empty() ? "quick" : spec.preset()));
  if (!spec.lengths().empty()) {
    options.grid.lengths.assign(spec.lengths().begin(), spec.lengths().end());
  }
  if (!spec.depths().empty()) {
    options.grid.depths.assign(spec.depths().begin(), spec.depths().end());
  }
  const int64_t lengths = static_cast<int64_t>(options.grid.lengths.size());
  const int64_t depths = static_cast<int64_t>(options.grid.depths.size());
  if (lengths > kMaxNiahCells || depths > kMaxNiahCells || lengths * depths > kMaxNiahCells) {
    return absl::InvalidArgumentError(absl::StrCat("niah: ", lengths, " lengths x ", depths,
                                                   " depths is over the limit of ", kMaxNiahCells,
                                                   " cells per job"));
  }
  niah::NormalizeNiahGrid(options.grid);
  HG_RETURN_IF_ERROR(niah::ValidateNiahGrid(options.grid));
  if (spec.has_buffer_tokens()) {
    if (spec.buffer_tokens() < 0) {
      return absl::InvalidArgumentError("niah.buffer_tokens must be >= 0");
    }
    options.buffer_tokens = spec.buffer_tokens();
  }
  if (spec.has_max_new_tokens()) {
    if (spec.max_new_tokens() < 1 || spec.max_new_tokens() > 4096) {
      return absl::InvalidArgumentError("niah.max_new_tokens must be in [1, 4096]");
    }
    options.max_new_tokens = spec.max_new_tokens();
  }
  if (spec.no_stop_strings()) {
    if (!spec.stop_strings().empty()) {
      return absl::InvalidArgumentError("niah: stop_strings given together with no_stop_strings");
    }
    options.stop_strings.clear();
  } else if (!spec.stop_strings().empty()) {
    options.stop_strings.assign(spec.stop_strings().begin(), spec.stop_strings().end());
    for (const std::string& stop : options.stop_strings) {
      if (stop.empty()) return absl::InvalidArgumentError("niah: an empty stop string");
      HG_RETURN_IF_ERROR(ValidateUtf8(stop, "niah.stop_strings"));
    }
  }
  options.ignore_eos = spec.ignore_eos();
  if (!spec.scorer().empty()) {
    HG_ASSIGN_OR_RETURN(options.scorer, niah::ParseNiahScorer(spec.scorer()));
  }
  options.rouge_use_stemmer = !spec.no_stemmer();
  if (spec.has_threshold()) {
    if (!std::isfinite(spec.threshold())) {
      return absl::InvalidArgumentError("niah.threshold must be a finite number");
    }
    options.metric_options.threshold = spec.threshold();
  }
  if (spec.has_depth_alpha()) options.metric_options.depth_alpha = spec.depth_alpha();
  if (spec.has_length_alpha()) options.metric_options.length_alpha = spec.length_alpha();
  // Written as !(x > 0) so that NaN is refused too.
  if (!(options.metric_options.depth_alpha > 0) || !(options.metric_options.length_alpha > 0) ||
      std::isinf(options.metric_options.depth_alpha) ||
      std::isinf(options.metric_options.length_alpha)) {
    return absl::InvalidArgumentError("niah: depth_alpha and length_alpha must be finite and > 0");
  }
  options.prefix_reuse = !spec.no_prefix_reuse();
  if (spec.max_batch() < 0 || spec.max_batch() > 256) {
    return absl::InvalidArgumentError("niah.max_batch must be in [0, 256] (0: the default)");
  }
  if (spec.max_batch() > 0) options.max_batch = spec.max_batch();
  if (spec.max_cells() < 0) return absl::InvalidArgumentError("niah.max_cells must be >= 0");
  options.max_cells = spec.max_cells();
  if (spec.has_training_length() && spec.training_length() < 0) {
    return absl::InvalidArgumentError("niah.training_length must be >= 0");
  }
  options.texts = niah::DefaultNiahTexts(options.mode);
  return options;
}

absl::Status ValidateNiahJob(const v1::NiahJobSpec& spec, const LoadedModel& model) {
  if (model.model == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", model.spec.name, "' is an LRA classifier; NIAH sweeps need a language model"));
  }
  absl::StatusOr<niah::NiahOptions> options = NiahOptionsFromSpec(spec);
  if (!options.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("niah: ", options.status().message()));
  }
  // Prompts are [BOS] + (L - buffer) haystack and needle tokens + suffix (fewer when the
  // haystack is shorter): check the longest against the model before queueing anything.
  const niah::NiahOptions& o = *options;
  absl::StatusOr<niah::NiahContextBuilder> builder =
      niah::NiahContextBuilder::Create(*model.tokenizer, {}, *o.texts, o.buffer_tokens);
  if (!builder.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("niah: ", builder.status().message()));
  }
  const int64_t needle = static_cast<int64_t>(builder->needle_tokens().size());
  if (o.grid.lengths.front() - o.buffer_tokens < needle) {
    return absl::InvalidArgumentError(absl::StrCat(
        "niah: context length ", o.grid.lengths.front(), " minus the ", o.buffer_tokens,
        "-token buffer leaves no room for the ", needle, "-token needle"));
  }
  const int64_t longest = builder->prefix_offset() + o.grid.lengths.back() - o.buffer_tokens +
                          static_cast<int64_t>(builder->suffix_tokens().size()) + o.max_new_tokens;
  if (longest > model.max_sequence_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("niah: context length ", o.grid.lengths.back(), " gives prompts of up to ",
                     longest - o.max_new_tokens, " tokens; with ", o.max_new_tokens,
                     " new tokens that exceeds the sequence limit of model '", model.spec.name,
                     "' (", model.max_sequence_tokens, " tokens)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NiahJobOutput> RunNiahJob(const v1::Job& job, JobContext& context) {
  LoadedModel& model = *context.model;
  ResultStore* store = context.executor->store();
  HG_ASSIGN_OR_RETURN(niah::NiahOptions options, NiahOptionsFromSpec(job.niah()));
  options.essays_dir =
      (std::filesystem::path(context.data_dir) / "niah" / "PaulGrahamEssays").string();
  options.model_name = job.model();
  options.model_hash = model.model_hash;
  options.training_length = job.niah().has_training_length()
                                ? job.niah().training_length()
                                : model.model->config().max_position_embeddings;
  HG_ASSIGN_OR_RETURN(const std::string essays_digest, EssaysDigest(options.essays_dir));

  // Cells of this sweep already in the store.
  const int64_t num_depths = static_cast<int64_t>(options.grid.depths.size());
  const int64_t num_cells = static_cast<int64_t>(options.grid.lengths.size()) * num_depths;
  const std::vector<int64_t> selected = niah::SelectNiahCells(num_cells, options.max_cells);
  std::vector<StoreKey> keys;
  keys.reserve(selected.size());
  for (int64_t index : selected) {
    keys.push_back(
        StoreKey{model.model_hash, model.tokenizer_hash, kNiahCellKind,
                 CellDigest(options, essays_digest, options.grid.lengths[index / num_depths],
                            options.grid.depths[index % num_depths])});
  }
  absl::flat_hash_map<int64_t, std::string> stored;
  if (store != nullptr) {
    HG_ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> found, store->GetMany(keys));
    for (size_t i = 0; i < selected.size(); ++i) {
      if (found[i].has_value()) {
        stored[selected[i]] = *std::move(found[i]);
        options.skip_cells.push_back(selected[i]);
      }
    }
  }
  absl::flat_hash_map<int64_t, size_t> key_of;
  for (size_t i = 0; i < selected.size(); ++i) key_of[selected[i]] = i;

  const int64_t cached = static_cast<int64_t>(stored.size());
  JobProgress progress;
  progress.current_task = "niah";
  progress.requests_total = static_cast<int64_t>(selected.size());
  progress.requests_done = cached;
  progress.requests_cached = cached;
  if (context.progress) context.progress(progress);

  // A cell that cannot be stored stops the sweep before its next batch (with that error):
  // computing on would produce cells a restart must compute again.
  absl::Status store_error;
  options.cancelled = [&] {
    return !store_error.ok() || (context.cancelled && context.cancelled());
  };
  absl::StatusOr<niah::NiahResult> swept = niah::RunNiahSweep(
      *model.model, *model.tokenizer, options,
      [&](int64_t done, int64_t) {
        progress.requests_done = cached + done;
        if (context.progress) context.progress(progress);
      },
      [&](int64_t index, const niah::NiahCellResult& cell) {
        if (store == nullptr || !store_error.ok()) return;
        store_error = store->PutMany({{keys[key_of.at(index)], EncodeStored(cell)}});
      });
  HG_RETURN_IF_ERROR(store_error);
  if (!swept.ok()) return swept.status();
  niah::NiahResult& result = *swept;
  for (auto& [index, text] : stored) {
    niah::NiahCellResult& cell = result.cells[index];
    HG_RETURN_IF_ERROR(DecodeStored(text, &cell));
    niah::ScoreNiahCell(result.options, *result.options.texts, cell);
  }
  HG_RETURN_IF_ERROR(niah::RecomputeNiahGrid(result));
  if (context.task_done) {
    context.task_done(MetricsResult(result, static_cast<int64_t>(selected.size())));
  }

  NiahJobOutput output;
  output.results_csv = niah::NiahResultToCsv(result);
  try {
    Json json = Json::parse(niah::NiahResultToJson(result));
    json["hgeval_job"] = {
        {"id", job.id()}, {"cells_cached", cached}, {"cells_computed", result.stats.cells_run}};
    output.results_json = json.dump(2, ' ', false, Json::error_handler_t::replace);
  } catch (const Json::exception& e) {
    return absl::InternalError(absl::StrCat("writing NIAH results: ", e.what()));
  }
  return output;
}

}  // namespace hgeval::server
