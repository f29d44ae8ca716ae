// LRA's ListOps generator (lra_benchmarks/data/listops.py): random operator trees over
// the digits 0-9 with [MIN, [MAX, [MED and [SM (sum mod 10), drawn from CPython's
// `random` module (metrics/python_random.h), so that a seed gives the same expressions,
// in the same order, as LRA's script run after random.seed(seed). LRA keeps its trees in
// a Python set, whose order is not reproducible; here the accepted trees are kept in the
// order they were drawn, duplicates dropped (as dict.fromkeys would).
#ifndef HGEVAL_TASKS_LRA_LISTOPS_GENERATOR_H_
#define HGEVAL_TASKS_LRA_LISTOPS_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tasks/lra/listops_data.h"

namespace hgeval::tasks::lra {

struct ListOpsGeneratorOptions {
  int max_depth = 10;  // LRA's --max_depth
  int max_args = 10;   // LRA's --max_args
  // Accepted lengths are strictly between these (LRA: 500 < length < 2000), where a
  // tree's length counts its leaves plus 2 per operator.
  int64_t min_length = 500;
  int64_t max_length = 2000;
  uint64_t seed = 0;
};

// `count` distinct examples: the expression in LRA's parenthesised form and its value
// (MED is int(np.median), i.e. the lower of the two middle values' mean, floored).
// InvalidArgument for options that can never produce a tree.
absl::StatusOr<std::vector<ListOpsExample>> GenerateListOps(const ListOpsGeneratorOptions& options,
                                                            int64_t count);

// The value of an expression in LRA's form ("( ( [MAX 2 ) 9 ) ] )" is 9); InvalidArgument
// naming the token where the expression is malformed.
absl::StatusOr<int> EvaluateListOps(const std::string& source);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_LISTOPS_GENERATOR_H_
