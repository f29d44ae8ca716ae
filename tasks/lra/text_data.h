// LRA's text-classification data (IMDB reviews, JSON lines {"text": ..., "label": 0|1} as
// exported from TFDS imdb_reviews / HF imdb) and document-retrieval data (the ACL
// Anthology Network pairs, tsv_data/new_aan_pairs.{train,eval,test}.tsv: no header,
// tab-separated `label id1 id2 text1 text2`).
#ifndef HGEVAL_TASKS_LRA_TEXT_DATA_H_
#define HGEVAL_TASKS_LRA_TEXT_DATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::tasks::lra {

struct TextExample {
  std::string text;
  int label = 0;
};

struct DocumentPair {
  int label = 0;  // 1 when the first paper cites the second
  std::string id1, id2;
  std::string text1, text2;
};

// InvalidArgument naming the line for a missing field or a label other than 0 or 1.
absl::StatusOr<std::vector<TextExample>> ParseImdbJsonl(const std::string& text,
                                                        const std::string& name);
absl::StatusOr<std::vector<TextExample>> ReadImdbJsonl(const std::string& path);

// The label column may be written as an integer or a float ("1" or "1.0", as LRA's TSVs
// have it).
absl::StatusOr<std::vector<DocumentPair>> ParseAanTsv(const std::string& text,
                                                      const std::string& name);
absl::StatusOr<std::vector<DocumentPair>> ReadAanTsv(const std::string& path);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_TEXT_DATA_H_
