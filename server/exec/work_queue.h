// The one queue of the server's schedulers (ModelScheduler's scoring calls,
// ClassifyScheduler's classify calls): a FIFO of shared works bounded by a count of units
// not yet started (requests, examples), taken a round at a time within a budget of cost
// (tokens, positions). Not synchronized: its scheduler guards it with its own mutex, which
// also guards the scheduler's other state (one condition waits on all of it).
#ifndef HGEVAL_SERVER_EXEC_WORK_QUEUE_H_
#define HGEVAL_SERVER_EXEC_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace hgeval::server {

// `Work` has `units()` (what the queue's bound counts) and `cost()` (what a round's budget
// counts).
template <typename Work>
class WorkQueue {
 public:
  explicit WorkQueue(int64_t max_units) : max_units_(max_units) {}

  bool empty() const { return queue_.empty(); }
  int64_t queued_units() const { return queued_units_; }
  int64_t max_units() const { return max_units_; }

  // Whether `work` may join: an empty queue takes any work (one call larger than the bound
  // still runs, alone); otherwise the queued units stay within the bound.
  bool Admits(const Work& work) const {
    return queued_units_ == 0 || queued_units_ + work.units() <= max_units_;
  }

  void Push(std::shared_ptr<Work> work) {
    queued_units_ += work->units();
    queue_.push_back(std::move(work));
  }

  // Works from the front while their summed cost stays within `budget`; the first is
  // always taken, so a work costlier than the budget runs in a round of its own.
  std::vector<std::shared_ptr<Work>> TakeRound(int64_t budget) {
    std::vector<std::shared_ptr<Work>> round;
    int64_t cost = 0;
    while (!queue_.empty()) {
      const int64_t c = queue_.front()->cost();
      if (!round.empty() && cost + c > budget) break;
      cost += c;
      round.push_back(PopFront());
    }
    return round;
  }

  // Every queued work, in order.
  std::vector<std::shared_ptr<Work>> TakeAll() {
    std::vector<std::shared_ptr<Work>> all;
    while (!queue_.empty()) all.push_back(PopFront());
    return all;
  }

 private:
  std::shared_ptr<Work> PopFront() {
    std::shared_ptr<Work> work = std::move(queue_.front());
    queue_.pop_front();
    queued_units_ -= work->units();
    return work;
  }

  const int64_t max_units_;
  std::deque<std::shared_ptr<Work>> queue_;
  int64_t queued_units_ = 0;
};

// Ends a work that did not run (or failed as a whole): its caller, waiting on `work.mu`
// for `work.done`, sees `status`.
template <typename Work>
void FinishWork(Work& work, absl::Status status) {
  absl::MutexLock lock(&work.mu);
  work.status = std::move(status);
  work.done = true;
}

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_WORK_QUEUE_H_
