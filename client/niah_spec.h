// A NIAH sweep's options as the job spec that asks the server for it: the one mapping
// from niah::NiahOptions to the wire (server::NiahOptionsFromSpec is its inverse).
#ifndef HGEVAL_CLIENT_NIAH_SPEC_H_
#define HGEVAL_CLIENT_NIAH_SPEC_H_

#include <cstdint>
#include <optional>

#include "hgeval/v1/jobs.pb.h"
#include "tasks/niah/sweep.h"

namespace hgeval::client {

// The grid goes as explicit lists; ignore_eos as it is; the stemmer and prefix reuse in
// the spec's negative sense (no_stemmer, no_prefix_reuse), since proto3 booleans default
// to false. `training_length` unset: the model's max_position_embeddings.
hgeval::v1::NiahJobSpec NiahSpecFromOptions(const niah::NiahOptions& options,
                                            std::optional<int64_t> training_length);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_NIAH_SPEC_H_
