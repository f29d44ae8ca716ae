#include "engine/lm_eval/requests.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/runtime/stop_tokens.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/status_macros.h"

namespace hgeval::lm_eval {

int32_t PrefixToken(const Tokenizer& tokenizer) {
  return tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
}

int64_t MaxLength(int64_t requested, int64_t max_position_embeddings, int64_t max_context) {
  // HFLM's _DEFAULT_MAX_LENGTH.
  constexpr int64_t kDefaultMaxLength = 2048;
  if (requested > 0) return requested;
  if (max_position_embeddings > 0) return max_position_embeddings;
  if (max_context > 0) return max_context;
  return kDefaultMaxLength;
}

size_t TrailingPythonWhitespaceBytes(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    // The well-formed sequence that ends at `end`, if any. Python's rstrip() sees code
    // points, so a stray byte (a lone 0x85 or 0xA0, an overlong C0 A0) is not whitespace.
    size_t begin = end;
    for (size_t back = 1; back <= 4 && back <= end; ++back) {
      if (utf8::SequenceLength(s, end - back) == back) {
        begin = end - back;
        break;
      }
    }
    if (begin == end || !utf8::IsPythonWhitespace(utf8::DecodeAt(s, begin))) break;
    end = begin;
  }
  return s.size() - end;
}

absl::StatusOr<std::vector<int32_t>> EncodeLmEvalText(const Tokenizer& tokenizer,
                                                      std::string_view text, bool add_bos) {
  if (add_bos && tokenizer.bos_id() >= 0) {
    const std::string bos_text = tokenizer.IdToPiece(tokenizer.bos_id());
    if (!bos_text.empty() && text.substr(0, bos_text.size()) == bos_text) add_bos = false;
  }
  return tokenizer.Encode(text, add_bos);
}

absl::StatusOr<TokenPair> EncodeLmEvalPair(const Tokenizer& tokenizer, std::string_view context,
                                           std::string_view continuation, bool add_bos,
                                           int32_t prefix_token) {
  TokenPair out;
  if (prefix_token < 0 && TrailingPythonWhitespaceBytes(context) == context.size()) {
    return absl::InvalidArgumentError(
        "the context is empty (or whitespace) and the tokenizer has no BOS/EOS prefix token");
  }
  if (context.empty()) {
    HG_ASSIGN_OR_RETURN(out.continuation, tokenizer.Encode(continuation, false));
    if (!out.continuation.empty() && out.continuation[0] == prefix_token) {
      out.context = {out.continuation[0]};
      out.continuation.erase(out.continuation.begin());
    } else {
      out.context = {prefix_token};
    }
  } else {
    const size_t n_spaces = TrailingPythonWhitespaceBytes(context);
    std::string moved_continuation;
    if (n_spaces > 0) {
      moved_continuation = std::string(context.substr(context.size() - n_spaces));
      moved_continuation.append(continuation);
      continuation = moved_continuation;
      context = context.substr(0, context.size() - n_spaces);
    }
    std::string joined(context);
    joined.append(continuation);
    HG_ASSIGN_OR_RETURN(std::vector<int32_t> whole, EncodeLmEvalText(tokenizer, joined, add_bos));
    HG_ASSIGN_OR_RETURN(out.context, EncodeLmEvalText(tokenizer, context, add_bos));
    const size_t n = std::min(out.context.size(), whole.size());
    out.continuation.assign(whole.begin() + static_cast<std::ptrdiff_t>(n), whole.end());
    // A whitespace-only context encodes to nothing without special tokens; lm-eval would
    // assert. Condition on the prefix token instead.
    if (out.context.empty()) out.context = {prefix_token};
  }
  if (out.continuation.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the continuation encodes to no tokens (context \"", std::string(context.substr(0, 80)),
        "\", continuation \"", std::string(continuation.substr(0, 80)), "\")"));
  }
  return out;
}

void TruncateLmEvalPair(int64_t max_length, TokenPair* pair) {
  const int64_t total = static_cast<int64_t>(pair->context.size() + pair->continuation.size());
  const int64_t drop =
      std::min<int64_t>(total - (max_length + 1), static_cast<int64_t>(pair->context.size()));
  if (drop > 0) pair->context.erase(pair->context.begin(), pair->context.begin() + drop);
}

absl::Status TruncateGenerationContext(int64_t max_length, int64_t max_gen_toks,
                                       std::vector<int32_t>* context) {
  const int64_t keep = max_length - max_gen_toks;
  if (keep <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_gen_toks (", max_gen_toks, ") must be less than max_length (", max_length,
                     "): no room is left for the context (lm-eval asserts this)"));
  }
  if (static_cast<int64_t>(context->size()) > keep) {
    context->erase(context->begin(), context->end() - keep);
  }
  return absl::OkStatus();
}

absl::StatusOr<GenerateRequest> MakeLmEvalGenerateRequest(const Tokenizer& tokenizer,
                                                          std::string_view context,
                                                          absl::Span<const std::string> until,
                                                          int64_t max_gen_toks, bool add_bos,
                                                          int64_t max_length, int32_t prefix_token,
                                                          int32_t model_eos) {
  GenerateRequest request;
  HG_ASSIGN_OR_RETURN(request.prompt, EncodeLmEvalText(tokenizer, context, add_bos));
  if (max_gen_toks > 0) {
    HG_RETURN_IF_ERROR(TruncateGenerationContext(max_length, max_gen_toks, &request.prompt));
  }
  if (request.prompt.empty()) request.prompt = {prefix_token};
  request.max_new_tokens = static_cast<int>(std::max<int64_t>(0, max_gen_toks));
  std::vector<std::string> stops(until.begin(), until.end());
  request.stop_tokens = GenerationStopTokens(tokenizer, model_eos);
  if (const int32_t eos = tokenizer.eos_id(); eos >= 0) {
    HG_ASSIGN_OR_RETURN(std::string eos_text,
                        tokenizer.Decode(std::vector<int32_t>{eos}, /*skip_special=*/false));
    if (!eos_text.empty()) stops.push_back(std::move(eos_text));
  }
  request.stop_strings = std::move(stops);
  return request;
}

absl::StatusOr<std::string> LmEvalContinuationText(const Tokenizer& tokenizer,
                                                   absl::Span<const int32_t> generated,
                                                   absl::Span<const std::string> until) {
  HG_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(generated));
  return CutAtStopStrings(std::move(text), until);
}

std::vector<TokenPair> MakeRollingWindows(absl::Span<const int32_t> tokens, int32_t prefix_token,
                                          int64_t max_length) {
  std::vector<TokenPair> windows;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0 || max_length <= 0) return windows;
  const int64_t first = std::min(max_length, n);
  TokenPair w0;
  w0.context = {prefix_token};
  w0.continuation.assign(tokens.begin(), tokens.begin() + first);
  windows.push_back(std::move(w0));
  int64_t predicted = first;
  while (predicted < n) {
    const int64_t length = std::min(n - predicted, max_length);
    const int64_t end = predicted + length;
    // lm-eval: input = T[end - L - 1 : end - 1]; context = its first L - length + 1 tokens.
    const int64_t context_start = std::max<int64_t>(0, end - max_length - 1);
    TokenPair w;
    w.context.assign(tokens.begin() + context_start, tokens.begin() + predicted);
    w.continuation.assign(tokens.begin() + predicted, tokens.begin() + end);
    windows.push_back(std::move(w));
    predicted = end;
  }
  return windows;
}

}  // namespace hgeval::lm_eval
