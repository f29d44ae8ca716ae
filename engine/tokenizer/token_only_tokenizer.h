// A stand-in tokenizer for runs that only take token-level tasks (mqar): checkpoints
// trained on synthetic token ids ship no tokenizer. Every text operation fails with
// FailedPrecondition saying so, which is what a text task hitting it should see. Used by
// hgeval-eval and by the server for a model whose tokenizer is "none".
#ifndef HGEVAL_ENGINE_TOKENIZER_TOKEN_ONLY_TOKENIZER_H_
#define HGEVAL_ENGINE_TOKENIZER_TOKEN_ONLY_TOKENIZER_H_

#include <cstdint>
#include <memory>

#include "engine/tokenizer/tokenizer.h"

namespace hgeval {

// `vocab_size`: the model's.
std::unique_ptr<Tokenizer> MakeTokenOnlyTokenizer(int32_t vocab_size);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_TOKEN_ONLY_TOKENIZER_H_
