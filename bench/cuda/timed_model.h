// A Model wrapper that times Forward calls for the CUDA benchmarks: calls whose items all
// feed one token and ask for the next one are decode steps, the rest prefill/scoring.
// Forward returns with its outputs on the host, so wall time is the device time plus the
// launch and copy overheads of the call.
#ifndef HGEVAL_BENCH_CUDA_TIMED_MODEL_H_
#define HGEVAL_BENCH_CUDA_TIMED_MODEL_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "engine/model/forwarding_model.h"

namespace hgeval::bench {

class TimedModel : public ForwardingModel {
 public:
  struct Times {
    double prefill_seconds = 0, decode_seconds = 0;
    int64_t prefill_calls = 0, decode_steps = 0, prefill_tokens = 0, decode_rows = 0;
    double new_state_seconds = 0;  // NewState calls (allocation + zeroing)
    int64_t new_states = 0;
  };

  explicit TimedModel(Model* inner) : ForwardingModel(inner) {}
  std::unique_ptr<SequenceState> NewState() const override {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<SequenceState> state = inner().NewState();
    times_.new_state_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times_.new_states += 1;
    return state;
  }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    bool decode = true;
    int64_t tokens = 0;
    for (const ForwardItem& item : items) {
      // A 1-token haystack segment of PrefillWithSnapshots asks for no next token.
      decode =
          decode && item.tokens.size() == 1 && (item.want_last_logprobs || item.want_last_argmax);
      tokens += static_cast<int64_t>(item.tokens.size());
    }
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status status = inner().Forward(items, outputs);  // returns with host outputs
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (decode) {
      times_.decode_seconds += s;
      times_.decode_steps += 1;
      times_.decode_rows += tokens;
    } else {
      times_.prefill_seconds += s;
      times_.prefill_calls += 1;
      times_.prefill_tokens += tokens;
    }
    return status;
  }
  const Times& times() const { return times_; }
  void ResetTimes() { times_ = Times(); }

 private:
  mutable Times times_;
};

}  // namespace hgeval::bench

#endif  // HGEVAL_BENCH_CUDA_TIMED_MODEL_H_
