// Sets a memory budget's limit for a scope and restores it after, also when an assertion
// ends the test early (the host budget is shared by every test of a process).
#ifndef HGEVAL_TESTS_SUPPORT_SCOPED_BUDGET_LIMIT_H_
#define HGEVAL_TESTS_SUPPORT_SCOPED_BUDGET_LIMIT_H_

#include <cstddef>

#include "engine/util/memory_budget.h"

namespace hgeval::testing {

class ScopedBudgetLimit {
 public:
  ScopedBudgetLimit(MemoryBudget* budget, size_t limit)
      : budget_(budget), before_(budget->limit()) {
    budget_->SetLimit(limit);
  }
  ~ScopedBudgetLimit() { budget_->SetLimit(before_); }
  ScopedBudgetLimit(const ScopedBudgetLimit&) = delete;
  ScopedBudgetLimit& operator=(const ScopedBudgetLimit&) = delete;

 private:
  MemoryBudget* budget_;
  size_t before_;
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_SCOPED_BUDGET_LIMIT_H_
