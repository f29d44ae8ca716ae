#include "engine/cpu/ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/top_k.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// The calling thread's ParallelFor thread limit (ScopedCpuThreads); 0 = all.
thread_local int tls_thread_limit = 0;

// A fixed pool of workers for ParallelFor. Work is split into contiguous index ranges, so
// which thread runs an index never changes a result (each index is computed alone).
class WorkerPool {
 public:
  WorkerPool() {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < n; ++i) {
      const int index = static_cast<int>(i) - 1;
      threads_.emplace_back([this, index] { Loop(index); });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void Run(int64_t n, const std::function<void(int64_t)>& fn, int limit) {
    if (n <= 0) return;
    // Helpers taking part besides the caller.
    const int helpers = limit > 0 ? std::min(limit - 1, static_cast<int>(threads_.size()))
                                  : static_cast<int>(threads_.size());
    if (helpers == 0 || n == 1) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    std::unique_lock<std::mutex> run_lock(run_mu_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      helpers_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    cv_.notify_all();
    Work();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void Work() {
    for (;;) {
      const int64_t i = next_.fetch_add(1);
      if (i >= n_) return;
      (*fn_)(i);
    }
  }
  void Loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (index >= helpers_) continue;  // not part of this region
      }
      Work();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int pending_ = 0;
  int helpers_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

WorkerPool& Pool() {
  static WorkerPool* pool = new WorkerPool();
  return *pool;
}

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
  constexpr int64_t kBlock = 64;
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
  Pool().Run(n, fn, tls_thread_limit);
}

ScopedCpuThreads::ScopedCpuThreads(int threads) : previous_(tls_thread_limit) {
  tls_thread_limit = std::max(0, threads);
}

ScopedCpuThreads::~ScopedCpuThreads() { tls_thread_limit = previous_; }

absl::StatusOr<std::vector<SequenceState*>> ResolveStates(
    absl::Span<const ForwardItem> items, std::vector<std::unique_ptr<SequenceState>>* copies) {
  std::vector<SequenceState*> states(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].state != nullptr) {
      states[i] = items[i].state;
      continue;
    }
    HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> copy, CloneState(*items[i].start));
    states[i] = copy.get();
    copies->push_back(std::move(copy));
  }
  return states;
}

}  // namespace hgeval::cpu
