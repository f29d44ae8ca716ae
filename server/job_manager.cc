#include "server/job_manager.h"

#include <algorithm>
#include <ctime>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/job_runner.h"
#include "server/log.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

bool IsFinalJobState(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

namespace {

std::string NewJobId() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
  return absl::StrCat("job-", absl::Hex(rng(), absl::kZeroPad16));
}

}  // namespace

JobManager::JobManager(ResultStore* store, ModelRegistry* registry, Executor* executor,
                       JobManagerOptions options)
    : store_(store), registry_(registry), executor_(executor), options_(std::move(options)) {}

JobManager::~JobManager() { Stop(); }

absl::Status JobManager::Persist(const v1::Job& job) {
  StoredJob stored;
  stored.id = job.id();
  stored.state = job.state();
  stored.created_at = job.created_at();
  stored.blob = job.SerializeAsString();
  return store_->PutJob(stored);
}

absl::Status JobManager::Start() {
  absl::StatusOr<std::vector<StoredJob>> unfinished =
      store_->JobsInStates({v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING});
  if (!unfinished.ok()) return unfinished.status();
  {
    absl::MutexLock lock(&mu_);
    for (const StoredJob& stored : *unfinished) {
      v1::Job job;
      if (!job.ParseFromString(stored.blob)) continue;
      LogInfo("job_resumed", {{"job", job.id()},
                              {"state", v1::JobState_Name(job.state())},
                              {"requests_done", absl::StrCat(job.requests_done())}});
      job.set_state(v1::JOB_STATE_QUEUED);
      jobs_[job.id()] = job;
      versions_[job.id()] = 0;
      queue_.push_back(job.id());
    }
  }
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  return absl::OkStatus();
}

void JobManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

absl::StatusOr<std::string> JobManager::Submit(const v1::SubmitJobRequest& request) {
  if (request.model().empty()) return absl::InvalidArgumentError("model is required");
  const bool niah = request.has_niah();
  if (niah && !request.tasks().empty()) {
    return absl::InvalidArgumentError("a NIAH job takes no tasks (give either tasks or niah)");
  }
  if (!niah && request.tasks().empty()) return absl::InvalidArgumentError("tasks is empty");
  if (request.limit() < 0) return absl::InvalidArgumentError("limit must be >= 0");
  if (request.options().max_length() < 0) {
    return absl::InvalidArgumentError("options.max_length must be >= 0");
  }
  if (!v1::BosMode_IsValid(request.options().bos_mode())) {
    return absl::InvalidArgumentError(absl::StrCat("options.bos_mode ",
                                                   request.options().bos_mode(),
                                                   " is not a BosMode (0: unset = tokenizer, 1: tokenizer, 2: none)"));
  }
  {
    std::vector<std::string> seen;
    for (const std::string& t : request.tasks()) {
      if (std::find(seen.begin(), seen.end(), t) != seen.end()) {
        return absl::InvalidArgumentError(absl::StrCat("task '", t, "' is listed twice"));
      }
      seen.push_back(t);
    }
  }
  // Few-shot prompting is not implemented: refuse rather than run zero-shot under a
  // few-shot label.
  if (request.options().num_fewshot() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.num_fewshot ", request.options().num_fewshot(),
        " is not supported: hgeval evaluates zero-shot only (num_fewshot 0)"));
  }
  std::vector<std::string> tasks(request.tasks().begin(), request.tasks().end());
  if (!niah) {
    if (absl::Status s = ValidateTasks(tasks); !s.ok()) return s;
  } else if (!JobsSupported()) {
    return absl::UnimplementedError("this server was built without the tasks library");
  }
  absl::StatusOr<LoadedModel*> model = registry_->Get(request.model());
  if (!model.ok()) return model.status();
  if (niah) {
    if (absl::Status s = ValidateNiahJob(request.niah(), **model); !s.ok()) return s;
  } else if (absl::Status s = ValidateTasksForModel(tasks, **model); !s.ok()) {
    return s;
  }
  v1::Job job;
  job.set_id(NewJobId());
  job.set_model(request.model());
  *job.mutable_tasks() = request.tasks();
  job.set_limit(request.limit());
  *job.mutable_options() = request.options();
  if (niah) *job.mutable_niah() = request.niah();
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_created_at(static_cast<int64_t>(std::time(nullptr)));
  job.set_updated_at(job.created_at());
  if (absl::Status s = Persist(job); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  jobs_[job.id()] = job;
  versions_[job.id()] = 0;
  queue_.push_back(job.id());
  LogInfo("job_submitted", {{"job", job.id()},
                            {"model", job.model()},
                            {"tasks", niah ? std::string("niah") : absl::StrJoin(tasks, ",")},
                            {"limit", absl::StrCat(job.limit())}});
  return job.id();
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) return it->second;
  }
  absl::StatusOr<std::optional<StoredJob>> stored = store_->GetJob(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return absl::NotFoundError(absl::StrCat("unknown job '", id, "'"));
  v1::Job job;
  if (!job.ParseFromString((*stored)->blob)) {
    return absl::DataLossError(absl::StrCat("job '", id, "' is corrupt in the store"));
  }
  return job;
}

