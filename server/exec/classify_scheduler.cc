#include "server/exec/classify_scheduler.h"

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
    : name_(std::move(name)),
      model_(model),
      options_(options),
      queue_(options.max_queued_examples) {
  thread_ = std::thread([this] { Loop(); });
}

ClassifyScheduler::~ClassifyScheduler() { Stop(); }

absl::Status ClassifyScheduler::Submit(std::shared_ptr<ClassifyWork> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (!queue_.Admits(*work)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model '", name_, "' has ", queue_.queued_units(), " examples queued (limit ",
                     options_.max_queued_examples, "); retry later"));
  }
  queue_.Push(std::move(work));
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
      round = stopping ? queue_.TakeAll() : queue_.TakeRound(options_.max_batch_positions);
    }
    if (stopping) {
      for (auto& work : round) {
        FinishWork(*work, absl::UnavailableError("the server is shutting down"));
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
      FinishWork(*work, dropped);
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
