#include "server/classify_scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hgeval::server {

int64_t ClassifyWork::positions() const {
  int64_t n = 0;
  for (const LraInput& input : inputs) {
    for (const LraDocument& doc : input.documents) {
      n += static_cast<int64_t>(doc.tokens.size() + doc.pixels.size());
    }
  }
  return n;
}

ClassifyScheduler::ClassifyScheduler(std::string name, const LraClassifier* model,
                                     ClassifySchedulerOptions options)
    : name_(std::move(name)), model_(model), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

ClassifyScheduler::~ClassifyScheduler() { Stop(); }

absl::Status ClassifyScheduler::Submit(std::shared_ptr<ClassifyWork> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  const int64_t n = static_cast<int64_t>(work->inputs.size());
  if (queued_examples_ > 0 && queued_examples_ + n > options_.max_queued_examples) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model '", name_, "' has ", queued_examples_, " examples queued (limit ",
                     options_.max_queued_examples, "); retry later"));
  }
  queued_examples_ += n;
  queue_.push_back(std::move(work));
  return absl::OkStatus();
}

void ClassifyScheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

ClassifySchedulerStats ClassifyScheduler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void ClassifyScheduler::Loop() {
  for (;;) {
    std::vector<std::shared_ptr<ClassifyWork>> round;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      stopping = stopping_;
      int64_t positions = 0;
      while (!queue_.empty()) {
        const int64_t p = queue_.front()->positions();
        if (!stopping && !round.empty() && positions + p > options_.max_batch_positions) break;
        positions += p;
        queued_examples_ -= static_cast<int64_t>(queue_.front()->inputs.size());
        round.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (stopping) {
      for (auto& work : round) {
        absl::MutexLock lock(&work->mu);
        work->status = absl::UnavailableError("the server is shutting down");
        work->done = true;
      }
      return;
    }
    RunRound(std::move(round));
  }
}

void ClassifyScheduler::RunRound(std::vector<std::shared_ptr<ClassifyWork>> works) {
  const absl::Time now = absl::Now();
  std::vector<std::shared_ptr<ClassifyWork>> live;
  std::vector<LraInput> inputs;
  for (auto& work : works) {
    absl::Status dropped;
    if (work->cancelled) dropped = absl::CancelledError("cancelled by the client");
    if (now > work->deadline) dropped = absl::DeadlineExceededError("deadline exceeded");
    if (!dropped.ok()) {
      absl::MutexLock lock(&work->mu);
      work->status = dropped;
      work->done = true;
      continue;
    }
    inputs.insert(inputs.end(), work->inputs.begin(), work->inputs.end());
    live.push_back(std::move(work));
  }
  if (live.empty()) return;
  std::vector<std::vector<float>> logits;
  const absl::Status status = model_->Classify(inputs, &logits);
  {
    // Counted before the callers are released, so they see their own round.
    absl::MutexLock lock(&mu_);
    ++stats_.rounds;
    stats_.examples += static_cast<int64_t>(inputs.size());
    stats_.max_round_works = std::max<int64_t>(stats_.max_round_works, live.size());
  }
  size_t next = 0;
  for (auto& work : live) {
    absl::MutexLock lock(&work->mu);
    work->status = status;
    if (status.ok()) {
      work->logits.assign(std::make_move_iterator(logits.begin() + next),
                          std::make_move_iterator(logits.begin() + next + work->inputs.size()));
    }
    next += work->inputs.size();
    work->done = true;
  }
}

}  // namespace hgeval::server
