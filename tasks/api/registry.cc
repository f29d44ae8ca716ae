#include "tasks/api/registry.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hgeval::tasks {
namespace {

// lm-eval's own groups, as data; task families add theirs with RegisterTaskGroup (scrolls).
std::map<std::string, TaskGroup> BuiltInGroups() {
  const std::vector<std::string> commonsense = {"piqa",     "hellaswag",     "winogrande",
                                                "arc_easy", "arc_challenge", "openbookqa",
                                                "boolq",    "social_iqa"};
  std::vector<std::string> suite = commonsense;
  for (const char* name : {"lambada_openai", "lambada_standard", "wikitext"}) suite.push_back(name);
  std::map<std::string, TaskGroup> groups;
  groups["commonsense"] = {"commonsense", commonsense, ""};
  groups["lm_eval_suite"] = {"lm_eval_suite", std::move(suite), ""};
  return groups;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, TaskFactory> factories;
  std::map<std::string, TaskGroup> groups = BuiltInGroups();
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

bool RegisterTask(const std::string& name, TaskFactory factory) {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.factories.emplace(name, std::move(factory)).second;
}

absl::StatusOr<std::unique_ptr<Task>> CreateTask(const std::string& name) {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.factories.find(name);
  if (it == registry.factories.end()) {
    std::vector<std::string> known;
    for (const auto& [known_name, factory] : registry.factories) known.push_back(known_name);
    return absl::NotFoundError("unknown task \"" + name +
                               "\"; known tasks: " + absl::StrJoin(known, ", "));
  }
  return it->second();
}

std::vector<std::string> RegisteredTaskNames() {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry.factories) names.push_back(name);
  return names;
}

bool RegisterTaskGroup(TaskGroup group) {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  const std::string name = group.name;
  return registry.groups.emplace(name, std::move(group)).second;
}

std::vector<TaskGroup> RegisteredTaskGroups() {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<TaskGroup> groups;
  for (const auto& [name, group] : registry.groups) groups.push_back(group);
  return groups;
}

absl::StatusOr<std::vector<std::string>> ExpandTaskList(const std::string& list) {
  const std::vector<TaskGroup> groups = RegisteredTaskGroups();
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (absl::string_view piece : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    std::string name(absl::StripAsciiWhitespace(piece));
    if (auto group = std::find_if(groups.begin(), groups.end(),
                                  [&name](const TaskGroup& g) { return g.name == name; });
        group != groups.end()) {
      for (const auto& member : group->members) add(member);
    } else {
      add(name);
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("no task names given");
  for (const auto& name : out) {
    auto task = CreateTask(name);
    if (!task.ok()) return task.status();
  }
  return out;
}

}  // namespace hgeval::tasks
