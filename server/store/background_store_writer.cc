#include "server/store/background_store_writer.h"

#include "absl/time/clock.h"

namespace hgeval::server {

BackgroundStoreWriter::BackgroundStoreWriter(ResultStore* store, Written on_written)
    : store_(store), on_written_(std::move(on_written)), thread_([this] { Loop(); }) {}

BackgroundStoreWriter::~BackgroundStoreWriter() { Finish().IgnoreError(); }

absl::Status BackgroundStoreWriter::Put(Rows rows) {
  absl::MutexLock lock(&mu_);
  if (!status_.ok()) return status_;
  if (!rows.empty()) queue_.push_back(std::move(rows));
  return absl::OkStatus();
}

absl::Status BackgroundStoreWriter::Finish() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  return status_;
}

double BackgroundStoreWriter::seconds() const {
  absl::MutexLock lock(&mu_);
  return seconds_;
}

void BackgroundStoreWriter::Loop() {
  for (;;) {
    Rows rows;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](BackgroundStoreWriter* w)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) { return !w->queue_.empty() || w->done_; },
          this));
      if (queue_.empty()) return;  // done and drained
      rows = std::move(queue_.front());
      queue_.pop_front();
      if (!status_.ok()) continue;  // after an error nothing more is written
    }
    const absl::Time start = absl::Now();
    absl::Status written = store_->PutMany(rows);
    if (written.ok() && on_written_) on_written_(rows.size());
    absl::MutexLock lock(&mu_);
    seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
    if (status_.ok()) status_ = written;
  }
}

}  // namespace hgeval::server
