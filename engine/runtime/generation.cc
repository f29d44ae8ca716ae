#include "engine/runtime/generation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "engine/runtime/packed_forward.h"
#include "engine/util/memory_budget.h"
#include "engine/util/status_macros.h"

namespace hgeval {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::Sample(absl::Span<const float> logprobs) {
  const int32_t n = static_cast<int32_t>(logprobs.size());
  if (params_.temperature <= 0.0f) {
    return static_cast<int32_t>(std::max_element(logprobs.begin(), logprobs.end()) -
                                logprobs.begin());  // first maximum: lowest id on ties
  }
  // Softmax of logprobs / T (log-probs and logits differ by a constant per row).
  const float max_lp = *std::max_element(logprobs.begin(), logprobs.end());
  std::vector<double> probs(n);
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    probs[i] = std::exp((static_cast<double>(logprobs[i]) - max_lp) / params_.temperature);
    total += probs[i];
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int32_t kept = n;
  if (params_.top_p < 1.0f) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
    double mass = 0.0;
    for (int32_t j = 0; j < n; ++j) {
      mass += probs[order[j]] / total;
      if (mass >= params_.top_p) {
        kept = j + 1;
        break;
      }
    }
  }
  double kept_total = 0.0;
  for (int32_t j = 0; j < kept; ++j) kept_total += probs[order[j]];
  // 53 random bits -> uniform in [0, 1): identical on every platform for a seed.
  const double u = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0) * kept_total;
  double acc = 0.0;
  for (int32_t j = 0; j < kept; ++j) {
    acc += probs[order[j]];
    if (u < acc) return order[j];
  }
  return order[kept - 1];
}

struct DecodeBatch::Live {
  std::unique_ptr<SequenceState> state;  // null until the sequence starts
  std::vector<int32_t> feed;             // tokens to feed at the next step
  Sampler sampler;
  GenerateRequest request;
  GenerateResult result;
  bool finished = false;
  absl::Status status;  // why a sequence that could not start failed

  Live(const GenerateRequest& r) : sampler(r.sampling), request(r) {}
};

namespace {

// What a sequence's state takes: room for its start, prompt and every new token is
// reserved when it starts (Start).
size_t FinalStateBytes(const Model& model, const GenerateRequest& request) {
  const int64_t start = request.start == nullptr ? 0 : request.start->position();
  return model.StateBytes(start + static_cast<int64_t>(request.prompt.size()) +
                          request.max_new_tokens);
}

}  // namespace

bool DecodeBatch::Fits(const Live& newcomer) const {
  const MemoryBudget* budget = model_->memory_budget();
  if (budget == nullptr || budget->limit() == 0) return true;
  // What the running sequences hold now could be given back; what they may take by their
  // end, with the newcomer's, must fit in a tenth less than that.
  size_t held = 0, final_bytes = FinalStateBytes(*model_, newcomer.request);
  for (const auto& [id, live] : live_) {
    if (live->state == nullptr || live->finished) continue;
    held += model_->StateBytes(live->state->position());
    final_bytes += FinalStateBytes(*model_, live->request);
  }
  return final_bytes <= (budget->obtainable() + held) / 10 * 9;
}

absl::Status DecodeBatch::TooLarge(const Live& live) const {
  const MemoryBudget* budget = model_->memory_budget();
  return absl::ResourceExhaustedError(
      absl::StrCat("a generation of ", live.request.prompt.size(), " prompt tokens and up to ",
                   live.request.max_new_tokens, " new ones needs ",
                   FormatBytes(FinalStateBytes(*model_, live.request)), " of ", budget->what(),
                   " for its state but the budget of ", FormatBytes(budget->limit()), " can give ",
                   FormatBytes(budget->obtainable() / 10 * 9),
                   " (a larger --device_memory / --host_memory, "
                   "a shorter prompt or fewer new tokens fits)"));
}

size_t DecodeBatch::running() const {
  size_t n = 0;
  for (const auto& [id, live] : live_) n += live->state != nullptr && !live->finished ? 1 : 0;
  return n;
}

