#include "tasks/niah/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/runtime/scoring.h"
#include "engine/runtime/stop_tokens.h"
#include "engine/util/memory_budget.h"
#include "engine/util/status_macros.h"
#include "metrics/niah_scoring.h"
#include "tasks/niah/haystack.h"

namespace hgeval::niah {
namespace {

// Tokens per Model::Forward call when a batch's prompts are prefilled, at least: the
// model's own batch_tokens where it is larger (CUDA's 16,384: a call of 4,096 tokens left
// the GPU's GEMMs a quarter as many rows as scoring gives them). Cancellation is checked
// between calls; results do not depend on how prompts are grouped into calls.
constexpr int64_t kPrefillPackTokens = 4096;

}  // namespace

void ScoreNiahCell(const NiahOptions& options, const NiahTexts& texts, NiahCellResult& cell) {
  cell.rouge1_score =
      metrics::NiahRouge1Score(texts.expected_answer, cell.generated, options.rouge_use_stemmer);
  cell.key_phrase_score = metrics::NiahKeyPhraseScore(texts.key_phrases, cell.generated);
  cell.score = options.scorer == NiahScorer::kRouge1 ? cell.rouge1_score : cell.key_phrase_score;
  cell.success = cell.score >= options.metric_options.threshold;
}

absl::StatusOr<NiahScorer> ParseNiahScorer(std::string_view name) {
  if (name == "rouge1") return NiahScorer::kRouge1;
  if (name == "keyphrase") return NiahScorer::kKeyPhrase;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown NIAH scorer '", std::string(name), "' (rouge1, keyphrase)"));
}

std::string_view NiahScorerName(NiahScorer scorer) {
  return scorer == NiahScorer::kRouge1 ? "rouge1" : "keyphrase";
}

size_t NiahStateBound(const Model& model) {
  const MemoryBudget* budget = model.memory_budget();
  if (budget == nullptr || budget->limit() == 0) return std::numeric_limits<size_t>::max();
  return budget->obtainable() / 10 * 9;
}

int DefaultNiahMaxBatch(const ModelInfo& info) {
  return info.backend.rfind("cuda", 0) == 0 ? 32 : 8;
}

std::vector<int64_t> SelectNiahCells(int64_t total, int64_t max_cells) {
  std::vector<int64_t> cells;
  if (max_cells <= 0 || max_cells >= total) {
    cells.resize(total);
    std::iota(cells.begin(), cells.end(), 0);
    return cells;
  }
  for (int64_t i = 0; i < max_cells; ++i) {
    // Evenly spaced over the length-major order, first and last cell included.
    const int64_t index =
        max_cells == 1 ? 0
                       : static_cast<int64_t>(
                             std::llround(static_cast<double>(i) * (total - 1) / (max_cells - 1)));
    if (cells.empty() || cells.back() != index) cells.push_back(index);
  }
  return cells;
}

absl::Status RecomputeNiahGrid(NiahResult& result) {
  const NiahGrid& grid = result.options.grid;
  const size_t num_lengths = grid.lengths.size();
  const size_t num_depths = grid.depths.size();
  if (result.cells.size() != num_lengths * num_depths) {
    return absl::InvalidArgumentError("NIAH result: cell count does not match the grid");
  }
  result.grid.lengths = grid.lengths;
  result.grid.depths = grid.depths;
  result.grid.scores.assign(num_lengths, std::vector<double>(num_depths));
  for (size_t l = 0; l < num_lengths; ++l) {
    for (size_t d = 0; d < num_depths; ++d) {
      const NiahCellResult& cell = result.cells[l * num_depths + d];
      result.grid.scores[l][d] = cell.ran ? cell.score : std::numeric_limits<double>::quiet_NaN();
    }
  }
  HG_ASSIGN_OR_RETURN(result.metrics,
                      metrics::ComputeNiahMetrics(result.grid, result.options.metric_options));
  return absl::OkStatus();
}

absl::StatusOr<NiahResult> RunNiahSweep(Model& model, const Tokenizer& tokenizer,
                                        const NiahOptions& options, const NiahProgress& progress,
                                        const NiahCellCallback& on_cell) {
  HG_RETURN_IF_ERROR(ValidateNiahGrid(options.grid));
  if (options.max_batch < 0) {
    return absl::InvalidArgumentError("NIAH max_batch must be >= 0 (0: the default)");
  }
  if (options.max_new_tokens < 1) {
    return absl::InvalidArgumentError("NIAH max_new_tokens must be >= 1");
  }
  NiahResult result;
  result.options = options;
  if (result.options.max_batch == 0) result.options.max_batch = DefaultNiahMaxBatch(model.info());
  const size_t max_batch = static_cast<size_t>(result.options.max_batch);
  if (!result.options.texts.has_value()) result.options.texts = DefaultNiahTexts(options.mode);
  const NiahTexts& texts = *result.options.texts;
  result.tokenizer_kind = std::string(tokenizer.kind());
  result.tokenizer_hash = tokenizer.ContentHash();

  // Haystack and layouts.
  HG_ASSIGN_OR_RETURN(std::vector<Essay> essays, ReadHaystackEssays(options.essays_dir));
  HG_ASSIGN_OR_RETURN(std::vector<int32_t> haystack,
                      BuildHaystackTokens(tokenizer, essays, options.grid.lengths.back()));
  HG_ASSIGN_OR_RETURN(
      NiahContextBuilder builder,
      NiahContextBuilder::Create(tokenizer, haystack, texts, options.buffer_tokens));
  result.stats.haystack_tokens = static_cast<int64_t>(haystack.size());
  const int64_t num_lengths = static_cast<int64_t>(options.grid.lengths.size());
  const int64_t num_depths = static_cast<int64_t>(options.grid.depths.size());
  result.cells.resize(num_lengths * num_depths);
  for (int64_t l = 0; l < num_lengths; ++l) {
    for (int64_t d = 0; d < num_depths; ++d) {
      NiahCellResult& cell = result.cells[l * num_depths + d];
      HG_ASSIGN_OR_RETURN(cell.layout,
                          builder.Layout(options.grid.lengths[l], options.grid.depths[d]));
      cell.prompt_tokens =
          builder.prefix_offset() + cell.layout.context_tokens +
          static_cast<int64_t>(builder.needle_tokens().size() + builder.suffix_tokens().size());
    }
  }

  // Fail before running anything when a prompt plus its answer cannot fit the model.
  const int64_t max_context = model.info().max_context;
  if (max_context > 0) {
    for (const NiahCellResult& cell : result.cells) {
      if (cell.prompt_tokens + options.max_new_tokens > max_context) {
        return absl::InvalidArgumentError(absl::StrCat(
            "NIAH length ", cell.layout.length, ": a ", cell.prompt_tokens, "-token prompt plus ",
            options.max_new_tokens, " new tokens exceeds the model's maximum context of ",
            max_context, " tokens"));
      }
    }
  }

  // Cells to run, ordered by insertion point so one pass over the haystack serves all.
  std::vector<int64_t> order = SelectNiahCells(num_lengths * num_depths, options.max_cells);
  if (!options.skip_cells.empty()) {
    const absl::flat_hash_set<int64_t> skip(options.skip_cells.begin(), options.skip_cells.end());
    order.erase(
        std::remove_if(order.begin(), order.end(), [&](int64_t i) { return skip.contains(i); }),
        order.end());
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return result.cells[a].layout.insertion_point < result.cells[b].layout.insertion_point;
  });
  result.stats.cells_total = num_lengths * num_depths;
  for (int64_t index : order) {
    result.stats.naive_prefill_tokens += result.cells[index].prompt_tokens;
  }

