#include "server/exec/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/core/log.h"

namespace hgeval::server {

namespace {

constexpr char kQueueFullPayload[] = "hgeval.dev/queue-full";

absl::Status QueueFull(absl::string_view message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kQueueFullPayload, absl::Cord("1"));
  return status;
}

}  // namespace

bool IsQueueFull(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kQueueFullPayload).has_value();
}

int64_t ScoreWork::tokens() const {
  int64_t n = 0;
  for (const ScoreRequest& r : requests) {
    n += static_cast<int64_t>(r.context.size() + r.continuation.size());
  }
  return n;
}

ModelScheduler::ModelScheduler(std::string name, Model* model, const Tokenizer* tokenizer,
                               SchedulerOptions options)
    : name_(std::move(name)),
      model_(model),
      tokenizer_(tokenizer),
      options_(options),
      score_queue_(options.max_queued_requests),
      decode_(model, tokenizer) {
  thread_ = std::thread([this] { Loop(); });
}

ModelScheduler::~ModelScheduler() { Stop(); }

absl::Status ModelScheduler::Submit(std::shared_ptr<ScoreWork> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (work->context_reuse) {
    // Jobs' work: bounded by the job workers, not by the RPC queue's limit.
    reuse_queue_.push_back(std::move(work));
    return absl::OkStatus();
  }
  if (!score_queue_.Admits(*work)) {
    return QueueFull(absl::StrCat("model '", name_, "' has ", score_queue_.queued_units(),
                                  " scoring requests queued (limit ", options_.max_queued_requests,
                                  "); retry later"));
  }
  score_queue_.Push(std::move(work));
  return absl::OkStatus();
}

absl::Status ModelScheduler::Submit(std::shared_ptr<GenerateWork> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (generations_ >= options_.max_generations) {
    return QueueFull(absl::StrCat("model '", name_, "' has ", generations_,
                                  " generations running (limit ", options_.max_generations,
                                  "); retry later"));
  }
  ++generations_;
  generate_queue_.push_back(std::move(work));
  return absl::OkStatus();
}

void ModelScheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

SchedulerStats ModelScheduler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void ModelScheduler::Loop() {
  for (;;) {
    std::vector<std::shared_ptr<ScoreWork>> score_round;
    std::vector<std::shared_ptr<GenerateWork>> joining;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !score_queue_.empty() || !generate_queue_.empty() || !live_.empty() ||
               !reuse_queue_.empty() || reuse_active_;
      };
      mu_.Await(absl::Condition(&has_work));
      stopping = stopping_;
      score_round = score_queue_.TakeRound(BatchTokens(*model_, options_.max_batch_tokens));
      while (!generate_queue_.empty()) {
        joining.push_back(std::move(generate_queue_.front()));
        generate_queue_.pop_front();
      }
      if (stopping) {
        // Drain everything: nothing more runs.
        for (auto& work : score_queue_.TakeAll()) score_round.push_back(std::move(work));
      }
    }
    if (stopping) {
      const absl::Status unavailable = absl::UnavailableError("the server is shutting down");
      for (auto& work : score_round) FinishWork(*work, unavailable);
      for (auto& work : joining) FinishWork(*work, unavailable);
      for (LiveGeneration& live : live_) Finish(live, unavailable);
      live_.clear();
      if (reuse_.work != nullptr) FinishReuseWork(unavailable);
      std::deque<std::shared_ptr<ScoreWork>> queued;
      {
        absl::MutexLock lock(&mu_);
        queued.swap(reuse_queue_);
      }
      for (auto& work : queued) FinishWork(*work, unavailable);
      return;
    }
    const absl::Time now = absl::Now();
    for (auto& work : joining) {
      absl::Status status;
      if (work->cancelled) {
        status = absl::CancelledError("generation cancelled by the client");
      } else if (now > work->deadline) {
        status = absl::DeadlineExceededError("deadline passed before the generation started");
      } else {
        absl::StatusOr<int64_t> id = decode_.Add(work->request);
        if (id.ok()) {
          live_.push_back(LiveGeneration{work, *id, 0});
          continue;
        }
        status = id.status();
      }
      {
        absl::MutexLock lock(&mu_);
        --generations_;
      }
      FinishWork(*work, status);
    }
    if (!score_round.empty()) RunScoreRound(score_round);
    StepReuseWork();
    if (!live_.empty()) RunDecodeStep();
  }
}

