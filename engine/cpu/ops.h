// CPU building blocks shared by every model family (fp32). Matrix products are
// row-invariant (row_invariant_linear.h): a row's result never depends on how many rows
// share the call, so a fork equals scratch bitwise and batches cannot leak into results.
#ifndef HGEVAL_ENGINE_CPU_OPS_H_
#define HGEVAL_ENGINE_CPU_OPS_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/forward_validation.h"
#include "engine/model/model.h"

namespace hgeval::cpu {

// y[M,N] = x[M,K] · W[N,K]ᵀ (nn.Linear layout), overwriting y.
void Linear(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y);
// Same, adding into y (y += x·Wᵀ).
void LinearAccumulate(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y);

// out[r] = x[r] * rsqrt(mean(x[r]²) + eps) * weight, for each of `rows` rows of width n.
// `weight` may be null (no affine). out may alias x.
void RmsNorm(const float* x, int64_t rows, int64_t n, const float* weight, float eps, float* out);

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
// log(sigmoid(x)) without overflow.
inline float LogSigmoid(float x) {
  return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
}
inline float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// rows [m, n] += bias [n]; nothing when the bias is absent (empty).
inline void AddBias(float* rows, int64_t m, int64_t n, const HostTensor& bias) {
  if (bias.data.empty()) return;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < n; ++i) rows[r * n + i] += bias.data[i];
  }
}

// GatedMLP / SwiGLU: out[M,D] = down(silu(gate(x)) * up(x)).
void GatedMlp(const float* x, int64_t m, const HostTensor& gate, const HostTensor& up,
              const HostTensor& down, float* out);

// The LM head for the scored positions of one item: `hidden` holds the final-norm output
// for every fed position ([T, D]); logits are computed only at positions with
// targets[t] >= 0 (and the last position when item.want_last_logprobs; every position
// when item.want_all_logits), in row blocks, and turned into log-probabilities
// (log-sum-exp accumulated in double). Sizes and fills `out`.
void ScoreHead(const float* hidden, int64_t d, const HostTensor& lm_head, const ForwardItem& item,
               ForwardOutput* out);

// Runs fn(i) for i in [0, n) on the process's worker pool (engine/util/worker_pool.h;
// blocking), using at most the calling thread's limit of threads (ScopedCpuThreads;
// default all cores). Loops of different models run at the same time.
void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

// While alive, ParallelFor calls made on this thread use at most `threads` threads (the
// caller's included); 0 = no limit. Results never depend on the thread count.
class ScopedCpuThreads {
 public:
  explicit ScopedCpuThreads(int threads);
  ~ScopedCpuThreads();
  ScopedCpuThreads(const ScopedCpuThreads&) = delete;
  ScopedCpuThreads& operator=(const ScopedCpuThreads&) = delete;

 private:
  int previous_;
};

// The state each item advances: its `state`, or a private copy of its `start` (or a new
// state of `model`, for a fresh start) held in `copies` (dropped by the caller after the
// call).
absl::StatusOr<std::vector<SequenceState*>> ResolveStates(
    const Model& model, absl::Span<const ForwardItem> items,
    std::vector<std::unique_ptr<SequenceState>>* copies);

// ValidateForwardItems (engine/model/forward_validation.h; max_context > 0 bounds the
// positions), then each item's state (ResolveStates) as the model's own state type:
// INVALID_ARGUMENT when one was made by another model. What every CPU family's Forward
// checks before it changes anything.
template <typename StateT>
absl::StatusOr<std::vector<StateT*>> OwnStates(const Model* owner,
                                               absl::Span<const ForwardItem> items,
                                               absl::Span<ForwardOutput> outputs, int64_t vocab,
                                               std::vector<std::unique_ptr<SequenceState>>* copies,
                                               int64_t max_context = 0) {
  if (absl::Status s = ValidateForwardItems(items, outputs.size(), vocab, max_context); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<SequenceState*>> resolved = ResolveStates(*owner, items, copies);
  if (!resolved.ok()) return resolved.status();
  std::vector<StateT*> states(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto* state = dynamic_cast<StateT*>((*resolved)[i]);
    if (state == nullptr || state->owner() != static_cast<const void*>(owner)) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", i, ": the sequence state was not created by this model"));
    }
    states[i] = state;
  }
  return states;
}

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_OPS_H_
