#include "server/jobs/job_manager.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <random>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/core/echoed_name.h"
#include "server/core/log.h"
#include "server/jobs/job_runner.h"
#include "server/jobs/job_shard_outcome.h"
#include "server/jobs/job_shard_plan.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

bool IsFinalJobState(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

namespace {

std::string NewJobId(const std::string& prefix) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
  return absl::StrCat(prefix, "-", absl::Hex(rng(), absl::kZeroPad16));
}

}  // namespace

JobManager::JobManager(ResultStore* store, ModelRegistry* registry, Executor* executor,
                       JobManagerOptions options)
    : store_(store), registry_(registry), executor_(executor), options_(std::move(options)) {}

JobManager::~JobManager() { Stop(); }

namespace {

const std::vector<int>& UnfinishedStates() {
  static const std::vector<int> states = {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING};
  return states;
}

StoredJob RowOf(const v1::Job& job) {
  StoredJob stored;
  stored.id = job.id();
  stored.state = job.state();
  stored.created_at = job.created_at();
  stored.blob = job.SerializeAsString();
  return stored;
}

absl::StatusOr<v1::Job> ParseJob(const StoredJob& row) {
  v1::Job job;
  if (!job.ParseFromString(row.blob)) {
    return absl::DataLossError(absl::StrCat("job '", row.id, "' is corrupt in the store"));
  }
  job.set_state(static_cast<v1::JobState>(row.state));
  return job;
}

// The finished tasks of the done shards, in task order.
absl::StatusOr<std::vector<ShardOutcome>> DoneOutcomes(const std::vector<JobShard>& shards) {
  std::vector<ShardOutcome> outcomes;
  for (const JobShard& shard : shards) {
    if (shard.state != kShardDone) continue;
    absl::StatusOr<ShardOutcome> outcome = ParseShardOutcome(shard.result);
    if (!outcome.ok()) return outcome.status();
    outcomes.push_back(*std::move(outcome));
  }
  return outcomes;
}

int64_t NowSeconds() { return static_cast<int64_t>(std::time(nullptr)); }

// The task results of the done shards' outcomes, in task order (ranges have none).
void AddTaskResults(std::vector<const ShardOutcome*> outcomes, v1::Job& job) {
  std::stable_sort(
      outcomes.begin(), outcomes.end(),
      [](const ShardOutcome* a, const ShardOutcome* b) { return a->task_index < b->task_index; });
  for (const ShardOutcome* outcome : outcomes) {
    if (outcome->kind != ShardKind::kDocRange) *job.add_results() = outcome->result;
  }
}

// The shards' progress and finished tasks, into the job (a running job's view, or a job
// cancelled or failed before its end). A report shard's requests were counted by its
// task's ranges.
absl::Status AddShardProgress(const std::vector<JobShard>& shards, const std::string& data_dir,
                              v1::Job& job) {
  int64_t total = 0, done = 0, cached = 0;
  std::string current;
  job.clear_results();
  std::vector<ShardOutcome> outcomes;
  outcomes.reserve(shards.size());
  for (const JobShard& shard : shards) {
    if (shard.state == kShardDone) {
      absl::StatusOr<ShardOutcome> outcome = ParseShardOutcome(shard.result);
      if (!outcome.ok()) return outcome.status();
      outcomes.push_back(*std::move(outcome));
      if (outcomes.back().kind == ShardKind::kReport) continue;
      total += outcomes.back().requests_total;
      done += outcomes.back().requests_total;
      cached += outcomes.back().requests_cached;
      continue;
    }
    total += shard.requests_total;
    done += shard.requests_done;
    cached += shard.requests_cached;
    if (shard.state == kShardRunning && current.empty()) {
      current = JobShardName(job, shard.index, data_dir);
    }
  }
  std::vector<const ShardOutcome*> finished;
  finished.reserve(outcomes.size());
  for (const ShardOutcome& outcome : outcomes) finished.push_back(&outcome);
  AddTaskResults(finished, job);
  job.set_requests_total(total);
  job.set_requests_done(done);
  job.set_requests_cached(cached);
  job.set_current_task(current);
  return absl::OkStatus();
}

// Whether a report shard may run: every range of its task is stored (another server may
// still be computing one). Waits up to `wait` for that.
absl::StatusOr<bool> RangesDone(ResultStore& store, const std::string& job_id,
                                const ShardSpan& span, absl::Duration wait) {
  const absl::Time until = absl::Now() + wait;
  for (;;) {
    absl::StatusOr<std::vector<JobShard>> shards = store.JobShards(job_id);
    if (!shards.ok()) return shards.status();
    bool done = true;
    for (int index : span.waits_for) {
      done = done && index < static_cast<int>(shards->size()) &&
             (*shards)[static_cast<size_t>(index)].state == kShardDone;
    }
    if (done) return true;
    if (absl::Now() >= until) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace

bool JobManager::stopping() {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void JobManager::Changed() {
  absl::MutexLock lock(&mu_);
  ++version_;
}

absl::Status JobManager::Start() {
  // Shards this replica held when it last stopped (or died) are queued again at once
  // rather than after their lease.
  if (absl::Status s = store_->ReleaseShards(options_.replica); !s.ok()) return s;
  absl::StatusOr<std::vector<StoredJob>> unfinished = store_->JobsInStates(UnfinishedStates());
  if (!unfinished.ok()) return unfinished.status();
  for (const StoredJob& stored : *unfinished) {
    absl::StatusOr<v1::Job> job = ParseJob(stored);
    if (!job.ok()) continue;
    // Jobs stored before shards existed gain them (idempotent for the others).
    absl::StatusOr<int> shards = JobShardCount(*job, options_.data_dir);
    if (!shards.ok()) {
      LogError("job_plan_failed", {{"job", job->id()}, {"error", shards.status().ToString()}});
      continue;
    }
    if (absl::Status s = store_->EnsureShards(job->id(), *shards); !s.ok()) return s;
  }
  LogInfo("jobs_started", {{"replica", options_.replica},
                           {"store", store_->backend()},
                           {"unfinished_jobs", absl::StrCat(unfinished->size())},
                           {"workers", absl::StrCat(std::max(1, options_.workers))}});
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  return absl::OkStatus();
}

void JobManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  if (absl::Status s = store_->ReleaseShards(options_.replica); !s.ok()) {
    LogError("shard_release_failed", {{"replica", options_.replica}, {"error", s.ToString()}});
  }
}

absl::StatusOr<LoadedModel*> JobManager::Validated(const v1::SubmitJobRequest& request) {
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
  if (request.options().shard_requests() < 0) {
    return absl::InvalidArgumentError("options.shard_requests must be >= 0");
  }
  if (!v1::BosMode_IsValid(request.options().bos_mode())) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.bos_mode ", request.options().bos_mode(),
                     " is not a BosMode (0: unset = tokenizer, 1: tokenizer, 2: none)"));
  }
  {
    std::vector<std::string> seen;
    for (const std::string& t : request.tasks()) {
      if (std::find(seen.begin(), seen.end(), t) != seen.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("task '", EchoedName(t), "' is listed twice"));
      }
      seen.push_back(t);
    }
  }
  // Few-shot prompting is not implemented: refuse rather than run zero-shot under a
  // few-shot label.
  if (request.options().num_fewshot() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.num_fewshot ", request.options().num_fewshot(),
                     " is not supported: hgeval evaluates zero-shot only (num_fewshot 0)"));
  }
  std::vector<std::string> tasks(request.tasks().begin(), request.tasks().end());
  if (!niah) {
    if (absl::Status s = ValidateTasks(tasks); !s.ok()) return s;
  }
  absl::StatusOr<LoadedModel*> model = registry_->Get(request.model());
  if (!model.ok()) return model.status();
  if (niah) {
    if (absl::Status s = ValidateNiahJob(request.niah(), **model); !s.ok()) return s;
  } else if (absl::Status s = ValidateTasksForModel(tasks, **model); !s.ok()) {
    return s;
  }
  return *model;
}

