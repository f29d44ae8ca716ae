// The NIAH sweep: builds every (length, depth) prompt, runs the model (greedy), scores
// each cell without a judge and computes the paper's grid metrics.
//
// Prefix reuse (default): every cell's prompt starts with [BOS] + haystack[0:ip], and all
// context lengths cut the same haystack, so the sweep feeds the haystack ONCE, in order of
// insertion point, taking a state snapshot (recurrent state or KV prefix) at every distinct
// insertion point (PrefillWithSnapshots), and each cell continues from its snapshot with
// needle + haystack[ip:n] + suffix, then decodes. The naive path feeds every prompt whole;
// both produce the same tokens (the model's results do not depend on how a sequence is
// split into Forward calls).
#ifndef HGEVAL_TASKS_NIAH_SWEEP_H_
#define HGEVAL_TASKS_NIAH_SWEEP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/tokenizer.h"
#include "metrics/niah_metrics.h"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"

namespace hgeval::niah {

enum class NiahScorer { kRouge1, kKeyPhrase };
absl::StatusOr<NiahScorer> ParseNiahScorer(std::string_view name);  // "rouge1", "keyphrase"
std::string_view NiahScorerName(NiahScorer scorer);

struct NiahOptions {
  NiahMode mode = NiahMode::kEasy;
  NiahGrid grid;                   // e.g. *NiahGridPreset("quick")
  std::optional<NiahTexts> texts;  // unset: DefaultNiahTexts(mode)
  std::string essays_dir;          // the haystack, e.g. <repo>/data/niah/PaulGrahamEssays
  int64_t buffer_tokens = 200;     // Kamradt's final_context_length_buffer
  // Decoding: greedy. 32 new tokens hold the 12-word answer with room to spare; the
  // answer completes a sentence, so the first newline ends it.
  int max_new_tokens = 32;
  std::vector<std::string> stop_strings = {"\n"};
  bool ignore_eos = false;  // true: EOS does not end a cell's answer
  // Scoring: the cell score in [0, 10] is the chosen scorer's; both are recorded.
  NiahScorer scorer = NiahScorer::kRouge1;
  bool rouge_use_stemmer = true;              // as the LLM-free ROUGE NIAH scorer does
  metrics::NiahMetricOptions metric_options;  // threshold (default 5), alphas, report lengths
  // Execution.
  bool prefix_reuse = true;
  // Cells decoded together (and snapshots held at once); 0: DefaultNiahMaxBatch(model).
  int max_batch = 0;
  int64_t max_cells = 0;  // > 0: run only this many cells, evenly spread over the grid
  // Length-major cell indices not to run (a resumed job's finished cells: the caller puts
  // their saved results into NiahResult::cells and calls RecomputeNiahGrid).
  std::vector<int64_t> skip_cells;
  // Polled before every batch of cells, haystack segment and decode step; true stops the
  // sweep with CANCELLED (so a cancel waits for one Forward call, not a whole batch).
  std::function<bool()> cancelled;
  // Labels for the outputs.
  std::string model_name;
  std::string model_hash;       // the checkpoint's content hash (Checkpoint::ContentHash)
  int64_t training_length = 0;  // 0: unknown
};

struct NiahCellResult {
  NiahCellLayout layout;
  int64_t prompt_tokens = 0;
  bool ran = false;  // false for cells skipped by max_cells
  std::string generated;
  std::vector<int32_t> generated_tokens;
  FinishReason finish_reason = FinishReason::kLength;
  double rouge1_score = 0.0;      // 10 x ROUGE-1 F
  double key_phrase_score = 0.0;  // 10 x fraction of key phrases present
  double score = 0.0;             // the chosen scorer's
  bool success = false;           // score >= threshold
};

struct NiahSweepStats {
  int64_t cells_total = 0;
  int64_t cells_run = 0;
  int64_t haystack_tokens = 0;       // tokens of the encoded haystack
  int64_t prefill_tokens_fed = 0;    // prompt tokens fed to the model
  int64_t decode_tokens_fed = 0;     // generated tokens fed back
  int64_t naive_prefill_tokens = 0;  // sum of the prompts of the cells run
  int64_t snapshots = 0;             // snapshots taken (prefix reuse)
  int64_t batches = 0;               // batches run (max_batch and the memory budget)
  double wall_seconds = 0.0;         // model time (prefill + decode)
};

struct NiahResult {
  NiahOptions options;  // as run (texts filled in)
  std::string tokenizer_kind;
  std::string tokenizer_hash;         // Tokenizer::ContentHash()
  std::vector<NiahCellResult> cells;  // length-major: cells[l * depths + d]
  metrics::NiahGridScores grid;       // scores[l][d]; NaN for cells not run
  metrics::NiahMetrics metrics;
  NiahSweepStats stats;
};

// Called after each batch of cells.
using NiahProgress = std::function<void(int64_t cells_done, int64_t cells_total)>;
// Called for every finished cell (length-major index), e.g. to persist it for resuming.
using NiahCellCallback = std::function<void(int64_t index, const NiahCellResult& cell)>;

absl::StatusOr<NiahResult> RunNiahSweep(Model& model, const Tokenizer& tokenizer,
                                        const NiahOptions& options,
                                        const NiahProgress& progress = {},
                                        const NiahCellCallback& on_cell = {});

// Fills the cell's scores and success from cell.generated (what the sweep does for every
// cell it runs; a resumed job calls it for the cells it restores).
void ScoreNiahCell(const NiahOptions& options, const NiahTexts& texts, NiahCellResult& cell);

// Rebuilds result.grid (NaN for cells not run) and result.metrics from result.cells.
absl::Status RecomputeNiahGrid(NiahResult& result);

// Bytes of the model's memory a batch of cells may hold in states: most of what its
// budget can give (unbounded when the model has no bounded budget).
size_t NiahStateBound(const Model& model);

// Cells per batch when NiahOptions::max_batch is 0: 32 on CUDA, the decode step's padded
// row count (its weights are read once a step for any number of rows: the paper grid of
// HGRN2-1.3B on an H200 takes 50.8 s at 32 against 57.6 s at 8; a LLaMA's steps also read
// each row's KV cache, so fewer steps save only the weights' share, docs/cuda.md entry 21;
// its KV-cache snapshots, which grow with the context, are bounded by the budget's bytes,
// NiahStateBound), else 8 (the CPU gains nothing from wider batches).
int DefaultNiahMaxBatch(const ModelInfo& info);

// The cells a sweep runs (length-major indices): all, or max_cells spread evenly.
std::vector<int64_t> SelectNiahCells(int64_t total, int64_t max_cells);

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_SWEEP_H_
