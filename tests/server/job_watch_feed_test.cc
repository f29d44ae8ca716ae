#include "server/jobs/job_watch_feed.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::server {
namespace {
namespace v1 = ::hgeval::v1;

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

v1::Job NiahJob(int64_t done, const std::string& stop) {
  v1::Job job;
  job.set_id("job-1");
  job.set_model("llama");
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_requests_total(36);
  job.set_requests_done(done);
  job.set_current_task("niah");
  job.set_updated_at(1700000000 + done);
  job.set_results_json("{\"a\": 1}");
  job.mutable_niah()->set_mode("single");
  job.mutable_niah()->add_stop_strings(stop);
  job.set_results_csv("x,y\n1,2\n");
  job.set_results_bytes(17);
  return job;
}

// WatchJob's wire format is unchanged: the parts concatenate to the job's own
// serialization, fields in number order, results and spec included.
TEST(JobWatchFeedTest, AnUpdateIsTheJobsOwnSerialization) {
  grpc::Slice spec;
  for (const v1::Job& job : {NiahJob(3, std::string(1 << 20, 's')), v1::Job()}) {
    const std::string bytes = Bytes(*SerializeJobUpdate(job, &spec));
    EXPECT_EQ(bytes, job.SerializeAsString());
    v1::Job parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    EXPECT_EQ(parsed.DebugString(), job.DebugString());
  }
  v1::Job plain;
  plain.set_id("job-2");
  plain.set_requests_done(5);
  EXPECT_EQ(Bytes(*SerializeJobUpdate(plain, &spec)), plain.SerializeAsString());
}

// Versions that differ in progress share the spec's bytes (one copy however many versions
// watchers hold); a different spec gets its own.
TEST(JobWatchFeedTest, VersionsOfOneSpecShareItsBytes) {
  grpc::Slice spec;
  const std::string stop(1 << 20, 's');
  auto first = SerializeJobUpdate(NiahJob(1, stop), &spec);
  const uint8_t* shared = spec.begin();
  ASSERT_GT(spec.size(), 1u << 20);
  auto second = SerializeJobUpdate(NiahJob(2, stop), &spec);
  EXPECT_EQ(spec.begin(), shared) << "the second version copied the spec";
  EXPECT_NE(Bytes(*first), Bytes(*second));
  EXPECT_EQ(Bytes(*second), NiahJob(2, stop).SerializeAsString());
  auto changed = SerializeJobUpdate(NiahJob(2, std::string(1 << 20, 't')), &spec);
  EXPECT_NE(spec.begin(), shared);
  EXPECT_EQ(Bytes(*changed), NiahJob(2, std::string(1 << 20, 't')).SerializeAsString());
  // The first version's bytes stay valid (it holds a reference to the old spec).
  EXPECT_EQ(Bytes(*first), NiahJob(1, stop).SerializeAsString());
}

}  // namespace
}  // namespace hgeval::server