absl::Status JobManager::Validate(const v1::SubmitJobRequest& request) {
  return Validated(request).status();
}

absl::StatusOr<std::string> JobManager::Submit(const v1::SubmitJobRequest& request,
                                               const std::string& id_prefix) {
  absl::StatusOr<LoadedModel*> model = Validated(request);
  if (!model.ok()) return model.status();
  const bool niah = request.has_niah();
  std::vector<std::string> tasks(request.tasks().begin(), request.tasks().end());
  std::string spec;
  {
    google::protobuf::io::StringOutputStream stream(&spec);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeToCodedStream(&coded);
  }
  absl::StrAppend(&spec, "\n", (*model)->model_hash, "\n", (*model)->tokenizer_hash);
  absl::MutexLock submit_lock(&submit_mu_);
  if (auto it = live_by_spec_.find(spec); it != live_by_spec_.end()) {
    absl::StatusOr<std::optional<StoredJob>> stored = store_->GetJob(it->second);
    if (stored.ok() && stored->has_value() &&
        !IsFinalJobState(static_cast<v1::JobState>((*stored)->state))) {
      LogInfo("job_attached", {{"job", it->second}, {"model", request.model()}});
      return it->second;
    }
    live_by_spec_.erase(it);
  }
  if (live_by_spec_.size() >= 1024) {  // forget the finished ones
    for (auto it = live_by_spec_.begin(); it != live_by_spec_.end();) {
      absl::StatusOr<std::optional<StoredJob>> stored = store_->GetJob(it->second);
      const bool live = stored.ok() && stored->has_value() &&
                        !IsFinalJobState(static_cast<v1::JobState>((*stored)->state));
      if (live) {
        ++it;
      } else {
        live_by_spec_.erase(it++);
      }
    }
  }
  v1::Job job;
  job.set_id(NewJobId(id_prefix));
  job.set_model(request.model());
  *job.mutable_tasks() = request.tasks();
  job.set_limit(request.limit());
  *job.mutable_options() = request.options();
  if (niah) *job.mutable_niah() = request.niah();
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_created_at(NowSeconds());
  job.set_updated_at(job.created_at());
  absl::StatusOr<int> shards = JobShardCount(job, options_.data_dir);
  if (!shards.ok()) return shards.status();
  if (absl::Status s = store_->CreateJob(RowOf(job), *shards); !s.ok()) return s;
  live_by_spec_[spec] = job.id();
  {
    absl::MutexLock lock(&mu_);
    ++submissions_;  // wakes idle workers at once
  }
  Changed();
  LogInfo("job_submitted", {{"job", job.id()},
                            {"model", job.model()},
                            {"tasks", niah ? std::string("niah") : absl::StrJoin(tasks, ",")},
                            {"limit", absl::StrCat(job.limit())},
                            {"shards", absl::StrCat(*shards)}});
  return job.id();
}

