// The flags of a Needle-in-a-Haystack sweep, declared once for the two programs that run
// one: `hgeval niah` (a server job) and `hgeval-niah` (in process). Each option has one
// name and one sense; decoding uses the generation flags every generating command shares
// (engine/cli/generation_flags.h: --max_tokens, --until, --ignore_eos).
//
// A library of its own (hgeval_niah_flags), outside the tasks archive, so that only the
// programs that link it have these flags.
#ifndef HGEVAL_TASKS_NIAH_NIAH_FLAGS_H_
#define HGEVAL_TASKS_NIAH_NIAH_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tasks/niah/sweep.h"

namespace hgeval::niah {

// The sweep the flags ask for: mode, grid (--preset, replaced by --lengths/--depths),
// decoding, scoring and execution options. The haystack folder, model name and training
// length are the caller's. InvalidArgument for a bad mode, preset, list or scorer.
absl::StatusOr<NiahOptions> NiahOptionsFromFlags();

// --training_length: unset (-1) means the model's max_position_embeddings.
std::optional<int64_t> TrainingLengthFromFlags();

// --output_dir: where niah_results.json, niah_grid.csv and niah_heatmap.png go.
std::string OutputDirFromFlags();

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_NIAH_FLAGS_H_
