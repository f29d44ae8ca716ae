#include "server/jobs/job_shard_plan_cache.h"

#include <utility>

#include "absl/synchronization/notification.h"

namespace hgeval::server {
namespace {

// A JSON value's heap: its node, plus a string's characters, an array's elements, or an
// object's entries (a tree node of about four pointers and the key each).
int64_t JsonBytes(const nlohmann::json& value) {
  constexpr int64_t kNode = sizeof(nlohmann::json);
  constexpr int64_t kMapEntry = 4 * sizeof(void*);
  int64_t bytes = kNode;
  if (value.is_string()) {
    bytes += static_cast<int64_t>(value.get_ref<const std::string&>().capacity());
  } else if (value.is_array()) {
    for (const nlohmann::json& element : value) bytes += JsonBytes(element);
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      bytes += kMapEntry + static_cast<int64_t>(sizeof(std::string) + it.key().capacity()) +
               JsonBytes(it.value());
    }
  }
  return bytes;
}

}  // namespace

int64_t EstimatedPlanBytes(const JobShardPlan& plan) {
  int64_t bytes = sizeof(JobShardPlan);
  for (const std::vector<tasks::Doc>& docs : plan.docs) {
    for (const tasks::Doc& doc : docs) bytes += JsonBytes(doc);
  }
  for (const ShardSpan& span : plan.shards) {
    bytes += sizeof(ShardSpan) + static_cast<int64_t>(span.docs.capacity() * sizeof(int64_t) +
                                                      span.waits_for.capacity() * sizeof(int));
  }
  return bytes;
}

std::shared_ptr<const JobShardPlan> JobShardPlanCache::FindLocked(const std::string& key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return entry.plan;
  }
  return nullptr;
}

std::shared_ptr<const JobShardPlan> JobShardPlanCache::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return FindLocked(key);
}

struct JobShardPlanCache::Flight {
  absl::Notification done;
  PlanOrError result;
};

JobShardPlanCache::PlanOrError JobShardPlanCache::FindOrCompute(
    const std::string& key, absl::FunctionRef<PlanOrError()> compute) {
  std::shared_ptr<Flight> flight;
  bool computes = false;
  {
    absl::MutexLock lock(&mu_);
    if (std::shared_ptr<const JobShardPlan> cached = FindLocked(key)) return cached;
    std::shared_ptr<Flight>& slot = flights_[key];
    if (slot == nullptr) {
      slot = std::make_shared<Flight>();
      computes = true;
    }
    flight = slot;
  }
  if (!computes) {
    flight->done.WaitForNotification();
    return flight->result;
  }
  flight->result = compute();
  if (flight->result.ok()) Insert(key, *flight->result, EstimatedPlanBytes(**flight->result));
  {
    absl::MutexLock lock(&mu_);
    flights_.erase(key);
  }
  flight->done.Notify();
  return flight->result;
}

void JobShardPlanCache::Insert(const std::string& key, std::shared_ptr<const JobShardPlan> plan,
                               int64_t bytes) {
  if (bytes > max_bytes_ || max_plans_ == 0) return;
  absl::MutexLock lock(&mu_);
  for (const Entry& entry : entries_) {
    if (entry.key == key) return;  // another caller planned the same job meanwhile
  }
  while (!entries_.empty() && (bytes_ + bytes > max_bytes_ || entries_.size() + 1 > max_plans_)) {
    bytes_ -= entries_.front().bytes;
    entries_.pop_front();
  }
  entries_.push_back({key, std::move(plan), bytes});
  bytes_ += bytes;
}

int64_t JobShardPlanCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

size_t JobShardPlanCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace hgeval::server
