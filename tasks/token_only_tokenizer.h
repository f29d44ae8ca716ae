// A stand-in tokenizer for runs that only take token-level tasks (mqar): checkpoints
// trained on synthetic token ids ship no tokenizer. Every text operation fails with
// FailedPrecondition saying so, which is what a text task hitting it should see.
#ifndef HGEVAL_TASKS_TOKEN_ONLY_TOKENIZER_H_
#define HGEVAL_TASKS_TOKEN_ONLY_TOKENIZER_H_

#include <cstdint>
#include <memory>

#include "engine/tokenizer/tokenizer.h"

namespace hgeval::tasks {

// `vocab_size`: the model's.
std::unique_ptr<Tokenizer> MakeTokenOnlyTokenizer(int32_t vocab_size);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_TOKEN_ONLY_TOKENIZER_H_