absl::StatusOr<v1::Job> JobManager::View(const StoredJob& row) {
  absl::StatusOr<v1::Job> job = ParseJob(row);
  if (!job.ok() || IsFinalJobState(job->state())) return job;
  absl::StatusOr<std::vector<JobShard>> shards = store_->JobShards(row.id);
  if (!shards.ok()) return shards.status();
  if (absl::Status s = AddShardProgress(*shards, options_.data_dir, *job); !s.ok()) return s;
  for (const JobShard& shard : *shards) {
    if (shard.attempts > 0) job->set_state(v1::JOB_STATE_RUNNING);
  }
  return job;
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& id) {
  absl::StatusOr<std::optional<StoredJob>> stored = store_->GetJob(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    return absl::NotFoundError(absl::StrCat("unknown job '", EchoedName(id), "'"));
  }
  return View(**stored);
}

absl::StatusOr<std::vector<v1::Job>> JobManager::List(int limit) {
  absl::StatusOr<std::vector<StoredJob>> stored = store_->ListJobs(limit <= 0 ? 100 : limit);
  if (!stored.ok()) return stored.status();
  std::vector<v1::Job> jobs;
  for (const StoredJob& s : *stored) {
    absl::StatusOr<v1::Job> job = View(s);
    if (job.ok()) jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::Status JobManager::EndBeforeFinishing(const std::string& id, v1::JobState state,
                                            const std::string& error) {
  absl::Status s = store_->UpdateJob(
      id,
      [&](const StoredJob& row,
          const std::vector<JobShard>& shards) -> absl::StatusOr<std::optional<StoredJob>> {
        absl::StatusOr<v1::Job> job = ParseJob(row);
        if (!job.ok()) return job.status();
        if (IsFinalJobState(job->state())) {
          return absl::FailedPreconditionError(absl::StrCat("job '", id, "' already finished (",
                                                            v1::JobState_Name(job->state()), ")"));
        }
        // The tasks that did finish, and the progress, stay readable.
        if (absl::Status s = AddShardProgress(shards, options_.data_dir, *job); !s.ok()) return s;
        job->set_current_task("");
        job->set_state(state);
        job->set_error(error);
        job->set_updated_at(NowSeconds());
        return std::optional<StoredJob>(RowOf(*job));
      });
  Changed();
  return s;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& id) {
  if (absl::Status s = EndBeforeFinishing(id, v1::JOB_STATE_CANCELLED, ""); !s.ok()) return s;
  LogInfo("job_cancelled", {{"job", id}});
  return Get(id);
}

absl::Status JobManager::Watch(const std::string& id, const std::function<bool(v1::Job)>& send,
                               const std::function<bool()>& stop) {
  // A watcher keeps only a hash of what it sent, and hands the job it read to `send`.
  // WatchJob runs one such watcher per watched job, however many streams follow it
  // (server/jobs/job_watch_feed.h).
  size_t last_sent = 0;
  bool sent = false;
  for (;;) {
    int64_t seen;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::UnavailableError("the server is shutting down");
      seen = version_;
    }
    absl::StatusOr<v1::Job> job = Get(id);
    if (!job.ok()) return job.status();
    const int64_t updated_at = job->updated_at();
    job->clear_updated_at();
    const size_t digest = absl::HashOf(job->SerializeAsString());
    job->set_updated_at(updated_at);
    const bool final = IsFinalJobState(job->state());
    if (!sent || digest != last_sent) {
      if (!send(*std::move(job))) return absl::CancelledError("the client went away");
      sent = true;
      last_sent = digest;
    }
    if (final) return absl::OkStatus();
    if (stop()) return absl::CancelledError("watch cancelled by the client");
    // Local changes wake at once; other servers' changes are seen within the poll.
    absl::MutexLock lock(&mu_);
    auto changed = [&]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || version_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(200));
  }
}

