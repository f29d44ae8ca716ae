#include "client/niah_spec.h"

#include <string>

#include "tasks/niah/context.h"

namespace hgeval::client {
namespace v1 = ::hgeval::v1;

v1::NiahJobSpec NiahSpecFromOptions(const niah::NiahOptions& options,
                                    std::optional<int64_t> training_length) {
  v1::NiahJobSpec spec;
  spec.set_mode(std::string(niah::NiahModeName(options.mode)));
  for (int64_t length : options.grid.lengths) spec.add_lengths(length);
  for (double depth : options.grid.depths) spec.add_depths(depth);
  spec.set_buffer_tokens(options.buffer_tokens);
  spec.set_max_new_tokens(options.max_new_tokens);
  if (options.stop_strings.empty()) spec.set_no_stop_strings(true);
  for (const std::string& stop : options.stop_strings) spec.add_stop_strings(stop);
  spec.set_ignore_eos(options.ignore_eos);
  spec.set_scorer(std::string(niah::NiahScorerName(options.scorer)));
  spec.set_no_stemmer(!options.rouge_use_stemmer);
  spec.set_threshold(options.metric_options.threshold);
  spec.set_depth_alpha(options.metric_options.depth_alpha);
  spec.set_length_alpha(options.metric_options.length_alpha);
  spec.set_no_prefix_reuse(!options.prefix_reuse);
  spec.set_max_batch(options.max_batch);
  spec.set_max_cells(options.max_cells);
  if (training_length.has_value()) spec.set_training_length(*training_length);
  return spec;
}

}  // namespace hgeval::client
