// The seven SCROLLS tasks as lm-evaluation-harness defines them (lm_eval/tasks/scrolls/
// task.py, version 2; spec §7): scrolls_govreport, scrolls_summscreenfd, scrolls_qmsum,
// scrolls_qasper, scrolls_narrativeqa, scrolls_quality, scrolls_contractnli.
//
// Metrics in lm-eval's form: rouge1/rouge2/rougeL (summaries) and f1 (qasper,
// narrativeqa) computed over the whole validation set by SCROLLS' metric script, and acc,
// acc_norm, em = 100 * acc_norm (quality, contractnli; loglikelihood ranking). Every task
// also reports "scrolls_score", the number the official SCROLLS benchmark takes from it:
// the geometric mean of R1/R2/RL, the f1, or the em; the "scrolls" group averages it.
#ifndef HGEVAL_TASKS_SCROLLS_SCROLLS_TASKS_H_
#define HGEVAL_TASKS_SCROLLS_SCROLLS_TASKS_H_

#include <memory>
#include <string>
#include <vector>

#include "tasks/api/task.h"

namespace hgeval::tasks {

// The seven task names, in the SCROLLS paper's order.
const std::vector<std::string>& ScrollsTaskNames();

// The task, or null for another name.
std::unique_ptr<Task> MakeScrollsTask(const std::string& name);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_SCROLLS_SCROLLS_TASKS_H_
