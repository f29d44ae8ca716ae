#include "server/core/request_prep.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/sha256.h"

namespace hgeval::server {
namespace {

void AppendIds(std::string& out, absl::Span<const int32_t> ids) {
  absl::StrAppend(&out, ids.size(), ":", absl::StrJoin(ids, ","), ";");
}

}  // namespace

absl::Status ValidateUtf8(std::string_view text, const std::string& what) {
  const size_t bad = utf8::FirstInvalidOffset(text);
  if (bad == std::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not valid UTF-8 (invalid byte sequence at offset ", bad, ")"));
}

absl::Status CheckRequestSize(const google::protobuf::MessageLite& request, int64_t max_bytes) {
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  if (bytes <= max_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the call carries ", bytes,
      " bytes of text and other fields (stop strings, names, ids); this server accepts at most ",
      max_bytes, " per call (--max_request_bytes); split it"));
}

absl::Status CheckBosMode(int mode) {
  if (hgeval::v1::BosMode_IsValid(mode)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "bos_mode ", mode, " is not a BosMode (0: unset = tokenizer, 1: tokenizer, 2: none)"));
}

absl::Status TooManyTokens(int64_t tokens, int64_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the call has at least ", tokens,
                   " tokens (counted before truncation); this server accepts at most ", limit,
                   " per call (--max_request_tokens); split it"));
}

absl::Status ValidateIds(absl::Span<const int32_t> ids, int64_t vocab_size,
                         const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "[", i, "] = ", ids[i], " is outside the vocabulary (size ", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

PairInput ToPairInput(const hgeval::v1::LoglikelihoodPair& pair) {
  return PairInput{
      pair.context(), pair.continuation(),
      absl::MakeConstSpan(pair.context_ids().data(), pair.context_ids_size()),
      absl::MakeConstSpan(pair.continuation_ids().data(), pair.continuation_ids_size())};
}

absl::StatusOr<TokenPair> PreparePair(const PairInput& pair, int index, const Tokenizer& tokenizer,
                                      bool add_special, const PairLimits& limits,
                                      int64_t* encoded_tokens) {
  const std::string where = absl::StrCat("pairs[", index, "]");
  const bool has_text = !pair.context.empty() || !pair.continuation.empty();
  const bool has_ids = !pair.context_ids.empty() || !pair.continuation_ids.empty();
  if (has_text && has_ids) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     " gives both text (context/continuation) and token ids "
                     "(context_ids/continuation_ids); use one form"));
  }
  TokenPair out;
  if (has_ids) {
    if (pair.continuation_ids.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has an empty continuation"));
    }
    if (absl::Status s =
            ValidateIds(pair.context_ids, limits.vocab_size, absl::StrCat(where, ".context_ids"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateIds(pair.continuation_ids, limits.vocab_size,
                                     absl::StrCat(where, ".continuation_ids"));
        !s.ok()) {
      return s;
    }
    out.context.assign(pair.context_ids.begin(), pair.context_ids.end());
    out.continuation.assign(pair.continuation_ids.begin(), pair.continuation_ids.end());
  } else {
    if (pair.continuation.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has an empty continuation"));
    }
    if (absl::Status s = ValidateUtf8(pair.context, absl::StrCat(where, ".context")); !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateUtf8(pair.continuation, absl::StrCat(where, ".continuation"));
        !s.ok()) {
      return s;
    }
    absl::StatusOr<TokenPair> encoded = lm_eval::EncodeLmEvalPair(
        tokenizer, pair.context, pair.continuation, add_special, lm_eval::PrefixToken(tokenizer));
    if (!encoded.ok()) {
      return absl::Status(encoded.status().code(),
                          absl::StrCat(where, ": ", encoded.status().message()));
    }
    out = *std::move(encoded);
  }
  if (out.context.empty()) {  // ids given without a context
    const int32_t prefix = lm_eval::PrefixToken(tokenizer);
    if (prefix < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has an empty context and the tokenizer has no BOS/EOS prefix token"));
    }
    out.context.push_back(prefix);
  }
  const int64_t total = static_cast<int64_t>(out.context.size() + out.continuation.size());
  if (encoded_tokens != nullptr) *encoded_tokens = total;
  if (total - 1 > limits.max_length) {
    const int64_t cont = static_cast<int64_t>(out.continuation.size());
    if (!limits.truncate || cont > limits.max_length) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, " feeds ", total - 1, " tokens (context ", out.context.size(),
                       " + continuation ", cont, " - 1); model '", limits.model_name,
                       "' accepts at most ", limits.max_length, " tokens per sequence",
                       limits.truncate ? " and the continuation alone is longer"
                                       : " (set truncate to cut the context from the left)"));
    }
    lm_eval::TruncateLmEvalPair(limits.max_length, &out);
  }
  return out;
}

std::string ScoreDigest(const TokenPair& pair, int top_k) {
  std::string canonical = absl::StrCat("score/v1;top_k=", top_k, ";ctx=");
  AppendIds(canonical, pair.context);
  canonical.append("cont=");
  AppendIds(canonical, pair.continuation);
  return Sha256Hex(canonical);
}

std::string GenerateDigest(absl::Span<const int32_t> prompt, int max_tokens,
                           const std::vector<std::string>& until, float temperature, float top_p,
                           uint64_t seed, bool ignore_eos, bool lm_eval_text) {
  // v2: the one stop rule (engine/runtime/stop_tokens) and the text rule in the key; v1
  // rows were generated under other stop tokens and hold either text.
  std::string canonical =
      absl::StrCat("generate/v2;max_tokens=", max_tokens, ";temperature=", temperature,
                   ";top_p=", top_p, ";seed=", seed, ";ignore_eos=", ignore_eos,
                   ";text=", lm_eval_text ? "lm_eval" : "exact", ";prompt=");
  AppendIds(canonical, prompt);
  canonical.append("until=");
  for (const std::string& u : until) absl::StrAppend(&canonical, u.size(), ":", u, ";");
  // temperature 0 is greedy: seed and top_p do not matter.
  return Sha256Hex(canonical);
}

}  // namespace hgeval::server
