// One serialized update per job version, shared by every WatchJob stream of that job
// (issue 29 item 4). One reader per watched job follows it in the store (JobManager::Watch)
// and serializes each new version once; every watcher is handed the same buffer. A watcher
// whose client does not read keeps the update it is sending and, beside it, only the
// newest one (JobWatcher::Offer replaces what was waiting): never a queue.
#ifndef HGEVAL_SERVER_JOBS_JOB_WATCH_FEED_H_
#define HGEVAL_SERVER_JOBS_JOB_WATCH_FEED_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/jobs/job_manager.h"

namespace hgeval::server {

// A WatchJob stream as the feed sees it. Both calls come with the feed's lock held, so
// they must not block (start a write, remember the update, finish the call).
class JobWatcher {
 public:
  virtual ~JobWatcher() = default;
  // The job's newest version, serialized.
  virtual void Offer(std::shared_ptr<const grpc::ByteBuffer> update) = 0;
  // No update follows: the job reached a final state (OK) or cannot be watched (why).
  virtual void End(const absl::Status& status) = 0;
};

// The Job message as bytes, identical to job.SerializeAsString(), in slices: a NIAH job's
// spec (field `niah`, most of its bytes, unchanged while it runs) is one slice that
// consecutive versions share. `spec` holds the previous version's spec slice and is
// replaced when the spec differs.
std::shared_ptr<const grpc::ByteBuffer> SerializeJobUpdate(hgeval::v1::Job job, grpc::Slice* spec);

class JobWatchFeed {
 public:
  // `outgoing` makes the Job that WatchJob sends from the stored one.
  JobWatchFeed(JobManager* jobs, std::function<hgeval::v1::Job(hgeval::v1::Job)> outgoing)
      : jobs_(jobs), outgoing_(std::move(outgoing)) {}
  // Waits for the readers; they stop once their watchers are gone or the JobManager stops.
  ~JobWatchFeed();

  // `watcher` is offered job `id`'s newest version now (when one was read) and every later
  // one, then ended. An error starting the reader ends it at once.
  void Subscribe(const std::string& id, JobWatcher* watcher);
  // After it returns, `watcher` is called no more.
  void Unsubscribe(const std::string& id, JobWatcher* watcher);

 private:
  struct Feed {
    std::vector<JobWatcher*> watchers;
    std::shared_ptr<const grpc::ByteBuffer> latest;
    grpc::Slice spec;  // the reader's, unlocked
    std::thread reader;
  };
  void Read(const std::string& id, const std::shared_ptr<Feed>& feed);
  void JoinEnded();

  JobManager* jobs_;
  const std::function<hgeval::v1::Job(hgeval::v1::Job)> outgoing_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Feed>> feeds_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  // Feeds whose reader has returned (or is returning): joined by the next Subscribe.
  std::vector<std::shared_ptr<Feed>> ended_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_WATCH_FEED_H_
