// The process's one pool of CPU worker threads (one per core, less the caller's). Every
// parallel loop of the engine runs on it: the CPU models' kernels (cpu::ParallelFor) and
// per-item work such as tokenizing requests (ParallelFor in parallel_for.h).
//
// Loops from different threads run at the same time, sharing the workers: the models a
// server holds, each driven by its own scheduler thread, are not serialised behind one
// another. Each index of a loop runs exactly once, on whichever thread takes it, and
// computes alone, so no result depends on scheduling or on what else runs.
#ifndef HGEVAL_ENGINE_UTIL_WORKER_POOL_H_
#define HGEVAL_ENGINE_UTIL_WORKER_POOL_H_

#include <cstdint>
#include <functional>

namespace hgeval {

// Runs fn(i) for i in [0, n) on the calling thread and up to max_threads - 1 workers
// (max_threads <= 0: every worker that is free). Blocks until every index has run. The
// caller always takes part, so a loop finishes even when every worker is busy elsewhere.
void RunOnWorkerPool(int64_t n, const std::function<void(int64_t)>& fn, int max_threads = 0);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_UTIL_WORKER_POOL_H_