void ModelScheduler::StepReuseWork() {
  if (reuse_.work == nullptr) {
    absl::MutexLock lock(&mu_);
    if (reuse_queue_.empty()) return;
    reuse_.work = std::move(reuse_queue_.front());
    reuse_queue_.pop_front();
    reuse_active_ = true;
  }
  ScoreWork& work = *reuse_.work;
  if (work.cancelled) {
    FinishReuseWork(absl::CancelledError("job scoring cancelled"));
    return;
  }
  if (absl::Now() > work.deadline) {
    FinishReuseWork(absl::DeadlineExceededError("deadline passed during scoring"));
    return;
  }
  if (reuse_.scorer == nullptr) {
    PrefixScoreOptions options;
    options.context_reuse = true;
    options.max_batch_tokens = options_.max_batch_tokens;
    options.cancelled = [w = reuse_.work.get()] { return w->cancelled.load(); };
    options.finished = work.finished;
    reuse_.scorer = std::make_unique<PrefixScorer>(*model_, work.requests, std::move(options));
    if (absl::Status s = reuse_.scorer->Start(); !s.ok()) {
      FinishReuseWork(s);
      return;
    }
  }
  absl::StatusOr<bool> done = reuse_.scorer->Step();
  if (!done.ok()) {
    FinishReuseWork(done.status());
  } else if (*done) {
    FinishReuseWork(absl::OkStatus());
  }
}

void ModelScheduler::FinishReuseWork(const absl::Status& status) {
  std::shared_ptr<ScoreWork> work = std::move(reuse_.work);
  std::unique_ptr<PrefixScorer> scorer = std::move(reuse_.scorer);
  {
    absl::MutexLock lock(&work->mu);
    if (scorer != nullptr) work->stats = scorer->stats();
    if (status.ok() && scorer != nullptr) {
      work->results = scorer->TakeResults();
    } else {
      work->status = status.ok() ? absl::InternalError("scoring did not start") : status;
    }
    work->done = true;
  }
  absl::MutexLock lock(&mu_);
  reuse_active_ = false;
  if (status.ok()) {
    stats_.scored_requests += static_cast<int64_t>(work->requests.size());
    if (scorer != nullptr) stats_.tokens_fed += scorer->stats().tokens_fed;
  }
}

