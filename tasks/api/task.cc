#include "tasks/api/task.h"

namespace hgeval::tasks {

const char* RequestTypeName(RequestType type) {
  switch (type) {
    case RequestType::kLoglikelihood:
      return "loglikelihood";
    case RequestType::kLoglikelihoodRolling:
      return "loglikelihood_rolling";
    case RequestType::kGenerateUntil:
      return "generate_until";
    case RequestType::kTokenTargets:
      return "token_targets";
    case RequestType::kClassify:
      return "classify";
  }
  return "unknown";
}

}  // namespace hgeval::tasks
