#include "server/jobs/series_manager.h"

#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/util/sha256.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/core/echoed_name.h"
#include "server/core/request_prep.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

namespace {

bool Live(v1::JobState state) {
  return state == v1::JOB_STATE_QUEUED || state == v1::JOB_STATE_RUNNING;
}

absl::Status CheckNumber(double value, const std::string& what) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckSubmission(const v1::SubmitSeriesRequest& request, const SeriesLimits& limits) {
  if (request.name().empty()) return absl::InvalidArgumentError("series name is required");
  if (static_cast<int64_t>(request.name().size()) > limits.max_name_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("series name is ", request.name().size(),
                                                   " bytes, over the limit of ",
                                                   limits.max_name_bytes));
  }
  if (absl::Status s = ValidateUtf8(request.name(), "name"); !s.ok()) return s;
  if (request.checkpoints().empty()) return absl::InvalidArgumentError("checkpoints is empty");
  if (request.checkpoints_size() > limits.max_checkpoints) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the series has ", request.checkpoints_size(), " checkpoints, over the limit of ",
        limits.max_checkpoints, " (--max_series_checkpoints)"));
  }
  if (request.tasks().empty()) return absl::InvalidArgumentError("tasks is empty");
  std::set<std::string> models;
  for (int i = 0; i < request.checkpoints_size(); ++i) {
    const v1::SeriesCheckpoint& c = request.checkpoints(i);
    const std::string where = absl::StrCat("checkpoints[", i, "]");
    if (c.model().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".model is empty"));
    }
    if (absl::Status s = ValidateUtf8(c.model(), where + ".model"); !s.ok()) return s;
    if (absl::Status s = ValidateUtf8(c.architecture(), where + ".architecture"); !s.ok()) return s;
    if (!models.insert(c.model()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": model '", EchoedName(c.model()), "' is listed twice"));
    }
    for (const auto& [value, field] :
         {std::pair{c.parameters(), "parameters"}, std::pair{c.tokens(), "tokens"},
          std::pair{c.compute(), "compute"}}) {
      if (absl::Status s = CheckNumber(value, absl::StrCat(where, ".", field)); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// "task/metric" -> value of a finished job's results (stderr entries left out).
void AddJobMetrics(const v1::Job& job, v1::SeriesPoint& point) {
  for (const v1::TaskResult& result : job.results()) {
    for (const auto& [name, value] : result.metrics()) {
      const std::string metric = name.substr(0, name.find(','));
      if (absl::EndsWith(metric, "_stderr")) continue;
      (*point.mutable_metrics())[absl::StrCat(result.task(), "/", metric)] = value;
    }
  }
}

}  // namespace

std::string SeriesIdOf(const v1::SubmitSeriesRequest& request) {
  // The checkpoints are left out: the same series with more checkpoints is that series
  // extended.
  v1::SubmitSeriesRequest identity = request;
  identity.clear_checkpoints();
  std::string content;
  {
    google::protobuf::io::StringOutputStream stream(&content);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    identity.SerializeToCodedStream(&coded);
  }
  return absl::StrCat("series-", Sha256Hex(content).substr(0, 16));
}

absl::StatusOr<std::optional<v1::Series>> SeriesManager::Read(const std::string& id) {
  absl::StatusOr<std::optional<StoredSeries>> stored = store_->GetSeries(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return std::optional<v1::Series>();
  v1::Series series;
  if (!series.ParseFromString((*stored)->blob)) {
    return absl::DataLossError(absl::StrCat("series ", id, ": its stored record is damaged"));
  }
  return std::optional<v1::Series>(std::move(series));
}

absl::StatusOr<v1::Series> SeriesManager::Submit(const v1::SubmitSeriesRequest& request) {
  if (absl::Status s = CheckSubmission(request, limits_); !s.ok()) return s;
  const std::string id = SeriesIdOf(request);
  absl::MutexLock lock(&submit_mu_);
  absl::StatusOr<std::optional<v1::Series>> existing = Read(id);
  if (!existing.ok()) return existing.status();
  // The points are the submission's checkpoints, in its order; a checkpoint the record
  // already has keeps its job.
  std::map<std::string, std::string> job_of_model;
  v1::Series series;
  if (existing->has_value()) {
    series = **existing;
    for (const v1::SeriesPoint& point : series.points()) {
      job_of_model[point.checkpoint().model()] = point.job_id();
    }
    series.clear_points();
  } else {
    series.set_id(id);
    series.set_name(request.name());
    *series.mutable_tasks() = request.tasks();
    series.set_limit(request.limit());
    *series.mutable_options() = request.options();
    series.set_created_at(static_cast<int64_t>(std::time(nullptr)));
  }
  for (const v1::SeriesCheckpoint& c : request.checkpoints()) {
    v1::SeriesPoint* point = series.add_points();
    *point->mutable_checkpoint() = c;
    if (auto it = job_of_model.find(c.model()); it != job_of_model.end()) {
      point->set_job_id(it->second);
    }
  }
  // The checkpoints that need a job: none yet, or one that ended without results (the
  // store answers whatever an earlier job of the checkpoint computed). All are checked
  // before any is submitted, so a bad checkpoint submits nothing.
  std::vector<std::pair<int, v1::SubmitJobRequest>> needed;
  for (int index = 0; index < series.points_size(); ++index) {
    const v1::SeriesPoint& point = series.points(index);
    if (!point.job_id().empty()) {
      // The job row's state is enough here: no need to parse the job and its shards.
      absl::StatusOr<std::optional<StoredJob>> row = store_->GetJob(point.job_id());
      if (row.ok() && row->has_value()) {
        const auto state = static_cast<v1::JobState>((*row)->state);
        if (state == v1::JOB_STATE_SUCCEEDED || Live(state)) continue;
      }
    }
    v1::SubmitJobRequest job_request;
    job_request.set_model(point.checkpoint().model());
    *job_request.mutable_tasks() = request.tasks();
    job_request.set_limit(request.limit());
    *job_request.mutable_options() = request.options();
    if (absl::Status s = jobs_->Validate(job_request); !s.ok()) {
      return absl::Status(
          s.code(),
          absl::StrCat("checkpoint '", EchoedName(point.checkpoint().model()), "': ", s.message()));
    }
    needed.emplace_back(index, std::move(job_request));
  }
  for (auto& [index, job_request] : needed) {
    // Ids in the series' order: shards are claimed by creation time, then job id.
    absl::StatusOr<std::string> job_id =
        jobs_->Submit(job_request, absl::StrCat(id, "-", absl::Dec(index, absl::kZeroPad4)));
    if (!job_id.ok()) {
      // Checked above, so only the store can fail here: keep what was submitted.
      store_->PutSeries({id, series.created_at(), series.SerializeAsString()}).IgnoreError();
      return job_id.status();
    }
    series.mutable_points(index)->set_job_id(*job_id);
  }
  if (absl::Status s = store_->PutSeries({id, series.created_at(), series.SerializeAsString()});
      !s.ok()) {
    return s;
  }
  return series;
}

absl::StatusOr<v1::Series> SeriesManager::Get(const std::string& id) {
  absl::StatusOr<std::optional<v1::Series>> stored = Read(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    return absl::NotFoundError(absl::StrCat("no series '", EchoedName(id), "'"));
  }
  v1::Series series = **std::move(stored);
  int done = 0;
  for (v1::SeriesPoint& point : *series.mutable_points()) {
    if (point.job_id().empty()) continue;
    absl::StatusOr<v1::Job> job = jobs_->Get(point.job_id());
    if (!job.ok()) {
      point.set_error(std::string(job.status().message()));
      continue;
    }
    point.set_state(job->state());
    point.set_requests_total(job->requests_total());
    point.set_requests_done(job->requests_done());
    point.set_requests_cached(job->requests_cached());
    point.set_error(job->error());
    if (job->state() == v1::JOB_STATE_SUCCEEDED) {
      AddJobMetrics(*job, point);
      ++done;
    }
  }
  series.set_points_done(done);
  return series;
}

absl::StatusOr<std::vector<v1::Series>> SeriesManager::List(int limit) {
  absl::StatusOr<std::vector<StoredSeries>> rows = store_->ListSeries(limit <= 0 ? 100 : limit);
  if (!rows.ok()) return rows.status();
  std::vector<v1::Series> out;
  for (const StoredSeries& row : *rows) {
    v1::Series series;
    if (series.ParseFromString(row.blob)) out.push_back(std::move(series));
  }
  return out;
}

}  // namespace hgeval::server
