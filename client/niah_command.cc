#include "client/niah_command.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/niah_outputs.h"
#include "client/niah_spec.h"
#include "tasks/niah/niah_flags.h"
#include "tasks/niah/output.h"

ABSL_DECLARE_FLAG(std::string, model);

ABSL_FLAG(std::string, job, "",
          "niah: re-attach to this job (e.g. after the client was stopped) instead of submitting.");

namespace hgeval::client {
namespace v1 = ::hgeval::v1;

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hgeval niah: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int RunNiahCommand(Client& client, const JobWatcher& watch) {
  std::string id = absl::GetFlag(FLAGS_job);
  if (id.empty()) {
    v1::SubmitJobRequest request;
    request.set_model(absl::GetFlag(FLAGS_model));
    absl::StatusOr<niah::NiahOptions> options = niah::NiahOptionsFromFlags();
    if (!options.ok()) return Fail(options.status());
    *request.mutable_niah() = NiahSpecFromOptions(*options, niah::TrainingLengthFromFlags());
    absl::StatusOr<std::string> submitted = client.SubmitJob(request);
    if (!submitted.ok()) return Fail(submitted.status());
    id = *submitted;
    std::fprintf(stderr,
                 "submitted NIAH job %s (resumable: re-attach with hgeval niah --job %s "
                 "--output_dir DIR)\n",
                 id.c_str(), id.c_str());
  }
  absl::StatusOr<v1::Job> job = watch(client, id);
  if (!job.ok()) return Fail(job.status());
  if (!job->has_niah()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("job ", id, " is not a NIAH job")));
  }
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    std::fprintf(stderr, "hgeval niah: job %s ended %s%s%s\n", id.c_str(),
                 v1::JobState_Name(job->state()).c_str(), job->error().empty() ? "" : ": ",
                 job->error().c_str());
    return 1;
  }
  const std::string out = niah::OutputDirFromFlags();
  if (absl::Status s = WriteNiahJobOutputs(*job, out); !s.ok()) return Fail(s);
  for (const v1::TaskResult& result : job->results()) {
    const auto& m = result.metrics();
    auto metric = [&](const char* name) {
      auto it = m.find(absl::StrCat(name, ",none"));
      return it == m.end() ? 0.0 : it->second;
    };
    std::printf(
        "job %s: %lld cells (%lld from the store)  weighted_avg_acc %.4f  niah_score "
        "%.4f  avg_acc %.4f\n",
        id.c_str(), static_cast<long long>(job->requests_done()),
        static_cast<long long>(job->requests_cached()), metric("weighted_avg_acc"),
        metric("niah_score"), metric("avg_acc"));
  }
  std::printf("wrote %s/{%s,%s,%s}\n", out.c_str(), niah::kNiahResultsJson, niah::kNiahGridCsv,
              niah::kNiahHeatmapPng);
  return 0;
}

}  // namespace hgeval::client
