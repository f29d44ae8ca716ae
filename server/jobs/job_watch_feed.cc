#include "server/jobs/job_watch_feed.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

std::shared_ptr<const grpc::ByteBuffer> SerializeJobUpdate(v1::Job job, grpc::Slice* spec) {
  // Protobuf writes fields in number order, so the three parts (fields 1-15, the spec 16,
  // then 17-18) concatenate to the usual serialization.
  v1::Job niah;
  if (job.has_niah()) niah.mutable_niah()->Swap(job.mutable_niah());
  job.clear_niah();
  v1::Job tail;
  tail.mutable_results_csv()->swap(*job.mutable_results_csv());
  tail.set_results_bytes(job.results_bytes());
  job.clear_results_bytes();
  const std::string head_bytes = job.SerializeAsString();
  const std::string niah_bytes = niah.SerializeAsString();
  const std::string tail_bytes = tail.SerializeAsString();
  if (spec->size() != niah_bytes.size() ||
      (!niah_bytes.empty() &&
       std::memcmp(spec->begin(), niah_bytes.data(), niah_bytes.size()) != 0)) {
    *spec = grpc::Slice(niah_bytes);
  }
  std::vector<grpc::Slice> slices;
  if (!head_bytes.empty()) slices.emplace_back(head_bytes);
  if (spec->size() > 0) slices.push_back(*spec);  // a reference, not a copy
  if (!tail_bytes.empty()) slices.emplace_back(tail_bytes);
  return std::make_shared<const grpc::ByteBuffer>(slices.data(), slices.size());
}

JobWatchFeed::~JobWatchFeed() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* running) { return *running == 0; }, &running_));
  }
  JoinEnded();
}

void JobWatchFeed::JoinEnded() {
  std::vector<std::shared_ptr<Feed>> ended;
  {
    absl::MutexLock lock(&mu_);
    ended.swap(ended_);
  }
  // Each has made its last use of the lock; join waits for it to return.
  for (const std::shared_ptr<Feed>& feed : ended) {
    if (feed->reader.joinable()) feed->reader.join();
  }
}

void JobWatchFeed::Subscribe(const std::string& id, JobWatcher* watcher) {
  JoinEnded();
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Feed>& feed = feeds_[id];
  if (feed != nullptr) {
    feed->watchers.push_back(watcher);
    if (feed->latest != nullptr) watcher->Offer(feed->latest);
    return;
  }
  feed = std::make_shared<Feed>();
  feed->watchers.push_back(watcher);
  try {
    feed->reader = std::thread([this, id, feed] { Read(id, feed); });
  } catch (const std::system_error& e) {
    feeds_.erase(id);
    watcher->End(absl::ResourceExhaustedError(
        std::string("cannot start a thread to watch the job: ") + e.what()));
    return;
  }
  ++running_;
}

void JobWatchFeed::Unsubscribe(const std::string& id, JobWatcher* watcher) {
  absl::MutexLock lock(&mu_);
  auto it = feeds_.find(id);
  if (it == feeds_.end()) return;
  std::vector<JobWatcher*>& watchers = it->second->watchers;
  watchers.erase(std::remove(watchers.begin(), watchers.end(), watcher), watchers.end());
}

void JobWatchFeed::Read(const std::string& id, const std::shared_ptr<Feed>& feed) {
  // The feed leaves the map when its last watcher has gone (a later watcher starts a new
  // reader) or when the reader returns; watchers still subscribed then are ended.
  auto leave_map = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = feeds_.find(id);
    if (it != feeds_.end() && it->second == feed) feeds_.erase(it);
  };
  const absl::Status status = jobs_->Watch(
      id,
      [&](v1::Job job) {
        std::shared_ptr<const grpc::ByteBuffer> update =
            SerializeJobUpdate(outgoing_(std::move(job)), &feed->spec);
        absl::MutexLock lock(&mu_);
        feed->latest = update;
        for (JobWatcher* watcher : feed->watchers) watcher->Offer(update);
        return true;
      },
      [&] {
        absl::MutexLock lock(&mu_);
        if (!feed->watchers.empty()) return false;
        leave_map();
        return true;
      });
  absl::MutexLock lock(&mu_);
  leave_map();
  for (JobWatcher* watcher : feed->watchers) watcher->End(status);
  feed->watchers.clear();
  feed->latest = nullptr;
  --running_;
  ended_.push_back(feed);
}

}  // namespace hgeval::server
