#include "tasks/programs/eval_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

ABSL_FLAG(std::string, tasks, "",
          "run: lm-eval task names, comma-separated; groups: commonsense, lm_eval_suite (all "
          "eleven), scrolls (the seven SCROLLS tasks). hgeval-eval: \"list\" prints the "
          "known tasks.");
ABSL_FLAG(double, limit, 0,
          "run: first N docs per task (0: all; in process, a value < 1 is a fraction). "
          "hgeval jobs: most jobs to list.");
ABSL_FLAG(int, num_fewshot, 0,
          "run: few-shot examples; only 0 (zero-shot) is supported, anything else is refused.");
ABSL_FLAG(std::string, output, "", "run: write the results JSON (lm-eval layout) here.");
ABSL_FLAG(bool, log_samples, false,
          "lm-eval's per-sample records: hgeval-eval writes lm-eval's "
          "samples_<task>_<time>.jsonl beside --output; hgeval run keeps them in the results "
          "JSON (under \"samples\").");
ABSL_FLAG(int64_t, max_length, 0,
          "lm-eval max_length (0: the model's: max_position_embeddings, else its context, "
          "else 2048).");

namespace hgeval::tasks {

std::string TasksFlag() { return absl::GetFlag(FLAGS_tasks); }

std::vector<std::string> TaskNamesFromFlags() {
  return absl::StrSplit(absl::GetFlag(FLAGS_tasks), ',', absl::SkipWhitespace());
}

absl::StatusOr<EvaluatorOptions> EvaluatorOptionsFromFlags() {
  if (absl::GetFlag(FLAGS_num_fewshot) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num_fewshot ", absl::GetFlag(FLAGS_num_fewshot),
                     " is not supported: hgeval evaluates zero-shot only (0)"));
  }
  EvaluatorOptions options;
  options.limit = absl::GetFlag(FLAGS_limit);
  if (!(options.limit >= 0)) return absl::InvalidArgumentError("--limit must be >= 0");
  options.data_dir = DataDirFromFlags();
  options.log_samples = absl::GetFlag(FLAGS_log_samples);
  return options;
}

double LimitFromFlags() { return absl::GetFlag(FLAGS_limit); }

int NumFewshotFromFlags() { return absl::GetFlag(FLAGS_num_fewshot); }

int64_t MaxLengthFromFlags() { return absl::GetFlag(FLAGS_max_length); }

std::string OutputFromFlags() { return absl::GetFlag(FLAGS_output); }

}  // namespace hgeval::tasks
