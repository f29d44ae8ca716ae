// The flags of an lm-eval run, declared once for the programs that run one: `hgeval run`
// (a server job, or --local in the client) and hgeval-eval (in process): --tasks, --limit,
// --num_fewshot, --output, --log_samples, --max_length, --data_dir (the server's too). A
// library of its own (hgeval_eval_flags), outside the tasks archive, so that only those
// programs have them.
#ifndef HGEVAL_TASKS_PROGRAMS_EVAL_FLAGS_H_
#define HGEVAL_TASKS_PROGRAMS_EVAL_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tasks/harness/evaluator.h"

namespace hgeval::tasks {

// --tasks as given (comma-separated names and groups; ExpandTaskList expands groups).
std::string TasksFlag();
// --tasks split at the commas.
std::vector<std::string> TaskNamesFromFlags();

// --limit, --data_dir (default: DefaultDataDir()) and --log_samples. InvalidArgument for a
// negative limit or a --num_fewshot other than 0 (hgeval evaluates zero-shot only).
absl::StatusOr<EvaluatorOptions> EvaluatorOptionsFromFlags();

// --limit as given (`hgeval jobs` reads it as the number of jobs to list).
double LimitFromFlags();
// --num_fewshot as given (0 unless refused above); recorded with a job.
int NumFewshotFromFlags();
// --max_length: lm-eval's max_length (0: the model's).
int64_t MaxLengthFromFlags();
// --data_dir, else DefaultDataDir() (data_dir_flags.cc: hgeval-server has this flag alone).
std::string DataDirFromFlags();
// --output: where the results JSON goes ("" for nowhere).
std::string OutputFromFlags();

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_PROGRAMS_EVAL_FLAGS_H_
