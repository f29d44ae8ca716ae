// The exact text of a continuation, as the service returns it (gRPC Generate, the HTTP
// completions' `text`): what the completion's ids add when decoded after the prompt's,
// i.e. prompt + completion decoded minus the prompt's text, so that rules that look at the
// previous token (SentencePiece's leading space, byte-fallback runs) apply as in the whole
// text. It agrees with DetokenizeResponse.token_texts and so with `text_offset`. lm-eval's
// task route keeps its own rule (lm_eval::LmEvalContinuationText).
#ifndef HGEVAL_ENGINE_TOKENIZER_CONTINUATION_TEXT_H_
#define HGEVAL_ENGINE_TOKENIZER_CONTINUATION_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval {

// A decoder that has consumed `prompt` (its text is dropped): Push the completion's ids
// to stream the continuation's text.
absl::StatusOr<StreamingDecoder> DecoderAfter(const Tokenizer& tokenizer,
                                              absl::Span<const int32_t> prompt);

// The whole continuation's text at once.
absl::StatusOr<std::string> ContinuationText(const Tokenizer& tokenizer,
                                             absl::Span<const int32_t> prompt,
                                             absl::Span<const int32_t> completion);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_CONTINUATION_TEXT_H_
