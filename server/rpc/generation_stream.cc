#include "server/rpc/generation_stream.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/lm_eval/requests.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/continuation_text.h"
#include "server/core/log.h"
#include "server/core/wire_results.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;
namespace {

// Length of the longest suffix of `text` that is a proper prefix of a stop string: text
// that may still turn out to be part of a stop string is held back.
size_t HeldBack(std::string_view text, const std::vector<std::string>& until) {
  size_t held = 0;
  for (const std::string& stop : until) {
    for (size_t k = std::min(stop.size() - 1, text.size()); k > held; --k) {
      if (text.substr(text.size() - k) == std::string_view(stop).substr(0, k)) {
        held = k;
        break;
      }
    }
  }
  return held;
}

}  // namespace

absl::StatusOr<StreamedGeneration> StreamGeneration(
    GenerateWork& work, const GenerationPlan& plan, const Tokenizer& tokenizer,
    grpc::ServerContext* context, const CallControl& control,
    const std::atomic<bool>& server_stopping, const std::string& model_name,
    grpc::ServerWriter<v1::GenerateResponse>* writer) {
  const std::vector<int32_t>& prompt = plan.request.prompt;
  const std::vector<std::string>& until = plan.until;
  absl::StatusOr<StreamingDecoder> after = DecoderAfter(
      tokenizer, plan.lm_eval ? absl::Span<const int32_t>() : absl::MakeConstSpan(prompt));
  if (!after.ok()) return after.status();
  StreamingDecoder decoder = *std::move(after);
  std::string text;     // decoded so far
  size_t emitted = 0;   // bytes of `text` sent
  size_t consumed = 0;  // tokens decoded
  size_t sent_ids = 0;  // tokens sent as ids
  std::vector<int32_t> all_tokens;
  for (;;) {
    std::vector<int32_t> fresh;
    bool done = false;
    {
      absl::MutexLock lock(&work.mu);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work.mu) {
        return work.done || work.tokens.size() > consumed;
      };
      work.mu.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(10));
      fresh.assign(work.tokens.begin() + static_cast<std::ptrdiff_t>(consumed), work.tokens.end());
      done = work.done;
    }
    if (server_stopping) {
      work.cancelled = true;
      return absl::UnavailableError("the server is shutting down and its grace period ran out");
    }
    if (context->IsCancelled()) {
      work.cancelled = true;
      LogInfo("generate_cancelled", {{"model", model_name}, {"tokens", absl::StrCat(consumed)}});
      return absl::CancelledError("generation cancelled by the client");
    }
    if (absl::Now() > control.deadline) {
      work.cancelled = true;
      return absl::DeadlineExceededError("deadline exceeded during generation");
    }
    consumed += fresh.size();
    for (int32_t id : fresh) {
      all_tokens.push_back(id);
      absl::StatusOr<std::string> piece = decoder.Push(id);
      if (piece.ok()) text += *piece;
    }
    if (done) break;
    if (fresh.empty()) continue;
    // Text that may still become part of a stop string is held back; its ids go out.
    const size_t safe = text.size() - std::min(text.size(), HeldBack(text, until));
    v1::GenerateResponse chunk;
    if (safe > emitted) {
      chunk.set_text(text.substr(emitted, safe - emitted));
      emitted = safe;
    }
    for (; sent_ids < all_tokens.size(); ++sent_ids) chunk.add_token_ids(all_tokens[sent_ids]);
    if (!writer->Write(chunk)) {
      work.cancelled = true;
      return absl::CancelledError("the client went away");
    }
  }
  GenerateResult result;
  {
    absl::MutexLock lock(&work.mu);
    if (!work.status.ok()) return work.status;
    result = work.result;
  }
  if (absl::StatusOr<std::string> rest = decoder.Finish(); rest.ok()) text += *rest;
  std::string final_text = CutAtStopStrings(text, until);
  if (plan.lm_eval) {
    absl::StatusOr<std::string> lm_eval_text =
        lm_eval::LmEvalContinuationText(tokenizer, all_tokens, until);
    if (!lm_eval_text.ok()) return lm_eval_text.status();
    final_text = *std::move(lm_eval_text);
  }
  StreamedGeneration streamed;
  v1::GenerateResponse& last = streamed.last;
  if (final_text.size() > emitted) last.set_text(final_text.substr(emitted));
  for (; sent_ids < all_tokens.size(); ++sent_ids) last.add_token_ids(all_tokens[sent_ids]);
  last.set_finished(true);
  last.set_finish_reason(ToWire(result.finish_reason));
  last.set_prompt_tokens(static_cast<int32_t>(prompt.size()));
  last.set_generated_tokens(static_cast<int32_t>(all_tokens.size()));
  streamed.whole.text = std::move(final_text);
  streamed.whole.token_ids = std::move(all_tokens);
  streamed.whole.finish_reason = result.finish_reason;
  streamed.whole.prompt_tokens = static_cast<int32_t>(prompt.size());
  return streamed;
}

}  // namespace hgeval::server