absl::Status DecodeBatch::Start(Live& live) {
  // Room for the whole generation at once: the state never moves while it decodes.
  HG_ASSIGN_OR_RETURN(live.state, StartStateFor(*model_, live.request.start,
                                                static_cast<int64_t>(live.request.prompt.size()) +
                                                    live.request.max_new_tokens));
  return absl::OkStatus();
}

void DecodeBatch::AdmitPending() {
  while (!pending_.empty()) {
    auto it = live_.find(pending_.front());
    if (it == live_.end() || it->second->finished) {  // cancelled while waiting
      pending_.pop_front();
      continue;
    }
    Live& live = *it->second;
    const bool alone = running() == 0;
    absl::Status started;
    if (!Fits(live)) {
      if (!alone) return;  // waits for room
      started = TooLarge(live);
    } else {
      started = Start(live);
      if (!started.ok() && !alone && absl::IsResourceExhausted(started)) return;
    }
    if (!started.ok()) {
      // Even alone it does not fit: the sequence fails, the others go on.
      live.state = nullptr;
      live.finished = true;
      live.status = started;
    }
    pending_.pop_front();
  }
}

DecodeBatch::DecodeBatch(Model* model, const Tokenizer* tokenizer, DecodeOptions options)
    : model_(model), tokenizer_(tokenizer), options_(options) {}

DecodeBatch::~DecodeBatch() = default;

absl::StatusOr<int64_t> DecodeBatch::Add(const GenerateRequest& request) {
  if (request.prompt.empty()) {
    return absl::InvalidArgumentError("generate: the prompt must hold at least one token");
  }
  if (request.max_new_tokens < 0) {
    return absl::InvalidArgumentError("generate: max_new_tokens must be >= 0");
  }
  if (!request.stop_strings.empty() && tokenizer_ == nullptr) {
    return absl::InvalidArgumentError("generate: stop strings need a tokenizer");
  }
  if (request.sampling.temperature < 0.0f || !(request.sampling.top_p > 0.0f) ||
      request.sampling.top_p > 1.0f) {
    return absl::InvalidArgumentError("generate: temperature must be >= 0 and top_p in (0, 1]");
  }
  auto live = std::make_unique<Live>(request);
  live->feed = request.prompt;
  live->finished = request.max_new_tokens == 0;
  // A sequence starts now when nothing waits before it and its state fits the memory
  // budget beside the running ones (alone, it starts or fails now); otherwise it waits
  // for running sequences to finish. Results do not depend on when it starts.
  if (!live->finished && pending_.empty()) {
    const bool alone = running() == 0;
    if (Fits(*live)) {
      if (absl::Status s = Start(*live); !s.ok()) {
        if (alone || !absl::IsResourceExhausted(s)) return s;
        live->state = nullptr;
      }
    } else if (alone) {
      return TooLarge(*live);
    }
  }
  const int64_t id = next_id_++;
  if (!live->finished && live->state == nullptr) pending_.push_back(id);
  live_[id] = std::move(live);
  return id;
}

void DecodeBatch::Cancel(int64_t id) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second->finished) return;
  it->second->finished = true;
  it->second->result.finish_reason = FinishReason::kCancelled;
  it->second->state.reset();
}

