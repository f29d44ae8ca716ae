// ListOps data in LRA's release format (listops-1000/basic_{train,val,test}.tsv): a
// tab-separated file whose header names the columns `Source` and `Target` (either order),
// then one expression and its value (0-9) per line.
#ifndef HGEVAL_TASKS_LRA_LISTOPS_DATA_H_
#define HGEVAL_TASKS_LRA_LISTOPS_DATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::tasks::lra {

struct ListOpsExample {
  std::string source;  // "( ( ( [MAX 2 ) 9 ) ] )"
  int label = 0;       // 0-9
};

// Parses the TSV text; `name` is used in messages. InvalidArgument naming the line for a
// missing column, a label outside 0-9 or an empty expression.
absl::StatusOr<std::vector<ListOpsExample>> ParseListOpsTsv(const std::string& text,
                                                            const std::string& name);
// Reads and parses a file (plain or .gz).
absl::StatusOr<std::vector<ListOpsExample>> ReadListOpsTsv(const std::string& path);
// The TSV text (header "Source\tTarget") of `examples`.
std::string ListOpsTsv(const std::vector<ListOpsExample>& examples);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_LISTOPS_DATA_H_
