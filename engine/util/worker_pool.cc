#include "engine/util/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace hgeval {
namespace {

// One loop in flight. Lives on its caller's stack: the caller takes it off the open list
// and waits for its helpers to leave before returning.
struct Region {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> next{0};
  int helpers_left = 0;  // workers that may still join (guarded by the pool's mutex)
  int active = 0;        // workers inside (guarded by the pool's mutex)

  void Work() {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) (*fn)(i);
  }
};

class WorkerPool {
 public:
  WorkerPool() {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }

  int workers() const { return static_cast<int>(threads_.size()); }

  void Run(int64_t n, const std::function<void(int64_t)>& fn, int max_threads) {
    if (n <= 0) return;
    const int helpers =
        std::min<int64_t>({max_threads > 0 ? max_threads - 1 : workers(), workers(), n - 1});
    if (helpers <= 0) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    Region region;
    region.fn = &fn;
    region.n = n;
    region.helpers_left = helpers;
    std::list<Region*>::iterator open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = open_.insert(open_.end(), &region);
    }
    work_cv_.notify_all();
    region.Work();
    std::unique_lock<std::mutex> lock(mu_);
    if (region.helpers_left > 0) open_.erase(open);  // else a worker took it off
    region.helpers_left = 0;
    done_cv_.wait(lock, [&] { return region.active == 0; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return !open_.empty(); });
      Region* region = open_.front();
      ++region->active;
      if (--region->helpers_left == 0) open_.pop_front();
      lock.unlock();
      region->Work();
      lock.lock();
      if (--region->active == 0) done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::list<Region*> open_;  // loops that still take helpers, oldest first
  std::vector<std::thread> threads_;
};

WorkerPool& Pool() {
  // Never destroyed: workers may still be waiting when static destructors run.
  static WorkerPool* pool = new WorkerPool();
  return *pool;
}

}  // namespace

void RunOnWorkerPool(int64_t n, const std::function<void(int64_t)>& fn, int max_threads) {
  Pool().Run(n, fn, max_threads);
}

}  // namespace hgeval
