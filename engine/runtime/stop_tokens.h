// The one stop rule of every generation route: hgeval-engine generate, the server's gRPC
// and HTTP generations, the tasks' generate_until and the NIAH sweep.
#ifndef HGEVAL_ENGINE_RUNTIME_STOP_TOKENS_H_
#define HGEVAL_ENGINE_RUNTIME_STOP_TOKENS_H_

#include <cstdint>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace hgeval {

// The ids after which a generation ends (FinishReason::kStopToken, the id not kept): the
// tokenizer's EOS, the model config's EOS (`model_eos`, -1 when none or unknown) and, for
// a llama2.c tokenizer, BOS (llama2.c's models end a sample there: BOS separates their
// training stories, and its run.c stops at it). Stop strings end a generation too
// (GenerateRequest::stop_strings, FinishReason::kStopString).
std::vector<int32_t> GenerationStopTokens(const Tokenizer& tokenizer, int32_t model_eos = -1);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_STOP_TOKENS_H_