void ModelScheduler::RunScoreRound(const std::vector<std::shared_ptr<ScoreWork>>& works) {
  const absl::Time now = absl::Now();
  std::vector<std::shared_ptr<ScoreWork>> running;
  for (auto& work : works) {
    absl::Status status;
    if (work->cancelled) {
      status = absl::CancelledError("request cancelled by the client");
    } else if (now > work->deadline) {
      status = absl::DeadlineExceededError("deadline passed before the request was scored");
    } else {
      running.push_back(work);
      continue;
    }
    FinishWork(*work, status);
  }
  if (running.empty()) return;
  std::vector<ScoreRequest> batch;
  int64_t tokens = 0;
  for (auto& work : running) {
    for (const ScoreRequest& r : work->requests) batch.push_back(r);
    tokens += work->tokens();
  }
  ScoreOptions options;
  options.max_batch_tokens = options_.max_batch_tokens;
  // A round stops early only when every caller in it has gone (cancelled, deadline, or
  // the server's shutdown grace ran out): the others' results are still wanted.
  options.cancelled = [&running] {
    return std::all_of(running.begin(), running.end(),
                       [](const std::shared_ptr<ScoreWork>& w) { return w->cancelled.load(); });
  };
  absl::StatusOr<std::vector<ScoreResult>> results;
  if (model_->info().forks_are_exact) {
    // A forked state equals a scratch run bitwise, so the round's requests share their
    // common prefixes, continuations included (a question's choices sent as echo
    // prompts), and a result still does not depend on its round.
    PrefixScoreOptions shared;
    shared.context_reuse = true;
    shared.share_continuations = true;
    shared.max_batch_tokens = options.max_batch_tokens;
    shared.cancelled = options.cancelled;
    results = ScoreWithPrefixReuse(*model_, batch, shared);
  } else {
    results = Score(*model_, batch, options);
  }
  if (!results.ok() && !absl::IsCancelled(results.status()) && running.size() > 1) {
    // Isolate the failing call: score each on its own so one bad call fails alone.
    LogWarning("score_round_failed", {{"model", name_}, {"error", results.status().ToString()}});
    for (auto& work : running) {
      options.cancelled = [&work] { return work->cancelled.load(); };
      absl::StatusOr<std::vector<ScoreResult>> own = Score(*model_, work->requests, options);
      absl::MutexLock lock(&work->mu);
      if (own.ok()) {
        work->results = *std::move(own);
      } else {
        work->status = own.status();
      }
      work->done = true;
    }
  } else {
    size_t offset = 0;
    for (auto& work : running) {
      absl::MutexLock lock(&work->mu);
      if (results.ok()) {
        work->results.assign(
            std::make_move_iterator(results->begin() + offset),
            std::make_move_iterator(results->begin() + offset + work->requests.size()));
        offset += work->requests.size();
      } else {
        work->status = results.status();
      }
      work->done = true;
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.score_rounds++;
  stats_.scored_requests += static_cast<int64_t>(batch.size());
  stats_.tokens_fed += tokens;
  stats_.max_score_round_works =
      std::max<int64_t>(stats_.max_score_round_works, static_cast<int64_t>(running.size()));
}

void ModelScheduler::Finish(LiveGeneration& live, absl::Status status) {
  GenerateResult result;
  if (decode_.finished(live.id)) result = decode_.Take(live.id);
  absl::MutexLock lock(&live.work->mu);
  for (size_t i = live.work->tokens.size(); i < result.tokens.size(); ++i) {
    live.work->tokens.push_back(result.tokens[i]);
  }
  live.work->result = std::move(result);
  live.work->status = std::move(status);
  live.work->done = true;
}

void ModelScheduler::RunDecodeStep() {
  const absl::Time now = absl::Now();
  // Cancelled or expired sequences leave the batch before the step.
  for (LiveGeneration& live : live_) {
    if (live.work->cancelled || now > live.work->deadline) decode_.Cancel(live.id);
  }
  const int64_t batch_size = static_cast<int64_t>(decode_.size());
  absl::StatusOr<std::vector<int64_t>> stepped = decode_.Step();
  int64_t new_tokens = 0;
  std::vector<LiveGeneration> still_live;
  for (LiveGeneration& live : live_) {
    if (!stepped.ok()) {
      Finish(live, stepped.status());
      continue;
    }
    if (live.work->cancelled) {
      Finish(live, absl::CancelledError("generation cancelled by the client"));
      continue;
    }
    if (now > live.work->deadline) {
      Finish(live, absl::DeadlineExceededError("deadline passed during generation"));
      continue;
    }
    if (decode_.finished(live.id)) {
      const size_t before = live.delivered;
      Finish(live, decode_.status(live.id));
      absl::MutexLock lock(&live.work->mu);
      new_tokens += static_cast<int64_t>(live.work->tokens.size() - before);
      continue;
    }
    const GenerateResult& partial = decode_.result(live.id);
    if (partial.tokens.size() > live.delivered) {
      absl::MutexLock lock(&live.work->mu);
      for (size_t i = live.delivered; i < partial.tokens.size(); ++i) {
        live.work->tokens.push_back(partial.tokens[i]);
      }
      new_tokens += static_cast<int64_t>(partial.tokens.size() - live.delivered);
      live.delivered = partial.tokens.size();
    }
    still_live.push_back(std::move(live));
  }
  const int64_t finished = static_cast<int64_t>(live_.size() - still_live.size());
  live_ = std::move(still_live);
  absl::MutexLock lock(&mu_);
  generations_ -= finished;
  stats_.decode_steps++;
  stats_.generated_tokens += new_tokens;
  stats_.max_live_generations = std::max(stats_.max_live_generations, batch_size);
}

}  // namespace hgeval::server
