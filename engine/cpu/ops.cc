#include "engine/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/top_k.h"
#include "engine/util/status_macros.h"
#include "engine/util/worker_pool.h"

namespace hgeval::cpu {
namespace {

// The calling thread's ParallelFor thread limit (ScopedCpuThreads); 0 = all.
thread_local int tls_thread_limit = 0;

}  // namespace

void Linear(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y) {
  RowInvariantLinear(x, m, k, weight, y);
}

void LinearAccumulate(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y) {
  const int64_t n = weight.shape.empty() ? 0 : weight.shape[0];
  std::vector<float> product(static_cast<size_t>(m * n));
  RowInvariantLinear(x, m, k, weight, product.data());
  for (size_t i = 0; i < product.size(); ++i) y[i] += product[i];
}

void RmsNorm(const float* x, int64_t rows, int64_t n, const float* weight, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = out + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i]) * xr[i];
    const float rstd = static_cast<float>(1.0 / std::sqrt(sum / n + eps));
    if (weight != nullptr) {
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * rstd * weight[i];
    } else {
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * rstd;
    }
  }
}

void GatedMlp(const float* x, int64_t m, const HostTensor& gate, const HostTensor& up,
              const HostTensor& down, float* out) {
  RowInvariantGatedMlp(x, m, gate, up, down, out);
}

void ScoreHead(const float* hidden, int64_t d, const HostTensor& lm_head, const ForwardItem& item,
               ForwardOutput* out) {
  const int64_t t_len = static_cast<int64_t>(item.tokens.size());
  const int64_t vocab = lm_head.shape[0];
  out->logprob.assign(t_len, 0.0f);
  out->is_greedy.assign(t_len, 0);
  out->argmax.assign(t_len, -1);
  out->top_k.clear();
  if (item.top_k > 0) out->top_k.resize(t_len);
  out->last_logprobs.clear();
  out->last_argmax = -1;
  out->logits.clear();
  if (item.want_all_logits) out->logits.resize(static_cast<size_t>(t_len * vocab));

  std::vector<int64_t> rows;
  for (int64_t t = 0; t < t_len; ++t) {
    const bool scored = !item.targets.empty() && item.targets[t] >= 0;
    const bool last = (item.want_last_logprobs || item.want_last_argmax) && t == t_len - 1;
    if (scored || last || item.want_all_logits) rows.push_back(t);
  }
  // Buffers sized for the rows at hand: a decode step's one row must not allocate (and
  // page-fault) a 64-row block of logits every token.
  constexpr int64_t kMaxBlock = 64;
  const int64_t kBlock = std::min<int64_t>(kMaxBlock, static_cast<int64_t>(rows.size()));
  std::vector<float> x(static_cast<size_t>(kBlock * d));
  std::vector<float> logits(static_cast<size_t>(kBlock * vocab));
  for (size_t b0 = 0; b0 < rows.size(); b0 += kBlock) {
    const int64_t nb = std::min<int64_t>(kBlock, static_cast<int64_t>(rows.size() - b0));
    for (int64_t r = 0; r < nb; ++r) {
      std::copy_n(hidden + rows[b0 + r] * d, d, x.data() + r * d);
    }
    Linear(x.data(), nb, d, lm_head, logits.data());
    for (int64_t r = 0; r < nb; ++r) {
      const int64_t t = rows[b0 + r];
      const float* row = logits.data() + r * vocab;
      if (item.want_all_logits) std::copy_n(row, vocab, out->logits.data() + t * vocab);
      int32_t best = 0;
      float best_value = row[0];
      for (int64_t v = 1; v < vocab; ++v) {
        if (row[v] > best_value) {
          best_value = row[v];
          best = static_cast<int32_t>(v);
        }
      }
      out->argmax[t] = best;
      if (item.want_last_argmax && t == t_len - 1) out->last_argmax = best;
      const bool scored = !item.targets.empty() && item.targets[t] >= 0;
      const bool last_row = item.want_last_logprobs && t == t_len - 1;
      // A greedy decode row (argmax only) needs no normaliser.
      if (!scored && !last_row) continue;
      double sum = 0.0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - best_value);
      const double lse = best_value + std::log(sum);
      if (scored) {
        const int32_t target = item.targets[t];
        out->logprob[t] = static_cast<float>(row[target] - lse);
        out->is_greedy[t] = target == best ? 1 : 0;
        if (item.top_k > 0) {
          out->top_k[t] = TopKLogprobs(absl::MakeConstSpan(row, vocab), item.top_k, lse);
        }
      }
      if (last_row) {
        out->last_logprobs.resize(static_cast<size_t>(vocab));
        for (int64_t v = 0; v < vocab; ++v) {
          out->last_logprobs[v] = static_cast<float>(row[v] - lse);
        }
      }
    }
  }
}

void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  RunOnWorkerPool(n, fn, tls_thread_limit);
}

ScopedCpuThreads::ScopedCpuThreads(int threads) : previous_(tls_thread_limit) {
  tls_thread_limit = std::max(0, threads);
}

ScopedCpuThreads::~ScopedCpuThreads() { tls_thread_limit = previous_; }

absl::StatusOr<std::vector<SequenceState*>> ResolveStates(
    const Model& model, absl::Span<const ForwardItem> items,
    std::vector<std::unique_ptr<SequenceState>>* copies) {
  std::vector<SequenceState*> states(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].state != nullptr) {
      states[i] = items[i].state;
      continue;
    }
    HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> copy,
                        StartState(model, items[i].fresh_start ? nullptr : items[i].start));
    states[i] = copy.get();
    copies->push_back(std::move(copy));
  }
  return states;
}

}  // namespace hgeval::cpu
