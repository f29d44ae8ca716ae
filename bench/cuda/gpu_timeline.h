// A GPU timeline of one call, read through CUPTI's activity records (the machine that runs
// the benchmarks has no Nsight Systems): where a pass's wall time goes between the host's
// work before the first kernel, the kernels, the GPU's idle gaps between them, and the
// host's wait after the last. Benchmarks only; nothing in the engine uses it.
#ifndef HGEVAL_BENCH_CUDA_GPU_TIMELINE_H_
#define HGEVAL_BENCH_CUDA_GPU_TIMELINE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval::bench {

struct TimelineGap {
  double us = 0;
  std::string before, after;  // the activities on either side
};

struct TimelineCall {
  double at_us = 0;  // after the traced call's start
  double us = 0;     // its length
  std::string name;
};

struct TimelineKernel {
  std::string name;
  int64_t count = 0;
  double ms = 0;  // summed durations
};

struct TimelineSummary {
  double wall_ms = 0;      // the call, on the host
  double lead_ms = 0;      // from the call's start to the GPU's first activity
  double gpu_span_ms = 0;  // first activity's start to last activity's end
  double busy_ms = 0;      // the union of kernels, copies and memsets
  double kernel_ms = 0;    // kernels alone (their union)
  double idle_ms = 0;      // gpu_span_ms - busy_ms: gaps between activities
  double tail_ms = 0;      // from the last activity's end to the call's return
  int64_t kernels = 0, copies = 0, memsets = 0;
  int64_t gaps_over_5us = 0;                // idle gaps longer than 5 µs
  double gaps_over_5us_ms = 0;              // and their sum
  std::vector<TimelineGap> longest_gaps;    // the longest, longest first
  std::vector<TimelineKernel> top_kernels;  // by summed time, longest first
  // The kernels in launch order within a step, a step being what follows a host-to-device
  // copy (a decode step's input): each position's mean over the steps (ms a launch, count
  // the steps) where every step launched the same sequence, else the call's kernels as one
  // step. Places a cost a name alone cannot (the decode GEMM runs five shapes as one name).
  std::vector<TimelineKernel> step_kernels;
  std::vector<TimelineCall> lead_calls;  // the host's CUDA calls before the GPU's first activity
  std::vector<std::pair<std::string, double>> api;  // runtime/driver API: name, host ms

  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// Runs `call` while recording every activity on the device, then summarises them. One at
// a time per process. `call` runs once whatever the tracer's status.
absl::StatusOr<TimelineSummary> TraceCall(const std::function<void()>& call);

}  // namespace hgeval::bench

#endif  // HGEVAL_BENCH_CUDA_GPU_TIMELINE_H_
