#include "server/jobs/job_shard_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/jobs/job_shard_plan_cache.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

namespace {

// Task t's docs as ranges of about `ranges` equal costs, cut on doc boundaries, each range
// keeping at least one doc for each later range.
std::vector<std::vector<int64_t>> CutIntoRanges(const std::vector<int64_t>& per_doc,
                                                int64_t ranges) {
  const int64_t docs = static_cast<int64_t>(per_doc.size());
  const int64_t cost = std::accumulate(per_doc.begin(), per_doc.end(), int64_t{0});
  std::vector<std::vector<int64_t>> cut;
  int64_t begin = 0, cumulative = 0;
  for (int64_t r = 1; r <= ranges; ++r) {
    // Range r ends at the first doc boundary where the running cost reaches r/ranges of
    // the task's.
    const int64_t goal = cost * r / ranges;
    std::vector<int64_t>& range = cut.emplace_back();
    int64_t end = begin;
    while (end < docs - (ranges - r) && (end == begin || cumulative < goal || r == ranges)) {
      cumulative += per_doc[static_cast<size_t>(end)];
      range.push_back(end);
      ++end;
    }
    begin = end;
  }
  return cut;
}

// The smallest doc of each doc's group: docs sharing a key, directly or through others.
std::vector<int64_t> FirstDocSharingARequest(const std::vector<std::vector<uint64_t>>& keys) {
  std::vector<int64_t> parent(keys.size());
  std::iota(parent.begin(), parent.end(), int64_t{0});
  auto root = [&](int64_t d) {
    while (parent[static_cast<size_t>(d)] != d) {
      parent[static_cast<size_t>(d)] = parent[static_cast<size_t>(parent[static_cast<size_t>(d)])];
      d = parent[static_cast<size_t>(d)];
    }
    return d;
  };
  absl::flat_hash_map<uint64_t, int64_t> first_doc_of_key;
  for (size_t d = 0; d < keys.size(); ++d) {
    for (uint64_t key : keys[d]) {
      auto [it, inserted] = first_doc_of_key.try_emplace(key, static_cast<int64_t>(d));
      if (inserted) continue;
      const int64_t a = root(it->second), b = root(static_cast<int64_t>(d));
      parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
  }
  std::vector<int64_t> first(keys.size());
  for (size_t d = 0; d < keys.size(); ++d) first[d] = root(static_cast<int64_t>(d));
  return first;
}

// Moves every doc into the range of its group's first doc; drops emptied ranges.
void CoLocateGroups(const std::vector<int64_t>& first_doc, std::vector<std::vector<int64_t>>& cut) {
  std::vector<size_t> range_of(first_doc.size());
  for (size_t r = 0; r < cut.size(); ++r) {
    for (int64_t d : cut[r]) range_of[static_cast<size_t>(d)] = r;
  }
  std::vector<std::vector<int64_t>> moved(cut.size());
  for (size_t d = 0; d < first_doc.size(); ++d) {
    moved[range_of[static_cast<size_t>(first_doc[d])]].push_back(static_cast<int64_t>(d));
  }
  std::erase_if(moved, [](const std::vector<int64_t>& range) { return range.empty(); });
  cut = std::move(moved);
}

std::vector<ShardSpan> Split(const std::vector<std::vector<int64_t>>& requests_per_doc,
                             const std::vector<std::vector<std::vector<uint64_t>>>* keys,
                             int64_t target_requests) {
  target_requests = std::max<int64_t>(1, target_requests);
  std::vector<ShardSpan> work;
  std::vector<int> split_tasks;
  for (size_t t = 0; t < requests_per_doc.size(); ++t) {
    const std::vector<int64_t>& per_doc = requests_per_doc[t];
    const int64_t docs = static_cast<int64_t>(per_doc.size());
    const int64_t cost = std::accumulate(per_doc.begin(), per_doc.end(), int64_t{0});
    const int64_t ranges = std::clamp<int64_t>(
        std::llround(static_cast<double>(cost) / static_cast<double>(target_requests)), 1,
        std::max<int64_t>(1, docs));
    std::vector<std::vector<int64_t>> cut;
    if (ranges > 1) cut = CutIntoRanges(per_doc, ranges);
    if (keys != nullptr && cut.size() > 1) CoLocateGroups(FirstDocSharingARequest((*keys)[t]), cut);
    if (cut.size() <= 1) {
      work.push_back({ShardKind::kWholeTask, static_cast<int>(t), {}, cost, {}});
      continue;
    }
    split_tasks.push_back(static_cast<int>(t));
    for (std::vector<int64_t>& range : cut) {
      int64_t range_cost = 0;
      for (int64_t d : range) range_cost += per_doc[static_cast<size_t>(d)];
      work.push_back({ShardKind::kDocRange, static_cast<int>(t), std::move(range), range_cost, {}});
    }
  }
  std::stable_sort(work.begin(), work.end(),
                   [](const ShardSpan& a, const ShardSpan& b) { return a.requests > b.requests; });
  for (int t : split_tasks) {
    ShardSpan report{ShardKind::kReport, t, {}, 0, {}};
    for (size_t i = 0; i < work.size(); ++i) {
      if (work[i].task == t) report.waits_for.push_back(static_cast<int>(i));
    }
    work.push_back(std::move(report));
  }
  return work;
}

}  // namespace

std::vector<ShardSpan> SplitTasksIntoShards(
    const std::vector<std::vector<int64_t>>& requests_per_doc, int64_t target_requests) {
  return Split(requests_per_doc, nullptr, target_requests);
}

std::vector<ShardSpan> SplitTasksIntoShards(
    const std::vector<std::vector<std::vector<uint64_t>>>& keys, int64_t target_requests) {
  std::vector<std::vector<int64_t>> requests_per_doc;
  for (const auto& task : keys) {
    std::vector<int64_t>& counts = requests_per_doc.emplace_back();
    for (const auto& doc : task) counts.push_back(static_cast<int64_t>(doc.size()));
  }
  return Split(requests_per_doc, &keys, target_requests);
}

namespace {

// FNV-1a over a field's length and bytes (the length keeps "ab"+"c" apart from "a"+"bc").
class Fnv1a {
 public:
  void Add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ULL;
    }
  }
  void AddField(const void* data, size_t size) {
    const uint64_t length = size;
    Add(&length, sizeof(length));
    Add(data, size);
  }
  void AddString(std::string_view text) { AddField(text.data(), text.size()); }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t RequestKey(const tasks::Request& request) {
  Fnv1a fnv;
  const int32_t fixed[] = {static_cast<int32_t>(request.type), request.max_gen_toks,
                           request.windowless ? 1 : 0};
  fnv.AddField(fixed, sizeof(fixed));
  fnv.AddString(request.context);
  fnv.AddString(request.continuation);
  for (const std::string& stop : request.until) fnv.AddString(stop);
  fnv.AddField(request.tokens.data(), request.tokens.size() * sizeof(int32_t));
  fnv.AddField(request.targets.data(), request.targets.size() * sizeof(int32_t));
  for (const tasks::ClassifyDocument& document : request.documents) {
    fnv.AddString(document.text);
    fnv.AddField(document.pixels.data(), document.pixels.size());
    fnv.AddField(&document.channels, sizeof(document.channels));
  }
  return fnv.hash();
}

int64_t ShardTargetRequests(int64_t total_requests) {
  return std::max(kMinShardRequests, (total_requests + kShardsPerJob - 1) / kShardsPerJob);
}

namespace {

absl::StatusOr<std::shared_ptr<const JobShardPlan>> ComputePlan(const v1::Job& job,
                                                                const std::string& data_dir) {
  auto plan = std::make_shared<JobShardPlan>();
  if (job.has_niah() || job.tasks_size() == 0) {
    plan->shards.push_back({ShardKind::kWholeTask, 0, {}, 0, {}});
    plan->docs.resize(1);
    return plan;
  }
  std::vector<std::vector<std::vector<uint64_t>>> keys;  // [task][doc][request]
  int64_t total = 0;
  for (const std::string& name : job.tasks()) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) return task.status();
    absl::StatusOr<std::vector<tasks::Doc>> docs = (*task)->LoadDocs(data_dir);
    if (!docs.ok()) return docs.status();
    docs->resize(static_cast<size_t>(
        tasks::EffectiveDocCount(static_cast<int64_t>(docs->size()), job.limit())));
    std::vector<std::vector<uint64_t>>& task_keys = keys.emplace_back();
    for (const tasks::Doc& doc : *docs) {
      absl::StatusOr<std::vector<tasks::Request>> requests = (*task)->Requests(doc);
      if (!requests.ok()) return requests.status();
      std::vector<uint64_t>& doc_keys = task_keys.emplace_back();
      for (const tasks::Request& request : *requests) doc_keys.push_back(RequestKey(request));
      total += static_cast<int64_t>(requests->size());
    }
    plan->docs.push_back(*std::move(docs));
  }
  // A job's own size is floored too: each shard is a store row and a claim, so a job never
  // holds more than one per kMinShardRequests requests.
  const int64_t target = job.options().shard_requests() > 0
                             ? std::max(kMinShardRequests, job.options().shard_requests())
                             : ShardTargetRequests(total);
  plan->shards = SplitTasksIntoShards(keys, target);
  return plan;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const JobShardPlan>> PlanJobShards(const v1::Job& job,
                                                                  const std::string& data_dir) {
  // The plans of the jobs a replica is working on: a few, within 256 MiB of docs.
  static auto* cache = new JobShardPlanCache(int64_t{256} << 20, 8);
  const std::string key = absl::StrCat(job.id(), "\n", data_dir);
  return cache->FindOrCompute(key, [&] { return ComputePlan(job, data_dir); });
}

}  // namespace hgeval::server
