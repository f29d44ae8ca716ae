// Tasks by lm-evaluation-harness name. Built-in tasks are always present; other modules
// (e.g. tasks/niah/) add theirs with HGEVAL_REGISTER_TASK in a .cc of the hgeval_tasks
// library (the library is linked whole-archive, so such registrations are never dropped).
#ifndef HGEVAL_TASKS_API_REGISTRY_H_
#define HGEVAL_TASKS_API_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tasks/api/task.h"

namespace hgeval::tasks {

using TaskFactory = std::function<std::unique_ptr<Task>()>;

// Adds a task; returns false (and keeps the first) when the name is taken.
bool RegisterTask(const std::string& name, TaskFactory factory);
// NotFound names the known tasks.
absl::StatusOr<std::unique_ptr<Task>> CreateTask(const std::string& name);
// Sorted.
std::vector<std::string> RegisteredTaskNames();

// A named group of tasks: --tasks NAME runs its members. With a score_metric, the results
// report the unweighted mean of that metric over the members under "groups" (only when
// every member ran).
struct TaskGroup {
  std::string name;
  std::vector<std::string> members;
  std::string score_metric;
};
// Adds a group; returns false (and keeps the first) when the name is taken.
bool RegisterTaskGroup(TaskGroup group);
// Sorted by name, the built-in groups included.
std::vector<TaskGroup> RegisteredTaskGroups();

// Expands a comma-separated list; every group name expands to its members: the built-in
// "commonsense" (the eight multiple-choice tasks) and "lm_eval_suite" (all eleven), and
// every group a task family registered.
absl::StatusOr<std::vector<std::string>> ExpandTaskList(const std::string& list);

}  // namespace hgeval::tasks

#define HGEVAL_TASK_CONCAT_INNER(a, b) a##b
#define HGEVAL_TASK_CONCAT(a, b) HGEVAL_TASK_CONCAT_INNER(a, b)
// HGEVAL_REGISTER_TASK("name", [] { return std::make_unique<MyTask>(); });
#define HGEVAL_REGISTER_TASK(name, factory)                                 \
  static const bool HGEVAL_TASK_CONCAT(hgeval_task_registered_, __LINE__) = \
      ::hgeval::tasks::RegisterTask(name, factory)

#endif  // HGEVAL_TASKS_API_REGISTRY_H_
