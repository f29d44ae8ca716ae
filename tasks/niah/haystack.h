// The NIAH haystack: Paul Graham essays (data/niah/PaulGrahamEssays), read in sorted
// file-name order and concatenated whole, the whole set repeated until the token count
// reaches what the longest context needs (Kamradt's read_context_files, with a fixed
// order instead of glob order).
#ifndef HGEVAL_TASKS_NIAH_HAYSTACK_H_
#define HGEVAL_TASKS_NIAH_HAYSTACK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval::niah {

struct Essay {
  std::string name;  // file name, e.g. "addiction.txt"
  std::string text;
};

// Every *.txt file directly in `dir`, sorted by file name (byte order). NotFound when
// the folder is missing or holds no .txt file.
absl::StatusOr<std::vector<Essay>> ReadHaystackEssays(const std::string& dir);

// Tokens (no special tokens) of the essays concatenated in order, with the whole set
// appended again until the text encodes to at least `min_tokens` tokens. The text is
// encoded in one piece each time, so the tokens do not depend on how often it was
// repeated beyond what is needed.
absl::StatusOr<std::vector<int32_t>> BuildHaystackTokens(const Tokenizer& tokenizer,
                                                         const std::vector<Essay>& essays,
                                                         int64_t min_tokens);

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_HAYSTACK_H_
