// The flags of generation, declared once for every program that generates: hgeval-engine
// generate, hgeval generate, and the NIAH sweeps (hgeval niah, hgeval-niah).
//   stopping (stop_flags.cc): --max_tokens, --until, --ignore_eos
//   sampling (sampling_flags.cc): --temperature, --top_p, --seed
// Two objects of one library, so that a program that only stops (NIAH decodes greedily)
// has no sampling flags. Where the commands' defaults differ (hgeval generate writes 64
// tokens, a NIAH cell 32, and stops at a newline), the flag's default is "unset" and the
// command passes its own.
#ifndef HGEVAL_ENGINE_CLI_GENERATION_FLAGS_H_
#define HGEVAL_ENGINE_CLI_GENERATION_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::cli {

// --max_tokens, or `command_default` when it is not given; InvalidArgument when < 0.
absl::StatusOr<int> MaxTokensFromFlags(int command_default);
// --until's stop strings, or `command_default` when it is not given (`--until=` is none).
std::vector<std::string> UntilFromFlags(const std::vector<std::string>& command_default);
bool IgnoreEosFromFlags();

struct Sampling {
  double temperature = 0;  // 0: greedy
  double top_p = 1;
  uint64_t seed = 0;
};
Sampling SamplingFromFlags();

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_GENERATION_FLAGS_H_
