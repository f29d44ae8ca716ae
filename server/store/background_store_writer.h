// Writes result-store rows on a thread of its own, in the order given, so that a caller
// scoring batch after batch (a job on the GPU) does not wait for each batch's rows to be
// stored before starting the next one. Finish() waits for every row and returns the first
// write error; rows handed over before a crash may be lost, as a batch in flight would be,
// which is why `on_written` (called on the writer's thread after each batch is stored) and
// not Put() is what a caller counts as done.
#ifndef HGEVAL_SERVER_STORE_BACKGROUND_STORE_WRITER_H_
#define HGEVAL_SERVER_STORE_BACKGROUND_STORE_WRITER_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/store/result_store.h"

namespace hgeval::server {

class BackgroundStoreWriter {
 public:
  using Rows = std::vector<std::pair<StoreKey, std::string>>;

  using Written = std::function<void(size_t rows)>;

  explicit BackgroundStoreWriter(ResultStore* store, Written on_written = nullptr);
  ~BackgroundStoreWriter();  // Finish()es
  BackgroundStoreWriter(const BackgroundStoreWriter&) = delete;
  BackgroundStoreWriter& operator=(const BackgroundStoreWriter&) = delete;

  // Queues rows; returns the first write error seen so far (then nothing more is written).
  absl::Status Put(Rows rows);
  // Waits until every queued row is written; the first write error.
  absl::Status Finish();
  // Wall time the writer thread spent writing.
  double seconds() const;

 private:
  void Loop();

  ResultStore* const store_;
  const Written on_written_;
  mutable absl::Mutex mu_;
  std::deque<Rows> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  double seconds_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_BACKGROUND_STORE_WRITER_H_
