// winogrande's partial-evaluation split of a doc (exposed for tests).
#ifndef HGEVAL_TASKS_WINOGRANDE_WINOGRANDE_TASK_H_
#define HGEVAL_TASKS_WINOGRANDE_WINOGRANDE_TASK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tasks/api/task.h"

namespace hgeval::tasks {

struct WinograndeParts {
  std::vector<std::string> contexts;  // sentence[:i] + option1, sentence[:i] + option2
  std::string target;                 // sentence[i + 1:].strip()
  int64_t gold = -100;                // answer "1" -> 0, "2" -> 1
};

absl::StatusOr<WinograndeParts> SplitWinogrande(const Doc& doc);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_WINOGRANDE_WINOGRANDE_TASK_H_
