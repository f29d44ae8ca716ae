// lm-evaluation-harness's request rules, written once: how a (context, continuation) text
// pair becomes tokens (`_encode_pair`), how text is encoded under each BOS regime, the
// prefix token, the default max_length, left truncation to it, and rolling windows. They
// live below every program (engine/lm_eval) so that the in-process evaluator
// (EngineLanguageModel), the server's RPCs and jobs, and `hgeval-engine score` all call
// these, and the same pair gives the same tokens on every route.
#ifndef HGEVAL_ENGINE_LM_EVAL_REQUESTS_H_
#define HGEVAL_ENGINE_LM_EVAL_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval::lm_eval {

// A scoring request as tokens: the model is fed context ++ continuation[:-1] and scores
// the continuation.
struct TokenPair {
  std::vector<int32_t> context;
  std::vector<int32_t> continuation;
};

// lm-eval's prefix token (HFLM.prefix_token_id): the tokenizer's BOS, else its EOS; -1
// when it has neither.
int32_t PrefixToken(const Tokenizer& tokenizer);

// lm-eval's max_length (HFLM.max_length): `requested` if > 0, else the config's
// max_position_embeddings if > 0, else the model's own context limit if > 0, else 2048.
int64_t MaxLength(int64_t requested, int64_t max_position_embeddings, int64_t max_context);

// Bytes of trailing whitespace as Python's str.rstrip() removes it (Unicode White_Space
// and the ASCII separators 0x1C-0x1F), counted in UTF-8 bytes.
size_t TrailingPythonWhitespaceBytes(std::string_view text);

// lm-eval's tok_encode: the tokenizer's special tokens when `add_bos` (lm-eval >= 0.4.9.2),
// except that text already starting with the BOS token's text gets no second BOS
// (has_bos_prefix).
absl::StatusOr<std::vector<int32_t>> EncodeLmEvalText(const Tokenizer& tokenizer,
                                                      std::string_view text, bool add_bos);

// lm-eval's _encode_pair, untruncated:
// - an empty context becomes [prefix_token] and the continuation is encoded alone without
//   special tokens (a leading prefix token the tokenizer added anyway moves to the context);
// - otherwise the context's trailing whitespace moves to the front of the continuation,
//   context + continuation is encoded as a whole and the continuation is what follows the
//   context's own encoding; a context that encodes to nothing (whitespace only) becomes
//   [prefix_token].
// INVALID_ARGUMENT when the continuation encodes to no tokens.
absl::StatusOr<TokenPair> EncodeLmEvalPair(const Tokenizer& tokenizer, std::string_view context,
                                           std::string_view continuation, bool add_bos,
                                           int32_t prefix_token);

// lm-eval's left truncation: keeps the last max_length + 1 tokens of context ++
// continuation, cutting only the context (the caller has checked the continuation fits).
void TruncateLmEvalPair(int64_t max_length, TokenPair* pair);

// lm-eval's generate_until context: the last max_length - max_gen_toks tokens (an empty
// result becomes the caller's prefix token). INVALID_ARGUMENT when max_gen_toks leaves no
// room, as lm-eval asserts max_ctx_len > 0.
absl::Status TruncateGenerationContext(int64_t max_length, int64_t max_gen_toks,
                                       std::vector<int32_t>* context);

// lm-eval's generate_until request (HFLM.generate_until) for the engine's decoder, the
// one rule of the evaluator, jobs and the Generate RPC's lm-eval mode: the context
// encoded as tok_encode and, when max_gen_toks > 0, cut to its last max_length -
// max_gen_toks tokens (an empty prompt becomes [prefix_token]); greedy; generation stops
// at the generation stop tokens (engine/runtime/stop_tokens.h, with the model config's
// EOS `model_eos` when known), and the EOS token's text joins `until` (HFLM appends
// tok_decode(eot_token_id) to the stop sequences). max_gen_toks <= 0 generates nothing.
absl::StatusOr<GenerateRequest> MakeLmEvalGenerateRequest(const Tokenizer& tokenizer,
                                                          std::string_view context,
                                                          absl::Span<const std::string> until,
                                                          int64_t max_gen_toks, bool add_bos,
                                                          int64_t max_length, int32_t prefix_token,
                                                          int32_t model_eos = -1);

// lm-eval's text of a generate_until continuation (HFLM.generate_until: tok_decode of the
// generated ids alone, so a SentencePiece continuation loses its leading space, then cut
// before the first of `until`). The one place this rule lives: the evaluator, jobs and the
// Generate RPC's lm-eval mode use it; the service's own text is the exact continuation
// (prompt + completion decoded, minus the prompt).
absl::StatusOr<std::string> LmEvalContinuationText(const Tokenizer& tokenizer,
                                                   absl::Span<const int32_t> generated,
                                                   absl::Span<const std::string> until);

// lm-eval get_rolling_token_windows + make_disjoint_window with context_len 1: the first
// window is [prefix_token] then up to max_length tokens; each later window predicts the
// next up to max_length tokens after up to max_length + 1 - predicted tokens of context;
// together they predict every token once.
std::vector<TokenPair> MakeRollingWindows(absl::Span<const int32_t> tokens, int32_t prefix_token,
                                          int64_t max_length);

}  // namespace hgeval::lm_eval

#endif  // HGEVAL_ENGINE_LM_EVAL_REQUESTS_H_
