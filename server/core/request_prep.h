// Turns wire requests into validated token sequences (lm-eval request semantics) and
// canonical result-store keys. Every rejection is a Status with the code the wire
// contract names and a message that says which pair/field and why.
#ifndef HGEVAL_SERVER_CORE_REQUEST_PREP_H_
#define HGEVAL_SERVER_CORE_REQUEST_PREP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/lm_eval/requests.h"
#include "engine/tokenizer/tokenizer.h"
#include "hgeval/v1/models.pb.h"

namespace hgeval::server {

// A pair as the model sees it: fed tokens are context ++ continuation[:-1].
using TokenPair = lm_eval::TokenPair;

// What a pair is checked against.
struct PairLimits {
  int64_t vocab_size = 0;
  // Most tokens fed (context + continuation - 1).
  int64_t max_length = 0;
  bool truncate = false;
  std::string model_name;  // for messages
};

// INVALID_ARGUMENT naming `what` and the byte offset when `text` is not UTF-8.
absl::Status ValidateUtf8(std::string_view text, const std::string& what);
// RESOURCE_EXHAUSTED when `request` (the whole message: texts, stop strings, names, ids,
// every repeated field) is larger than `max_bytes` (--max_request_bytes).
absl::Status CheckRequestSize(const google::protobuf::MessageLite& request, int64_t max_bytes);
// INVALID_ARGUMENT when `mode` is not a BosMode: an enum field carries any int32 on the
// wire, and a value outside BosMode must be refused, not read as "tokenizer".
absl::Status CheckBosMode(int mode);
// RESOURCE_EXHAUSTED: a call of `tokens` tokens (counted before truncation) over the
// per-call `limit` (--max_request_tokens).
absl::Status TooManyTokens(int64_t tokens, int64_t limit);
// INVALID_ARGUMENT when an id is outside [0, vocab_size).
absl::Status ValidateIds(absl::Span<const int32_t> ids, int64_t vocab_size,
                         const std::string& what);

// A pair as a client gives it: text or token ids, not both (views into the caller's data).
struct PairInput {
  std::string_view context;
  std::string_view continuation;
  absl::Span<const int32_t> context_ids;
  absl::Span<const int32_t> continuation_ids;
};

// A wire pair as a PairInput (views into `pair`).
PairInput ToPairInput(const hgeval::v1::LoglikelihoodPair& pair);

// lm-eval's pair tokenization for text (lm_eval::EncodeLmEvalPair, the evaluator's own rule)
// or the ids as given, then the length check / truncation. Messages name `pairs[index]`.
// `encoded_tokens` (optional) receives context + continuation tokens before truncation,
// also when the pair is then refused for its length.
absl::StatusOr<TokenPair> PreparePair(const PairInput& pair, int index, const Tokenizer& tokenizer,
                                      bool add_special, const PairLimits& limits,
                                      int64_t* encoded_tokens = nullptr);

// SHA-256 of the canonical form of a scoring request (token ids and top_k): the store key.
std::string ScoreDigest(const TokenPair& pair, int top_k);

// SHA-256 of the canonical form of a generation request. `lm_eval_text`: the stored text
// follows lm-eval's rule (the completion decoded alone) rather than the exact continuation.
std::string GenerateDigest(absl::Span<const int32_t> prompt, int max_tokens,
                           const std::vector<std::string>& until, float temperature, float top_p,
                           uint64_t seed, bool ignore_eos, bool lm_eval_text);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_REQUEST_PREP_H_