  GenerateRequest request_template;
  request_template.max_new_tokens = options.max_new_tokens;
  request_template.stop_strings = options.stop_strings;
  if (!options.ignore_eos) {
    request_template.stop_tokens = GenerationStopTokens(tokenizer, model.info().eos_token_id);
  }

  const auto started = std::chrono::steady_clock::now();
  const std::vector<int32_t>& prefix_source = builder.bos_and_haystack();
  std::unique_ptr<SequenceState> state;  // prefix reuse: the haystack fed so far
  int64_t state_position = 0;
  // A batch takes up to max_batch cells while their states fit the model's memory: each
  // distinct insertion point's snapshot and each cell's generation (prompt, answer and
  // the decoder's headroom), beside the haystack state carried between batches. The
  // haystack is fed in the same segments (between consecutive insertion points) however
  // the cells are batched, and decoding is batch-invariant, so the size of the budget
  // changes the speed, not the cells' answers.
  const size_t bound = NiahStateBound(model);
  auto batch_end = [&](size_t begin) {
    // The haystack state carried in, the one advanced to the batch's deepest insertion
    // point, one snapshot per distinct insertion point and every cell's generation.
    const size_t carried = state == nullptr ? 0 : model.StateBytes(state_position);
    size_t snapshots_and_generations = 0;
    size_t end = begin;
    int64_t last_position = -1;
    while (end < order.size() && end - begin < max_batch) {
      const NiahCellResult& cell = result.cells[order[end]];
      const int64_t p = builder.prefix_offset() + cell.layout.insertion_point;
      size_t add = model.StateBytes(cell.prompt_tokens + options.max_new_tokens);
      if (options.prefix_reuse && p != last_position) add += model.StateBytes(p);
      const size_t advancing = options.prefix_reuse ? model.StateBytes(p) : 0;
      if (end > begin && carried + advancing + snapshots_and_generations + add > bound) break;
      snapshots_and_generations += add;
      last_position = p;
      ++end;
    }
    return end;
  };
  for (size_t begin = 0, end = 0; begin < order.size(); begin = end) {
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError("the NIAH sweep was cancelled");
    }
    end = batch_end(begin);
    ++result.stats.batches;
    std::vector<GenerateRequest> requests;
    std::vector<std::unique_ptr<SequenceState>> snapshots;
    if (options.prefix_reuse) {
      // Distinct prefix lengths of this batch, ascending (order is sorted by ip).
      std::vector<int64_t> positions;
      for (size_t i = begin; i < end; ++i) {
        const int64_t p = builder.prefix_offset() + result.cells[order[i]].layout.insertion_point;
        if (positions.empty() || positions.back() != p) positions.push_back(p);
      }
      std::vector<int64_t> relative;
      relative.reserve(positions.size());
      for (int64_t p : positions) relative.push_back(p - state_position);
      const absl::Span<const int32_t> tokens =
          absl::MakeConstSpan(prefix_source)
              .subspan(state_position, positions.back() - state_position);
      HG_ASSIGN_OR_RETURN(
          snapshots, PrefillWithSnapshots(model, tokens, relative, state.get(), options.cancelled));
      state.reset();  // the batch continues from its snapshots
      result.stats.prefill_tokens_fed += static_cast<int64_t>(tokens.size());
      result.stats.snapshots += static_cast<int64_t>(snapshots.size());
      for (size_t i = begin; i < end; ++i) {
        const NiahCellResult& cell = result.cells[order[i]];
        const int64_t p = builder.prefix_offset() + cell.layout.insertion_point;
        const size_t s =
            std::lower_bound(positions.begin(), positions.end(), p) - positions.begin();
        GenerateRequest request = request_template;
        request.start = snapshots[s].get();
        request.prompt = builder.RestTokens(cell.layout);
        result.stats.prefill_tokens_fed += static_cast<int64_t>(request.prompt.size());
        requests.push_back(std::move(request));
      }
    } else {
      for (size_t i = begin; i < end; ++i) {
        GenerateRequest request = request_template;
        request.prompt = builder.PromptTokens(result.cells[order[i]].layout);
        result.stats.prefill_tokens_fed += static_cast<int64_t>(request.prompt.size());
        requests.push_back(std::move(request));
      }
    }
    // Cancellation (a job's CancelJob, the server's shutdown) is checked between haystack
    // segments and decode steps, not only between batches: a batch can run for minutes.
    // The first step prefills every prompt of the batch: in packs of kPrefillPackTokens,
    // so that it too is checked between calls (the results do not depend on the packing).
    GenerateOptions generate;
    generate.cancelled = options.cancelled;
    generate.decode.max_batch_tokens = std::max(kPrefillPackTokens, model.info().batch_tokens);
    HG_ASSIGN_OR_RETURN(std::vector<GenerateResult> generated,
                        Generate(model, &tokenizer, requests, generate));
    for (size_t i = begin; i < end; ++i) {
      NiahCellResult& cell = result.cells[order[i]];
      GenerateResult& g = generated[i - begin];
      // Tokens fed back while decoding: what the decoder fed beyond the prompt.
      result.stats.decode_tokens_fed +=
          g.tokens_fed - static_cast<int64_t>(requests[i - begin].prompt.size());
      cell.ran = true;
      cell.generated = std::move(g.text);
      cell.generated_tokens = std::move(g.tokens);
      cell.finish_reason = g.finish_reason;
      ScoreNiahCell(options, texts, cell);
      if (on_cell) on_cell(order[i], cell);
    }
    if (options.prefix_reuse) {
      // Continue the haystack from the deepest snapshot of this batch.
      state_position =
          builder.prefix_offset() + result.cells[order[end - 1]].layout.insertion_point;
      state = std::move(snapshots.back());
    }
    result.stats.cells_run += static_cast<int64_t>(end - begin);
    if (progress) progress(result.stats.cells_run, static_cast<int64_t>(order.size()));
  }
  result.stats.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  HG_RETURN_IF_ERROR(RecomputeNiahGrid(result));
  return result;
}

}  // namespace hgeval::niah