void JobManager::Worker() {
  bool store_failing = false;
  for (;;) {
    int64_t seen;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      seen = submissions_;
    }
    absl::StatusOr<std::optional<ClaimedShard>> claimed = store_->ClaimShard(
        options_.replica, absl::ToInt64Milliseconds(options_.lease), UnfinishedStates());
    if (!claimed.ok()) {
      if (!store_failing) {
        LogError("shard_claim_failed", {{"error", claimed.status().ToString()}});
      }
      store_failing = true;
    } else {
      store_failing = false;
      if (claimed->has_value()) {
        RunShard(**claimed);
        continue;
      }
    }
    absl::MutexLock lock(&mu_);
    auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || submissions_ != seen;
    };
    mu_.AwaitWithTimeout(absl::Condition(&woken), options_.poll);
  }
}

void JobManager::RunShard(const ClaimedShard& claimed) {
  const std::string& id = claimed.job.id;
  const int index = claimed.shard.index;
  absl::StatusOr<v1::Job> parsed = ParseJob(claimed.job);
  const std::string name = parsed.ok() ? JobShardName(*parsed, index, options_.data_dir) : "";
  // A report shard runs its task once every range of it is stored. Until then it waits a
  // while, then gives the shard back (its lease ended now) so that the next claim can take
  // a range whose server died; a live server's range finishes meanwhile.
  if (parsed.ok() && !parsed->has_niah()) {
    absl::StatusOr<std::shared_ptr<const JobShardPlan>> plan =
        PlanJobShards(*parsed, options_.data_dir);
    if (plan.ok() && index < static_cast<int>((*plan)->shards.size()) &&
        (*plan)->shards[static_cast<size_t>(index)].kind == ShardKind::kReport) {
      absl::StatusOr<bool> ready =
          RangesDone(*store_, id, (*plan)->shards[static_cast<size_t>(index)],
                     std::min(options_.lease / 3, absl::Seconds(2)));
      if (!ready.ok() || !*ready) {
        absl::StatusOr<std::optional<int>> given_back =
            store_->RenewShard(id, index, options_.replica, 0, ShardProgress{});
        if (!given_back.ok()) {
          LogWarning("shard_renew_failed",
                     {{"job", id}, {"error", given_back.status().ToString()}});
        }
        return;
      }
    }
  }
  LogInfo("shard_started", {{"job", id},
                            {"shard", absl::StrCat(index)},
                            {"task", name},
                            {"attempt", absl::StrCat(claimed.shard.attempts)},
                            {"replica", options_.replica}});
  const absl::Time start = absl::Now();

  // The heartbeat: renews the lease with the progress so far, and notices when the shard
  // should be left (the job was cancelled or failed elsewhere, or the lease was lost).
  absl::Mutex progress_mu;
  ShardProgress progress;
  std::atomic<bool> leave{false};
  std::string leave_reason;
  absl::Notification finished;
  std::thread heartbeat([&] {
    // Progress is written within 50 ms of changing (readers on any server see it); the
    // lease is renewed at least every third of its length.
    const absl::Duration renew_every = std::min(options_.lease / 3, absl::Milliseconds(500));
    absl::Time renewed = absl::Now();
    ShardProgress written;
    while (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      ShardProgress now;
      {
        absl::MutexLock lock(&progress_mu);
        now = progress;
      }
      const bool moved = now.requests_total != written.requests_total ||
                         now.requests_done != written.requests_done ||
                         now.requests_cached != written.requests_cached;
      if (!moved && absl::Now() - renewed < renew_every) continue;
      renewed = absl::Now();
      written = now;
      absl::StatusOr<std::optional<int>> state = store_->RenewShard(
          id, index, options_.replica, absl::ToInt64Milliseconds(options_.lease), now);
      if (!state.ok()) {
        LogWarning("shard_renew_failed", {{"job", id}, {"error", state.status().ToString()}});
        continue;
      }
      if (!state->has_value() || IsFinalJobState(static_cast<v1::JobState>(**state))) {
        absl::MutexLock lock(&progress_mu);
        leave_reason = state->has_value() ? v1::JobState_Name(**state) : "lease lost";
        leave = true;
        return;
      }
      Changed();
    }
  });

  absl::StatusOr<ShardOutcome> outcome = absl::UnknownError("shard not run");
  JobContext context;
  absl::StatusOr<LoadedModel*> model =
      parsed.ok() ? registry_->Get(parsed->model()) : absl::StatusOr<LoadedModel*>(parsed.status());
  if (!model.ok()) {
    outcome = model.status();
  } else {
    context.model = *model;
    context.executor = executor_;
    context.data_dir = options_.data_dir;
    context.progress = [&](const JobProgress& p) {
      absl::MutexLock lock(&progress_mu);
      progress.requests_total = p.requests_total;
      progress.requests_done = p.requests_done;
      progress.requests_cached = p.requests_cached;
    };
    context.cancelled = [&] { return leave.load() || stopping(); };
    outcome = RunJobShard(*parsed, index, context);
  }
  finished.Notify();
  heartbeat.join();

  if (leave.load() || (stopping() && !outcome.ok())) {
    absl::MutexLock lock(&progress_mu);
    LogInfo("shard_left", {{"job", id},
                           {"shard", absl::StrCat(index)},
                           {"reason", leave.load() ? leave_reason : "server stopping"}});
    return;
  }
  if (!outcome.ok()) {
    const std::string error(outcome.status().message());
    absl::Status s = EndBeforeFinishing(id, v1::JOB_STATE_FAILED, error);
    if (absl::IsFailedPrecondition(s)) return;  // cancelled or failed elsewhere meanwhile
    if (!s.ok()) {
      // The store still says RUNNING, and the shard is claimed again when its lease runs
      // out: the log says that, not FAILED (GetJob would contradict it).
      LogError("job_persist_failed", {{"job", id},
                                      {"shard", absl::StrCat(index)},
                                      {"state", "JOB_STATE_RUNNING"},
                                      {"shard_error", error},
                                      {"error", s.ToString()},
                                      {"next", "the shard is retried when its lease runs out"}});
      return;
    }
    LogInfo("job_finished", {{"job", id}, {"state", "JOB_STATE_FAILED"}, {"error", error}});
    return;
  }

  bool job_done = false;
  v1::Job final_job;
  // The row's progress columns end at the shard's totals (readers of the table, not only
  // GetJob, see it finished).
  ShardProgress final_progress;
  if (outcome->kind != ShardKind::kReport) {  // a report's requests count in its ranges
    final_progress.requests_total = outcome->requests_total;
    final_progress.requests_done = outcome->requests_total;
    final_progress.requests_cached = outcome->requests_cached;
  }
  absl::StatusOr<bool> owned = store_->FinishShard(
      id, index, options_.replica, SerializeShardOutcome(*outcome), final_progress,
      [&](const StoredJob& row,
          const std::vector<JobShard>& shards) -> absl::StatusOr<std::optional<StoredJob>> {
        absl::StatusOr<v1::Job> job = ParseJob(row);
        if (!job.ok()) return job.status();
        if (IsFinalJobState(job->state())) return std::optional<StoredJob>();
        for (const JobShard& shard : shards) {
          if (shard.state != kShardDone) return std::optional<StoredJob>();
        }
        // The last shard: this server writes the job's results.
        absl::StatusOr<std::vector<ShardOutcome>> outcomes = DoneOutcomes(shards);
        if (!outcomes.ok()) return outcomes.status();
        absl::StatusOr<std::string> results = AssembleJobResults(*job, *outcomes, context);
        if (!results.ok()) return results.status();
        int64_t total = 0, cached = 0;
        std::vector<const ShardOutcome*> finished;
        for (const ShardOutcome& o : *outcomes) {
          finished.push_back(&o);
          if (!o.results_csv.empty()) job->set_results_csv(o.results_csv);
          if (o.kind == ShardKind::kReport) continue;
          total += o.requests_total;
          cached += o.requests_cached;
        }
        AddTaskResults(finished, *job);
        job->set_state(v1::JOB_STATE_SUCCEEDED);
        job->set_results_json(*std::move(results));
        job->set_requests_total(total);
        job->set_requests_done(total);
        job->set_requests_cached(cached);
        job->set_current_task("");
        job->set_updated_at(NowSeconds());
        job_done = true;
        final_job = *job;
        return std::optional<StoredJob>(RowOf(*job));
      });
  Changed();
  if (!owned.ok()) {
    LogError("shard_finish_failed",
             {{"job", id}, {"shard", absl::StrCat(index)}, {"error", owned.status().ToString()}});
    return;
  }
  if (!*owned) {
    // Another replica claimed it after this one's lease ran out; its outcome counts.
    LogWarning("shard_lost", {{"job", id}, {"shard", absl::StrCat(index)}});
    return;
  }
  LogInfo("shard_finished", {{"job", id},
                             {"shard", absl::StrCat(index)},
                             {"task", name},
                             {"requests", absl::StrCat(outcome->requests_total)},
                             {"computed", absl::StrCat(outcome->requests_computed)},
                             {"cached", absl::StrCat(outcome->requests_cached)},
                             {"seconds", absl::StrCat(absl::ToDoubleSeconds(absl::Now() - start))},
                             {"replica", options_.replica}});
  if (job_done) {
    LogInfo("job_finished", {{"job", id},
                             {"state", v1::JobState_Name(final_job.state())},
                             {"requests", absl::StrCat(final_job.requests_done())},
                             {"cached", absl::StrCat(final_job.requests_cached())}});
  }
}

}  // namespace hgeval::server