absl::StatusOr<std::vector<v1::Job>> JobManager::List(int limit) {
  absl::StatusOr<std::vector<StoredJob>> stored = store_->ListJobs(limit <= 0 ? 100 : limit);
  if (!stored.ok()) return stored.status();
  std::vector<v1::Job> jobs;
  for (const StoredJob& s : *stored) {
    absl::StatusOr<v1::Job> job = Get(s.id);
    if (job.ok()) jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& id) {
  absl::StatusOr<v1::Job> job = Get(id);
  if (!job.ok()) return job.status();
  if (IsFinalJobState(job->state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", id, "' already finished (", v1::JobState_Name(job->state()), ")"));
  }
  Update(id, [](v1::Job& j) { j.set_state(v1::JOB_STATE_CANCELLED); }, true);
  LogInfo("job_cancelled", {{"job", id}});
  return Get(id);
}

void JobManager::Update(const std::string& id, const std::function<void(v1::Job&)>& change,
                        bool persist_now) {
  v1::Job snapshot;
  bool persist = persist_now;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    const bool was_cancelled = it->second.state() == v1::JOB_STATE_CANCELLED;
    change(it->second);
    if (was_cancelled) it->second.set_state(v1::JOB_STATE_CANCELLED);  // sticky
    it->second.set_updated_at(static_cast<int64_t>(std::time(nullptr)));
    ++versions_[id];
    const absl::Time now = absl::Now();
    if (now - last_persist_[id] > absl::Milliseconds(500)) persist = true;
    if (persist) last_persist_[id] = now;
    snapshot = it->second;
  }
  if (persist) {
    if (absl::Status s = Persist(snapshot); !s.ok()) {
      LogError("job_persist_failed", {{"job", id}, {"error", s.ToString()}});
    }
  }
}

absl::Status JobManager::Watch(const std::string& id,
                               const std::function<bool(const v1::Job&)>& send,
                               const std::function<bool()>& stop) {
  int64_t seen = -1;
  for (;;) {
    v1::Job job;
    bool live = false;
    {
      absl::MutexLock lock(&mu_);
      auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto v = versions_.find(id);
        return stopping_ || v == versions_.end() || v->second != seen;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(200));
      if (stopping_) return absl::UnavailableError("the server is shutting down");
      auto it = jobs_.find(id);
      if (it != jobs_.end()) {
        if (versions_[id] == seen) {
          if (stop()) return absl::CancelledError("watch cancelled by the client");
          continue;
        }
        seen = versions_[id];
        job = it->second;
        live = true;
      }
    }
    if (!live) {
      absl::StatusOr<v1::Job> stored = Get(id);
      if (!stored.ok()) return stored.status();
      job = *std::move(stored);
    }
    if (!send(job)) return absl::CancelledError("the client went away");
    if (IsFinalJobState(job.state())) return absl::OkStatus();
    if (!live) {
      // Not live and not final: it is queued in another process state; poll.
      absl::SleepFor(absl::Milliseconds(200));
    }
    if (stop()) return absl::CancelledError("watch cancelled by the client");
  }
}

void JobManager::Worker() {
  for (;;) {
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
    }
    RunOne(id);
  }
}

void JobManager::RunOne(const std::string& id) {
  v1::Job job;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    job = it->second;
  }
  if (job.state() == v1::JOB_STATE_CANCELLED) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(id);
    ++versions_[id];
    return;
  }
  Update(id, [](v1::Job& j) {
    j.set_state(v1::JOB_STATE_RUNNING);
    j.clear_results();
    j.set_requests_done(0);
    j.set_requests_cached(0);
    j.set_requests_total(0);
  }, true);
  LogInfo("job_started", {{"job", id}, {"model", job.model()}});
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> results;
  std::string results_csv;
  absl::StatusOr<LoadedModel*> model = registry_->Get(job.model());
  if (!model.ok()) {
    results = model.status();
  } else {
    JobContext context;
    context.model = *model;
    context.executor = executor_;
    context.data_dir = options_.data_dir;
    context.progress = [&](const JobProgress& p) {
      Update(id, [&](v1::Job& j) {
        j.set_current_task(p.current_task);
        j.set_requests_total(p.requests_total);
        j.set_requests_done(p.requests_done);
        j.set_requests_cached(p.requests_cached);
      }, false);
    };
    context.task_done = [&](const v1::TaskResult& r) {
      Update(id, [&](v1::Job& j) { *j.add_results() = r; }, true);
    };
    context.cancelled = [&] {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(id);
      return stopping_ || it == jobs_.end() || it->second.state() == v1::JOB_STATE_CANCELLED;
    };
    if (job.has_niah()) {
      absl::StatusOr<NiahJobOutput> niah = RunNiahJob(job, context);
      if (niah.ok()) {
        results = std::move(niah->results_json);
        results_csv = std::move(niah->results_csv);
      } else {
        results = niah.status();
      }
    } else {
      results = RunJobTasks(job, context);
    }
  }
  bool stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
  }
  if (stopping && !results.ok()) {
    // Left RUNNING in the store: resumed at the next start.
    LogInfo("job_interrupted", {{"job", id}});
    return;
  }
  Update(id, [&](v1::Job& j) {
    if (results.ok()) {
      j.set_state(v1::JOB_STATE_SUCCEEDED);
      j.set_results_json(*results);
      j.set_results_csv(results_csv);
      j.set_current_task("");
    } else if (j.state() != v1::JOB_STATE_CANCELLED) {
      j.set_state(v1::JOB_STATE_FAILED);
      j.set_error(std::string(results.status().message()));
    }
  }, true);
  v1::Job final_job;
  {
    absl::MutexLock lock(&mu_);
    final_job = jobs_[id];
    jobs_.erase(id);
    ++versions_[id];
  }
  LogInfo("job_finished", {{"job", id},
                           {"state", v1::JobState_Name(final_job.state())},
                           {"requests", absl::StrCat(final_job.requests_done())},
                           {"cached", absl::StrCat(final_job.requests_cached())},
                           {"seconds", absl::StrCat(absl::ToDoubleSeconds(absl::Now() - start))},
                           {"error", final_job.error()}});
}

}  // namespace hgeval::server
