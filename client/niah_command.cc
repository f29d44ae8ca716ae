#include "client/niah_command.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/niah_outputs.h"
#include "tasks/niah/output.h"

ABSL_DECLARE_FLAG(std::string, model);

ABSL_FLAG(std::string, mode, "easy", "niah: easy (question + answer in the needle) or standard.");
ABSL_FLAG(std::string, preset, "quick",
          "niah: grid preset, quick (6x6 up to 4K) or paper (35x35, 1K-16K).");
ABSL_FLAG(std::string, lengths, "",
          "niah: comma-separated context lengths (replace the preset's).");
ABSL_FLAG(std::string, depths, "", "niah: comma-separated depth percents (replace the preset's).");
ABSL_FLAG(int64_t, buffer, 200, "niah: tokens kept free of the context (Kamradt's buffer).");
ABSL_FLAG(int, max_new_tokens, 32, "niah: greedy tokens generated per cell.");
ABSL_FLAG(std::string, stop, "\\n",
          "niah: comma-separated stop strings (C escapes such as \\n); empty for none.");
ABSL_FLAG(bool, ignore_eos, false, "niah: do not stop at the EOS token.");
ABSL_FLAG(std::string, scorer, "rouge1", "niah: cell score, rouge1 (10 x ROUGE-1 F) or keyphrase.");
ABSL_FLAG(bool, stemmer, true, "niah: Porter-stem ROUGE tokens (rouge_score use_stemmer=True).");
ABSL_FLAG(double, threshold, 5.0, "niah: success = score >= threshold.");
ABSL_FLAG(double, depth_alpha, 1.01, "niah: depth weight ratio of the weighted accuracy.");
ABSL_FLAG(double, length_alpha, 1.01, "niah: length weight ratio of the weighted accuracy.");
ABSL_FLAG(bool, prefix_reuse, true,
          "niah: feed the haystack once with state snapshots (false: every prompt whole; same "
          "results).");
ABSL_FLAG(int, max_batch, 0,
          "niah: cells decoded together (0: 32 for recurrent models on CUDA, else 8).");
ABSL_FLAG(int64_t, max_cells, 0, "niah: run only this many cells, spread over the grid (0: all).");
ABSL_FLAG(int64_t, training_length, -1,
          "niah: dashed heatmap line at this length (-1: the model's max_position_embeddings, 0: "
          "none).");
ABSL_FLAG(std::string, out, "niah_out",
          "niah: output folder (niah_results.json, niah_grid.csv, niah_heatmap.png).");
ABSL_FLAG(std::string, job, "",
          "niah: re-attach to this job (e.g. after the client was stopped) instead of submitting.");

namespace hgeval::client {
namespace v1 = ::hgeval::v1;

absl::StatusOr<v1::NiahJobSpec> NiahSpecFromFlags() {
  v1::NiahJobSpec spec;
  spec.set_mode(absl::GetFlag(FLAGS_mode));
  spec.set_preset(absl::GetFlag(FLAGS_preset));
  for (absl::string_view item :
       absl::StrSplit(absl::GetFlag(FLAGS_lengths), ',', absl::SkipWhitespace())) {
    int64_t length = 0;
    if (!absl::SimpleAtoi(item, &length)) {
      return absl::InvalidArgumentError(absl::StrCat("--lengths: not a number: '", item, "'"));
    }
    spec.add_lengths(length);
  }
  for (absl::string_view item :
       absl::StrSplit(absl::GetFlag(FLAGS_depths), ',', absl::SkipWhitespace())) {
    double depth = 0;
    if (!absl::SimpleAtod(item, &depth)) {
      return absl::InvalidArgumentError(absl::StrCat("--depths: not a number: '", item, "'"));
    }
    spec.add_depths(depth);
  }
  spec.set_buffer_tokens(absl::GetFlag(FLAGS_buffer));
  spec.set_max_new_tokens(absl::GetFlag(FLAGS_max_new_tokens));
  const std::string stop = absl::GetFlag(FLAGS_stop);
  if (stop.empty()) spec.set_no_stop_strings(true);
  for (absl::string_view item : absl::StrSplit(stop, ',', absl::SkipEmpty())) {
    std::string unescaped, error;
    if (!absl::CUnescape(item, &unescaped, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("--stop: ", error));
    }
    spec.add_stop_strings(unescaped);
  }
  spec.set_ignore_eos(absl::GetFlag(FLAGS_ignore_eos));
  spec.set_scorer(absl::GetFlag(FLAGS_scorer));
  spec.set_no_stemmer(!absl::GetFlag(FLAGS_stemmer));
  spec.set_threshold(absl::GetFlag(FLAGS_threshold));
  spec.set_depth_alpha(absl::GetFlag(FLAGS_depth_alpha));
  spec.set_length_alpha(absl::GetFlag(FLAGS_length_alpha));
  spec.set_no_prefix_reuse(!absl::GetFlag(FLAGS_prefix_reuse));
  spec.set_max_batch(absl::GetFlag(FLAGS_max_batch));
  spec.set_max_cells(absl::GetFlag(FLAGS_max_cells));
  if (absl::GetFlag(FLAGS_training_length) >= 0) {
    spec.set_training_length(absl::GetFlag(FLAGS_training_length));
  }
  return spec;
}

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
    absl::StatusOr<v1::NiahJobSpec> spec = NiahSpecFromFlags();
    if (!spec.ok()) return Fail(spec.status());
    *request.mutable_niah() = *std::move(spec);
    absl::StatusOr<std::string> submitted = client.SubmitJob(request);
    if (!submitted.ok()) return Fail(submitted.status());
    id = *submitted;
    std::fprintf(stderr,
                 "submitted NIAH job %s (resumable: re-attach with hgeval niah --job %s --out "
                 "DIR)\n",
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
  const std::string out = absl::GetFlag(FLAGS_out);
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
