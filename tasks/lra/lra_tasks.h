// The six Long Range Arena tasks (specs/niah-mqar-lra.md C.1): accuracy of an LRA
// classifier on the test split, one `classify` request per example. Data under the data
// folder, in the release layouts (docs/lra.md):
//   lra_listops     lra/listops/basic_test.tsv[.gz]                (tokens, 10 classes)
//   lra_text        lra/imdb/test.jsonl[.gz]                       (text, 2 classes)
//   lra_retrieval   lra/aan/new_aan_pairs.test.tsv[.gz]            (two texts, 2 classes)
//   lra_image       lra/cifar10/test_batch.bin                     (32x32 RGB, 10 classes)
//   lra_pathfinder  lra/pathfinder32/curv_contour_length_14/       (32x32 gray, 2 classes)
//   lra_pathx       lra/pathfinder128/curv_contour_length_14/      (128x128 gray, 2 classes)
// Pathfinder's test split is the last 10% of the metadata entries in file order (LRA's
// 80/10/10 split of the ordered data).
#ifndef HGEVAL_TASKS_LRA_LRA_TASKS_H_
#define HGEVAL_TASKS_LRA_LRA_TASKS_H_

#include <memory>
#include <string>
#include <vector>

#include "tasks/api/task.h"

namespace hgeval::tasks::lra {

enum class LraTaskKind { kListOps, kText, kRetrieval, kImage, kPathfinder, kPathX };

class LraTask : public Task {
 public:
  explicit LraTask(LraTaskKind kind);
  ~LraTask() override;

  std::string name() const override;
  double version() const override { return 1.0; }
  RequestType output_type() const override { return RequestType::kClassify; }
  nlohmann::json config() const override;
  std::vector<MetricSpec> metrics() const override;
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override;
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override;
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override;
  nlohmann::json Target(const Doc& doc) const override { return doc["label"]; }

 private:
  struct ImageCache;
  LraTaskKind kind_;
  // CIFAR-10 records loaded by LoadDocs; docs refer to them by index.
  std::unique_ptr<ImageCache> images_;
};

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_LRA_TASKS_H_