absl::StatusOr<std::vector<int64_t>> DecodeBatch::Step() {
  AdmitPending();
  std::vector<int64_t> ids;
  for (const auto& [id, live] : live_) {
    if (!live->finished && live->state != nullptr) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (ids.empty()) return ids;
  std::vector<ForwardItem> items(ids.size());
  for (size_t j = 0; j < ids.size(); ++j) {
    Live& live = *live_[ids[j]];
    items[j].tokens = live.feed;
    items[j].state = live.state.get();
    // Greedy needs only the argmax, computed inside the model (on the GPU: no
    // vocabulary-sized row copied out per sequence and step).
    const bool greedy = live.request.sampling.temperature <= 0.0f;
    items[j].want_last_argmax = greedy;
    items[j].want_last_logprobs = !greedy;
  }
  std::vector<ForwardOutput> outputs(items.size());
  HG_RETURN_IF_ERROR(ForwardInPacks(*model_, items, absl::MakeSpan(outputs),
                                    options_.max_batch_tokens, options_.cancelled));
  for (size_t j = 0; j < ids.size(); ++j) {
    Live& live = *live_[ids[j]];
    live.result.tokens_fed += static_cast<int64_t>(live.feed.size());
    const int32_t token = items[j].want_last_argmax ? outputs[j].last_argmax
                                                    : live.sampler.Sample(outputs[j].last_logprobs);
    const auto& stops = live.request.stop_tokens;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      live.finished = true;
      live.result.finish_reason = FinishReason::kStopToken;
    } else {
      live.result.tokens.push_back(token);
      live.feed.assign(1, token);
      if (!live.request.stop_strings.empty()) {
        HG_ASSIGN_OR_RETURN(std::string text, tokenizer_->Decode(live.result.tokens));
        if (FirstStopString(text, live.request.stop_strings) != std::string::npos) {
          live.finished = true;
          live.result.finish_reason = FinishReason::kStopString;
        }
      }
      if (!live.finished &&
          static_cast<int>(live.result.tokens.size()) >= live.request.max_new_tokens) {
        live.finished = true;
        live.result.finish_reason = FinishReason::kLength;
      }
    }
    if (live.finished && tokenizer_ != nullptr) {
      HG_ASSIGN_OR_RETURN(std::string text, tokenizer_->Decode(live.result.tokens));
      live.result.text = CutAtStopStrings(std::move(text), live.request.stop_strings);
    }
    // A finished sequence gives its state back at once: waiting ones may start.
    if (live.finished) live.state.reset();
  }
  return ids;
}

const GenerateResult& DecodeBatch::result(int64_t id) const { return live_.at(id)->result; }

absl::Status DecodeBatch::status(int64_t id) const {
  auto it = live_.find(id);
  return it == live_.end() ? absl::OkStatus() : it->second->status;
}

bool DecodeBatch::finished(int64_t id) const {
  auto it = live_.find(id);
  return it == live_.end() || it->second->finished;
}

GenerateResult DecodeBatch::Take(int64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return {};
  GenerateResult result = std::move(it->second->result);
  if (tokenizer_ != nullptr && result.finish_reason == FinishReason::kCancelled) {
    auto text = tokenizer_->Decode(result.tokens);
    if (text.ok()) result.text = *std::move(text);
  }
  live_.erase(it);
  return result;
}

size_t FirstStopString(std::string_view text, absl::Span<const std::string> stops) {
  size_t first = std::string::npos;
  for (const std::string& stop : stops) {
    if (!stop.empty()) first = std::min(first, text.find(stop));
  }
  return first;
}

std::string CutAtStopStrings(std::string text, absl::Span<const std::string> stops) {
  const size_t at = FirstStopString(text, stops);
  if (at != std::string::npos) text.resize(at);
  return text;
}

absl::StatusOr<std::vector<GenerateResult>> Generate(Model& model, const Tokenizer* tokenizer,
                                                     absl::Span<const GenerateRequest> requests,
                                                     const GenerateOptions& options) {
  DecodeOptions decode = options.decode;
  if (!decode.cancelled) decode.cancelled = options.cancelled;
  DecodeBatch batch(&model, tokenizer, decode);
  std::vector<int64_t> ids;
  ids.reserve(requests.size());
  for (const GenerateRequest& request : requests) {
    HG_ASSIGN_OR_RETURN(int64_t id, batch.Add(request));
    ids.push_back(id);
  }
  const int64_t total = static_cast<int64_t>(ids.size());
  for (;;) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    HG_ASSIGN_OR_RETURN(std::vector<int64_t> stepped, batch.Step());
    for (int64_t id : ids) HG_RETURN_IF_ERROR(batch.status(id));
    if (stepped.empty() && batch.waiting() == 0) break;
    if (options.progress) {
      int64_t finished = 0;
      for (int64_t id : ids) finished += batch.finished(id) ? 1 : 0;
      options.progress(finished, total);
    }
  }
  std::vector<GenerateResult> results;
  results.reserve(ids.size());
  for (int64_t id : ids) results.push_back(batch.Take(id));
  return results;
}

}  // namespace hgeval
