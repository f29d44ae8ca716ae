#include "server/core/wire_results.h"

#include <string>

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

v1::LoglikelihoodResult ToWire(const PairScore& score) {
  v1::LoglikelihoodResult out;
  out.set_logprob(score.score.logprob);
  out.set_is_greedy(score.score.is_greedy);
  out.set_context_tokens(score.context_tokens);
  out.set_continuation_tokens(score.continuation_tokens);
  out.mutable_token_logprobs()->Add(score.score.token_logprobs.begin(),
                                    score.score.token_logprobs.end());
  for (const std::vector<TokenLogprob>& alternatives : score.score.top_k) {
    v1::TopTokens* row = out.add_top_k();
    for (const TokenLogprob& a : alternatives) {
      row->add_ids(a.token);
      row->add_logprobs(a.logprob);
    }
  }
  out.set_cached(score.cached);
  return out;
}

v1::ClassifyResult ToWire(const Classification& classification) {
  v1::ClassifyResult out;
  out.mutable_logits()->Add(classification.logits.begin(), classification.logits.end());
  out.set_predicted(classification.predicted);
  out.set_cached(classification.cached);
  return out;
}

v1::GenerateResponse ToWire(const Generation& generation) {
  v1::GenerateResponse out;
  out.set_text(generation.text);
  out.mutable_token_ids()->Add(generation.token_ids.begin(), generation.token_ids.end());
  out.set_finished(true);
  if (generation.finish_reason.has_value()) {
    out.set_finish_reason(ToWire(*generation.finish_reason));
  }
  out.set_prompt_tokens(generation.prompt_tokens);
  out.set_generated_tokens(static_cast<int32_t>(generation.token_ids.size()));
  out.set_cached(generation.cached);
  return out;
}

v1::FinishReason ToWire(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kStopToken:
      return v1::FINISH_REASON_STOP_TOKEN;
    case FinishReason::kStopString:
      return v1::FINISH_REASON_STOP_STRING;
    case FinishReason::kCancelled:
      return v1::FINISH_REASON_UNSPECIFIED;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

PairScore FromWire(const v1::LoglikelihoodResult& wire) {
  PairScore out;
  out.score.logprob = wire.logprob();
  out.score.is_greedy = wire.is_greedy();
  out.score.token_logprobs.assign(wire.token_logprobs().begin(), wire.token_logprobs().end());
  out.score.top_k.resize(wire.top_k_size());
  for (int t = 0; t < wire.top_k_size(); ++t) {
    const v1::TopTokens& row = wire.top_k(t);
    for (int a = 0; a < row.ids_size() && a < row.logprobs_size(); ++a) {
      out.score.top_k[t].push_back(TokenLogprob{row.ids(a), row.logprobs(a)});
    }
  }
  out.context_tokens = wire.context_tokens();
  out.continuation_tokens = wire.continuation_tokens();
  out.cached = wire.cached();
  return out;
}

Classification FromWire(const v1::ClassifyResult& wire) {
  Classification out;
  out.logits.assign(wire.logits().begin(), wire.logits().end());
  out.predicted = wire.predicted();
  out.cached = wire.cached();
  return out;
}

Generation FromWire(const v1::GenerateResponse& wire) {
  Generation out;
  out.text = wire.text();
  out.token_ids.assign(wire.token_ids().begin(), wire.token_ids().end());
  out.finish_reason = FromWire(wire.finish_reason());
  out.prompt_tokens = wire.prompt_tokens();
  out.cached = wire.cached();
  return out;
}

std::optional<FinishReason> FromWire(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH:
      return FinishReason::kLength;
    case v1::FINISH_REASON_STOP_TOKEN:
      return FinishReason::kStopToken;
    case v1::FINISH_REASON_STOP_STRING:
      return FinishReason::kStopString;
    default:
      return std::nullopt;
  }
}

}  // namespace hgeval::server
