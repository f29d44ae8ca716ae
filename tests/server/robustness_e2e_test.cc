// End to end: requests a careless or hostile client might send, and server events (SIGTERM
// mid-call), against a real hgeval-server process. Each case is a defect that was found
// on the server; the test pins the fixed behaviour (a clear status, bounded memory, the
// server still up).
#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/store/result_store.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

std::vector<std::string> GoldenArgs(const std::string& dir) {
  std::vector<std::string> args = testing::GoldenServerArgs(dir);
  args.push_back("--preload=all");
  return args;
}

std::unique_ptr<client::Client> Connect(const ServerProcess& server) {
  client::ClientOptions options;
  options.servers = {server.address()};
  options.timeout = absl::Seconds(120);
  auto client = client::Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->WaitServing(absl::Seconds(30)).ok());
  return *std::move(client);
}

void ExpectStatus(const absl::Status& status, absl::StatusCode code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(message)) << status;
}

// A Loglikelihood call of `pairs` pairs of `tokens` ids each.
v1::LoglikelihoodRequest IdsCall(int pairs, int tokens) {
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  request.set_no_cache(true);
  for (int p = 0; p < pairs; ++p) {
    v1::LoglikelihoodPair* pair = request.add_pairs();
    for (int t = 0; t < tokens - 1; ++t) pair->add_context_ids(3 + (p * 7 + t * 13) % 500);
    pair->add_continuation_ids(5);
  }
  return request;
}

// Text of `bytes` bytes the tok512 tokenizer splits into many pieces.
std::string LongText(size_t bytes) {
  std::string text;
  text.reserve(bytes);
  while (text.size() < bytes) text += "Once upon a time there was a little girl named Lily. ";
  text.resize(bytes);
  return text;
}

// Text is counted before it is tokenized: a 32 MB context is refused with the limit in
// the message and without the server's memory growing by what tokenizing it would take
// (it used to add ~0.9 GB per call); eight at once do not add up either.
TEST(RequestLimitsTest, OversizedTextIsRefusedBeforeTokenizing) {
  const std::string dir = testing::MakeTempDir("limits-bytes");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--max_message_bytes=67108864");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  const int64_t rss_before = server.PeakRssKib();
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  request.set_truncate(true);
  v1::LoglikelihoodPair* pair = request.add_pairs();
  pair->set_context(LongText(32u << 20));
  pair->set_continuation(" end");
  std::vector<std::future<absl::Status>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(
        std::async(std::launch::async, [&] { return client->Loglikelihood(request).status(); }));
  }
  for (auto& call : calls) {
    ExpectStatus(call.get(), absl::StatusCode::kResourceExhausted, "--max_request_bytes");
  }
  v1::LoglikelihoodRollingRequest rolling;
  rolling.set_model("hgrn2");
  rolling.add_inputs()->set_text(LongText(9u << 20));
  ExpectStatus(client->LoglikelihoodRolling(rolling).status(), absl::StatusCode::kResourceExhausted,
               "at most 8388608");
  v1::GenerateRequest generate;
  generate.set_model("hgrn2");
  generate.set_prompt(LongText(9u << 20));
  generate.set_max_tokens(1);
  ExpectStatus(client->Generate(generate).status(), absl::StatusCode::kResourceExhausted,
               "bytes of text");
  // Received messages cost their size a few times over in gRPC's buffers; tokenizing
  // 8 x 32 MB would have cost gigabytes.
  const int64_t growth_mib = (server.PeakRssKib() - rss_before) / 1024;
  RecordProperty("peak_rss_growth_mib", static_cast<int>(growth_mib));
  std::printf("server peak RSS grew by %lld MiB\n", static_cast<long long>(growth_mib));
  EXPECT_LT(growth_mib, 640) << "peak RSS grew by " << growth_mib << " MiB";
  EXPECT_TRUE(client->ListModels().ok());  // still up
}

// --max_request_tokens counts the tokens a call submits, before truncation: a context of
// 5,000 tokens is refused under a 4,096 limit even with truncate set (it used to be cut to
// the model's length first and then counted).
TEST(RequestLimitsTest, TokenLimitCountsTokensBeforeTruncation) {
  const std::string dir = testing::MakeTempDir("limits-tokens");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--max_request_tokens=4096");
  args.push_back("--max_sequence_tokens=256");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  request.set_truncate(true);
  v1::LoglikelihoodPair* pair = request.add_pairs();
  std::string context;
  while (context.size() < 20000) context += "a b c d e f g h ";
  pair->set_context(context);
  pair->set_continuation(" i");
  ExpectStatus(client->Loglikelihood(request).status(), absl::StatusCode::kResourceExhausted,
               "counted before truncation");
  // The same as ids, and a call within the limit still runs (truncated to 256).
  ExpectStatus(client->Loglikelihood(IdsCall(1, 5000)).status(),
               absl::StatusCode::kResourceExhausted, "--max_request_tokens");
  v1::LoglikelihoodRequest fits = IdsCall(1, 4000);
  fits.set_truncate(true);
  auto response = client->Loglikelihood(fits);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->results(0).context_tokens(), 256);
}

// SIGTERM with --shutdown_grace_ms=1000 while a call needing tens of seconds runs: new
// calls are refused at once with UNAVAILABLE, the long call ends with UNAVAILABLE when the
// grace runs out, and the process exits soon after (it used to finish the call first: 33 s).
TEST(ShutdownTest, GraceIsHonouredForCallsInFlight) {
  const std::string dir = testing::MakeTempDir("shutdown-grace");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--shutdown_grace_ms=1000");
  args.push_back("--max_request_tokens=4194304");
  args.push_back("--max_sequence_tokens=4096");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  const v1::LoglikelihoodRequest long_call = IdsCall(1024, 4096);  // 4M tokens
  std::future<absl::Status> in_flight =
      std::async(std::launch::async, [&] { return client->Loglikelihood(long_call).status(); });
  absl::SleepFor(absl::Seconds(2));  // the call is admitted and running
  ASSERT_EQ(in_flight.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the long call finished too early to test shutdown";
  const absl::Time signalled = absl::Now();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time late_start = absl::Now();
  ExpectStatus(client->ListModels().status(), absl::StatusCode::kUnavailable, "not serving");
  EXPECT_LT(absl::Now() - late_start, absl::Seconds(1));
  ExpectStatus(in_flight.get(), absl::StatusCode::kUnavailable, "grace period");
  EXPECT_EQ(server.Stop(0 /* already signalled: just reap */), 0);
  // Grace 1 s, plus stopping the schedulers (they drop work nobody waits for).
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(10));
}

// Every byte a call brings counts against --max_request_bytes (issue 29 item 4), not only
// its texts: 9 MiB of Generate stop strings, of a model name or of a NIAH job's stop
// strings are refused with RESOURCE_EXHAUSTED before anything is tokenized or stored
// (a job's 60 MB of stop strings used to be stored and copied to every watcher).
TEST(RequestLimitsTest, EveryByteOfACallCountsNotOnlyItsText) {
  const std::string dir = testing::MakeTempDir("limits-every-byte");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--data_dir=" + SourcePath("data"));
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  const std::string nine_mib = LongText(9u << 20);
  v1::GenerateRequest generate;
  generate.set_model("hgrn2");
  generate.set_prompt("Once upon a time");
  generate.set_max_tokens(1);
  for (int i = 0; i < 9; ++i) generate.add_until(nine_mib.substr(0, 1u << 20));
  ExpectStatus(client->Generate(generate).status(), absl::StatusCode::kResourceExhausted,
               "--max_request_bytes");
  v1::LoglikelihoodRequest named = IdsCall(1, 4);
  named.set_model(nine_mib);
  ExpectStatus(client->Loglikelihood(named).status(), absl::StatusCode::kResourceExhausted,
               "--max_request_bytes");
  v1::SubmitJobRequest job;
  job.set_model("hgrn2");
  job.mutable_niah()->add_stop_strings(nine_mib);
  ExpectStatus(client->SubmitJob(job).status(), absl::StatusCode::kResourceExhausted,
               "--max_request_bytes");
  v1::ListJobsResponse listed = *client->ListJobs(0);
  EXPECT_EQ(listed.jobs_size(), 0) << "a refused job was stored";
  // Within the limit: still answered.
  generate.clear_until();
  generate.add_until("\n");
  EXPECT_TRUE(client->Generate(generate).ok());
}

// Names a call brings are echoed back cut short (issue 29, low list: a megabyte-long
// model name came back whole in the status message, that is in gRPC metadata).
TEST(RequestLimitsTest, StatusMessagesEchoLongNamesCutShort) {
  const std::string dir = testing::MakeTempDir("limits-echo");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--data_dir=" + SourcePath("data"));
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  const std::string long_name(1u << 20, 'm');
  v1::LoglikelihoodRequest named = IdsCall(1, 4);
  named.set_model(long_name);
  const absl::Status model = client->Loglikelihood(named).status();
  ExpectStatus(model, absl::StatusCode::kNotFound, "... (1048576 bytes)");
  EXPECT_LT(model.message().size(), 512u);
  const absl::Status job = client->GetJob(long_name).status();
  ExpectStatus(job, absl::StatusCode::kNotFound, "... (1048576 bytes)");
  EXPECT_LT(job.message().size(), 512u);
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks(long_name);
  const absl::Status task = client->SubmitJob(request).status();
  ExpectStatus(task, absl::StatusCode::kNotFound, "... (1048576 bytes)");
  EXPECT_LT(task.message().size(), 4096u);  // besides the list of known tasks
}

// A NIAH job of the golden LLaMA whose 36 cells form one batch of seconds.
v1::SubmitJobRequest LongNiahJob(const std::string& stop = "", const std::string& model = "llama") {
  v1::SubmitJobRequest request;
  request.set_model(model);
  v1::NiahJobSpec& spec = *request.mutable_niah();
  for (int64_t l : {300, 340, 380, 420, 460, 500}) spec.add_lengths(l);
  for (double d : {0, 20, 40, 60, 80, 100}) spec.add_depths(d);
  spec.set_max_new_tokens(480);
  spec.set_ignore_eos(true);
  if (stop.empty()) {
    spec.set_no_stop_strings(true);
  } else {
    spec.add_stop_strings(stop);
  }
  spec.set_max_batch(36);
  return request;
}

std::vector<std::string> LlamaArgs(const std::string& dir) {
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--model=llama=" + SourcePath("tests/golden/llama"));
  args.push_back("--data_dir=" + SourcePath("data"));
  return args;
}

// Waits until the job runs (its cells counted); returns it.
v1::Job WaitRunning(client::Client& client, const std::string& id) {
  v1::Job job;
  for (int i = 0; i < 600; ++i) {
    absl::StatusOr<v1::Job> got = client.GetJob(id);
    if (got.ok()) job = *got;
    if (job.state() == v1::JOB_STATE_RUNNING && job.requests_total() > 0) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return job;
}

// WatchJob streams are capped (--max_watch_streams; 4,000 unread streams used to hold
// 4,616 threads) and ListJobs answers stay under their byte budget however large the
// specs (six jobs with 60 MB of stop strings made every listing fail: "Sent message larger
// than max"). The cap frees a slot when a stream ends.
TEST(JobStreamLimitsTest, WatchStreamsAreCappedAndListingsStayUnderTheirBudget) {
  const std::string dir = testing::MakeTempDir("watch-cap");
  ServerProcess server;
  std::vector<std::string> args = LlamaArgs(dir);
  args.push_back("--max_watch_streams=2");
  args.push_back("--shutdown_grace_ms=0");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  absl::StatusOr<std::string> running = client->SubmitJob(LongNiahJob());
  ASSERT_TRUE(running.ok()) << running.status();
  auto stub = v1::JobService::NewStub(client->channel());
  v1::WatchJobRequest watch;
  watch.set_job_id(*running);
  struct Stream {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader;
  };
  auto open = [&] {
    auto stream = std::make_unique<Stream>();
    stream->reader = stub->WatchJob(&stream->context, watch);
    return stream;
  };
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 2; ++i) {
    streams.push_back(open());
    v1::Job update;
    ASSERT_TRUE(streams.back()->reader->Read(&update)) << i;
    EXPECT_EQ(update.id(), *running);
  }
  {
    std::unique_ptr<Stream> third = open();
    v1::Job update;
    EXPECT_FALSE(third->reader->Read(&update));
    const grpc::Status status = third->reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(), HasSubstr("--max_watch_streams"));
  }
  // One stream ends: a new one is served (the server notices within its 200 ms poll).
  streams[0]->context.TryCancel();
  streams[0]->reader->Finish();
  bool reopened = false;
  for (int attempt = 0; attempt < 50 && !reopened; ++attempt) {
    std::unique_ptr<Stream> again = open();
    v1::Job update;
    reopened = again->reader->Read(&update);
    again->context.TryCancel();
    again->reader->Finish();
    if (!reopened) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(reopened);

  // Three queued jobs with 6 MiB of stop strings each (distinct specs): 18 MiB of specs.
  for (char c : {'a', 'b', 'c'}) {
    ASSERT_TRUE(client->SubmitJob(LongNiahJob(std::string(6u << 20, c))).ok());
  }
  absl::StatusOr<v1::ListJobsResponse> listed = client->ListJobs(0);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_GE(listed->omitted(), 1);
  EXPECT_EQ(listed->jobs_size() + listed->omitted(), 4);
  EXPECT_LE(listed->ByteSizeLong(), 16u << 20);
  EXPECT_GE(listed->jobs_size(), 2);  // the newest ones, as many as fit
  for (const v1::Job& job : listed->jobs()) ASSERT_TRUE(client->CancelJob(job.id()).ok());
  streams.clear();
}

// Watchers that never read share one serialized copy of each update (issue 29 item 4): 20
// unread WatchJob streams on a queued job with a 6 MiB spec, then a second version (the
// job cancelled) that waits behind the first. Each watcher used to keep several copies of
// the job (~325 MB per watcher for a 60 MB spec), then one or two (+235-265 MiB for 20
// watchers of a running job). Now one reader per job serializes each version once and
// every stream sends that buffer: +66-67 MiB for 20 or 60 watchers, +34 MiB with none (the
// busy job's decoding, the cancel's reads); c072093's server: +326 MiB.
TEST(JobStreamLimitsTest, UnreadWatchersShareOneCopyOfEachUpdate) {
  const std::string dir = testing::MakeTempDir("watch-memory");
  ServerProcess server;
  std::vector<std::string> args = LlamaArgs(dir);
  args.push_back("--shutdown_grace_ms=0");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  // The one job worker is busy with another sweep (no stop strings, its memory small), so
  // the watched job stays queued: the server's growth is the watchers' (a running job with
  // 6 MiB of stop strings grows by 117-175 MiB itself, at a moment that depends on the load).
  v1::SubmitJobRequest busy_job = LongNiahJob();  // 306 cells: ~23 s on a quiet machine
  busy_job.mutable_niah()->clear_depths();
  for (int depth = 0; depth <= 100; depth += 2) busy_job.mutable_niah()->add_depths(depth);
  absl::StatusOr<std::string> busy = client->SubmitJob(busy_job);
  ASSERT_TRUE(busy.ok()) << busy.status();
  ASSERT_EQ(WaitRunning(*client, *busy).state(), v1::JOB_STATE_RUNNING);
  absl::StatusOr<std::string> id = client->SubmitJob(LongNiahJob(std::string(6u << 20, 'x')));
  ASSERT_TRUE(id.ok()) << id.status();
  // The baseline once the server's peak has settled (the busy batch's setup, the submit).
  int64_t rss_before = server.PeakRssKib();
  for (int still = 0, i = 0; still < 4 && i < 80; ++i) {
    absl::SleepFor(absl::Milliseconds(250));
    const int64_t now = server.PeakRssKib();
    still = now == rss_before ? still + 1 : 0;
    rss_before = now;
  }
  absl::StatusOr<v1::Job> queued = client->GetJob(*id);
  ASSERT_TRUE(queued.ok()) << queued.status();
  ASSERT_EQ(queued->state(), v1::JOB_STATE_QUEUED);
  auto stub = v1::JobService::NewStub(client->channel());
  v1::WatchJobRequest watch;
  watch.set_job_id(*id);
  constexpr int watchers = 20;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Job>>> readers;
  for (int i = 0; i < watchers; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub->WatchJob(contexts.back().get(), watch));  // never read
  }
  absl::SleepFor(absl::Seconds(1));
  // A second version for every watcher: it waits behind the first, unsent.
  ASSERT_TRUE(client->CancelJob(*id).ok());
  absl::SleepFor(absl::Seconds(2));
  const int64_t growth_mib = (server.PeakRssKib() - rss_before) / 1024;
  RecordProperty("peak_rss_growth_mib", static_cast<int>(growth_mib));
  std::printf("%d unread watchers of a 6 MiB job: server peak RSS grew by %lld MiB\n", watchers,
              static_cast<long long>(growth_mib));
  // One copy per watcher would be 120 MiB more than the server's own ~28.
  EXPECT_LT(growth_mib, 100) << "the watchers hold a copy each";
  // Then they read: the job as queued, then as cancelled, and the end.
  for (int i = 0; i < watchers; ++i) {
    v1::Job job;
    ASSERT_TRUE(readers[i]->Read(&job));
    EXPECT_EQ(job.niah().stop_strings(0).size(), 6u << 20);
    while (job.state() != v1::JOB_STATE_CANCELLED && readers[i]->Read(&job)) {
    }
    EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
    EXPECT_EQ(job.niah().stop_strings(0).size(), 6u << 20);
    EXPECT_FALSE(readers[i]->Read(&job));
    EXPECT_TRUE(readers[i]->Finish().ok());
  }
  client->CancelJob(*busy).IgnoreError();
}

// A running NIAH job's stop strings are shared by its cells (engine/runtime/stop_strings.h),
// not copied into each cell's request and again into the decoder's batch: with 6 MiB of
// stop strings the 36-cell batch below grew c072093's server by 551-557 MiB; now 117-175
// (the rest is transient: the spec's reads, the job record's writes, the cells' digests).
TEST(JobStreamLimitsTest, ARunningJobsStopStringsAreSharedByItsCells) {
  const std::string dir = testing::MakeTempDir("stop-strings-memory");
  ServerProcess server;
  std::vector<std::string> args = LlamaArgs(dir);
  args.push_back("--shutdown_grace_ms=0");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  // The model is loaded by a first small job, so the growth below is the big one's.
  absl::StatusOr<std::string> warm = client->SubmitJob(LongNiahJob("\n\n"));
  ASSERT_TRUE(warm.ok()) << warm.status();
  ASSERT_EQ(WaitRunning(*client, *warm).state(), v1::JOB_STATE_RUNNING);
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(client->CancelJob(*warm).ok());
  absl::SleepFor(absl::Seconds(1));
  const int64_t rss_before = server.PeakRssKib();
  absl::StatusOr<std::string> id = client->SubmitJob(LongNiahJob(std::string(6u << 20, 'x')));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_EQ(WaitRunning(*client, *id).state(), v1::JOB_STATE_RUNNING);
  // The batch's 36 cells are set up and decoding (or done: the peak is what counts).
  absl::SleepFor(absl::Seconds(3));
  const int64_t growth_mib = (server.PeakRssKib() - rss_before) / 1024;
  RecordProperty("peak_rss_growth_mib", static_cast<int>(growth_mib));
  std::printf("a running 36-cell job with 6 MiB of stop strings: peak RSS grew by %lld MiB\n",
              static_cast<long long>(growth_mib));
  // Two copies per cell (its request, the decoder's) are 432 MiB.
  EXPECT_LT(growth_mib, 300) << "the cells hold a copy of the stop strings each";
  client->CancelJob(*id).IgnoreError();
}

// --shutdown_grace_ms bounds a NIAH job's batch in flight (issue 29 item 9): SIGTERM while
// one batch of 36 cells x 480 tokens decodes, and the process is gone within seconds (it
// used to finish the whole job first: 33 s); CancelJob likewise stops the batch.
TEST(ShutdownTest, GraceBoundsANiahBatchInFlight) {
  const std::string dir = testing::MakeTempDir("shutdown-niah");
  ServerProcess server;
  std::vector<std::string> args = LlamaArgs(dir);
  args.push_back("--shutdown_grace_ms=1000");
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  // CancelJob first: the job reaches CANCELLED and the worker takes the next job at once.
  absl::StatusOr<std::string> cancelled = client->SubmitJob(LongNiahJob("\n\n"));
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  ASSERT_EQ(WaitRunning(*client, *cancelled).state(), v1::JOB_STATE_RUNNING);
  absl::StatusOr<std::string> next = client->SubmitJob(LongNiahJob());
  ASSERT_TRUE(next.ok()) << next.status();
  absl::SleepFor(absl::Seconds(1));
  const absl::Time cancel_at = absl::Now();
  ASSERT_TRUE(client->CancelJob(*cancelled).ok());
  const v1::Job running = WaitRunning(*client, *next);
  const absl::Duration to_next = absl::Now() - cancel_at;
  ASSERT_EQ(running.state(), v1::JOB_STATE_RUNNING);
  std::printf("the next job started %.2f s after CancelJob\n", absl::ToDoubleSeconds(to_next));
  EXPECT_LT(to_next, absl::Seconds(3)) << "the cancelled batch ran on";

  absl::SleepFor(absl::Milliseconds(1500));
  const v1::Job before = *client->GetJob(*next);
  ASSERT_EQ(before.state(), v1::JOB_STATE_RUNNING);
  ASSERT_EQ(before.requests_done(), 0) << "the batch finished too early to test shutdown";
  const absl::Time signalled = absl::Now();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  EXPECT_EQ(server.Stop(0 /* already signalled: just reap */), 0);
  const absl::Duration exit_after = absl::Now() - signalled;
  std::printf("exit %.2f s after SIGTERM\n", absl::ToDoubleSeconds(exit_after));
  EXPECT_LT(exit_after, absl::Seconds(4));
}

// The store file deleted while the server runs (issue 29 item 7): jobs used to be accepted
// and finished into the deleted file, and were gone at the next start. Now the job runner's
// next poll logs store_file_lost, and SubmitJob is refused with UNAVAILABLE saying why.
TEST(DamagedStoreTest, AStoreDeletedWhileServingIsReportedNotWrittenInto) {
  const std::string dir = testing::MakeTempDir("store-deleted-e2e");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--data_dir=" + SourcePath("data"));
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  ASSERT_EQ(std::remove((dir + "/store.sqlite").c_str()), 0);
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks("arc_easy");
  request.set_limit(2);
  ExpectStatus(client->SubmitJob(request).status(), absl::StatusCode::kUnavailable,
               "was deleted or moved while the server ran");
  std::string log;
  for (int i = 0; i < 100 && log.find("store_file_lost") == std::string::npos; ++i) {
    std::ifstream in(server.log_path());
    log.assign(std::istreambuf_iterator<char>(in), {});
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(log, HasSubstr("store_file_lost"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("damaged")));
}

// A store whose jobs table is damaged (garbage written over the middle of the file): the
// server exits with status 2 and says what to do, instead of serving with a job runner
// that never started (jobs used to stay QUEUED forever).
TEST(DamagedStoreTest, UnreadableJobsTableStopsTheServerWithAClearMessage) {
  const std::string dir = testing::MakeTempDir("damaged-store");
  const std::string path = dir + "/store.sqlite";
  {
    auto store = server::ResultStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 300; ++i) {
      v1::Job job;
      job.set_id(absl::StrCat("job-", i));
      job.set_state(v1::JOB_STATE_SUCCEEDED);
      job.set_results_json(std::string(2000, 'x'));
      ASSERT_TRUE((*store)->PutJob({job.id(), job.state(), i, job.SerializeAsString()}).ok());
    }
  }
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  ASSERT_GT(size, 300 * 2000);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(size / 2);
    const std::string garbage(64 * 1024, '\x5a');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  ServerProcess server;
  (void)server.Start(dir, GoldenArgs(dir));  // GoldenArgs' store is `path`; the server may
                                             // write its port before it exits, or not
  if (server.running()) {
    EXPECT_EQ(server.Stop(0 /* exits by itself: reap */, absl::Seconds(30)), 2);
  }
  std::ifstream log(server.log_path());
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_THAT(text, HasSubstr("cannot read the jobs in --store"));
  EXPECT_THAT(text, HasSubstr("Move it aside"));
}

// Bit rot in a stored result: one flipped bit in a stored log-probability (a well-formed
// SQLite page, so integrity_check passes) used to be served as a cached answer. After a
// restart the same call gives the original number, computed afresh, and the log says so.
TEST(DamagedStoreTest, AFlippedBitInAStoredResultIsRecomputedNotServed) {
  const std::string dir = testing::MakeTempDir("bit-rot");
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  v1::LoglikelihoodPair* pair = request.add_pairs();
  pair->set_context("Once upon a time");
  pair->set_continuation(" there was");
  double original = 0;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(dir, GoldenArgs(dir)).ok());
    auto response = Connect(server)->Loglikelihood(request);
    ASSERT_TRUE(response.ok()) << response.status();
    original = response->results(0).logprob();
    EXPECT_EQ(server.Stop(SIGTERM), 0);
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/store.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* read = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db, "SELECT request_digest, response FROM results", -1, &read, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_step(read), SQLITE_ROW);
    const std::string digest(reinterpret_cast<const char*>(sqlite3_column_text(read, 0)));
    std::string blob(static_cast<const char*>(sqlite3_column_blob(read, 1)),
                     sqlite3_column_bytes(read, 1));
    sqlite3_finalize(read);
    ASSERT_EQ(blob[0], '\x09');  // field 1 (logprob), a double: its lowest mantissa bit
    blob[1] ^= 1;
    sqlite3_stmt* write = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE results SET response=?1 WHERE request_digest=?2", -1,
                                 &write, nullptr),
              SQLITE_OK);
    sqlite3_bind_blob(write, 1, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(write, 2, digest.c_str(), -1, SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(write), SQLITE_DONE);
    sqlite3_finalize(write);
    sqlite3_close(db);
  }
  ServerProcess server;
  ASSERT_TRUE(server.Start(dir, GoldenArgs(dir)).ok());
  auto client = Connect(server);
  auto again = client->Loglikelihood(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->results(0).logprob(), original);
  EXPECT_FALSE(again->results(0).cached());
  auto healed = client->Loglikelihood(request);  // rewritten with a good checksum
  ASSERT_TRUE(healed.ok());
  EXPECT_TRUE(healed->results(0).cached());
  EXPECT_EQ(healed->results(0).logprob(), original);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::ifstream log(server.log_path());
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_THAT(text, HasSubstr("event=store_row_damaged"));
}

// A model whose config declares 10^8 layers: refused before anything is allocated, the
// failure kept (one load attempt, not one per call: each used to cost 4.4 GB and 2 s) and
// reported as FAILED_PRECONDITION with the reason, in calls and in ListModels; fixing the
// files makes the next call load it.
TEST(ModelLoadTest, AFailedLoadIsKeptUntilTheFilesChange) {
  const std::string dir = testing::MakeTempDir("load-failure");
  const std::string root = dir + "/models";
  const std::string model = root + "/broken";
  std::filesystem::create_directories(model);
  const std::string golden = SourcePath("tests/golden/hgrn2");
  // A copy: a file symlink out of the root would not be followed.
  std::filesystem::copy_file(golden + "/model.safetensors", model + "/model.safetensors");
  std::string config;
  {
    std::ifstream in(golden + "/config.json");
    config.assign((std::istreambuf_iterator<char>(in)), {});
  }
  const std::string good = "\"num_hidden_layers\": 3";
  const size_t at = config.find(good);
  ASSERT_NE(at, std::string::npos);
  std::string broken = config;
  broken.replace(at, good.size(), "\"num_hidden_layers\": 100000000");
  std::ofstream(model + "/config.json") << broken;

  ServerProcess server;
  ASSERT_TRUE(server
                  .Start(dir, {"--model_root=" + root,
                               "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                               "--store=:memory:", "--threads=1"})
                  .ok());
  auto client = Connect(server);
  const int64_t rss_before = server.PeakRssKib();
  v1::LoglikelihoodRequest request = IdsCall(1, 4);
  request.set_model("broken");
  for (int i = 0; i < 3; ++i) {
    ExpectStatus(client->Loglikelihood(request).status(), absl::StatusCode::kFailedPrecondition,
                 "declares 100000000 layers but the checkpoint holds weights for 3");
  }
  EXPECT_LT((server.PeakRssKib() - rss_before) / 1024, 64) << "MiB of peak RSS growth";
  auto models = client->ListModels();
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->models_size(), 1);
  EXPECT_FALSE(models->models(0).loaded());
  EXPECT_THAT(models->models(0).load_error(), HasSubstr("could not be loaded"));
  {
    std::ifstream log(server.log_path());
    const std::string text((std::istreambuf_iterator<char>(log)), {});
    size_t attempts = 0;
    for (size_t p = text.find("event=model_load_failed"); p != std::string::npos;
         p = text.find("event=model_load_failed", p + 1)) {
      ++attempts;
    }
    EXPECT_EQ(attempts, 1u) << text;
  }
  absl::SleepFor(absl::Milliseconds(20));  // a visibly newer modification time
  std::ofstream(model + "/config.json") << config;
  auto fixed = client->Loglikelihood(request);
  EXPECT_TRUE(fixed.ok()) << fixed.status();
}

// --help lists every flag of the binary (hgeval-server and hgeval-niah used to print "No
// flags matched": absl only lists flags from files named after the binary).
// Two servers on one port used to both start (SO_REUSEPORT on gRPC and HTTP) and split
// the connections between them; the second now refuses to start and says why.
TEST(ExclusivePortTest, ASecondServerOnATakenPortRefusesToStart) {
  const std::string dir = testing::MakeTempDir("exclusive-port");
  ServerProcess first;
  std::vector<std::string> args = GoldenArgs(dir);
  args.insert(args.end(), {"--http_listen=127.0.0.1:0", "--http_port_file=" + dir + "/http-port"});
  ASSERT_TRUE(first.Start(dir, args).ok());
  std::string http_port;
  std::ifstream(dir + "/http-port") >> http_port;
  ASSERT_FALSE(http_port.empty());

  const std::string grpc_dir = testing::MakeTempDir("exclusive-port-grpc");
  ServerProcess grpc_twin;
  absl::Status grpc_taken =
      grpc_twin.Start(grpc_dir, GoldenArgs(grpc_dir), absl::Seconds(30), first.address());
  EXPECT_FALSE(grpc_taken.ok());
  EXPECT_THAT(std::string(grpc_taken.message()), HasSubstr("the port is in use"));

  const std::string http_dir = testing::MakeTempDir("exclusive-port-http");
  ServerProcess http_twin;
  args = GoldenArgs(http_dir);
  args.push_back("--http_listen=127.0.0.1:" + http_port);
  absl::Status http_taken = http_twin.Start(http_dir, args);
  EXPECT_FALSE(http_taken.ok());
  EXPECT_THAT(std::string(http_taken.message()), HasSubstr("Address already in use"));
  EXPECT_TRUE(first.running());
  first.Stop(SIGTERM);
}

// Ten identical SubmitJob calls with --job_workers=4 used to make ten jobs, four of them
// computing the same requests at once (compute count 4): they now share one job, and no
// request is computed twice.
TEST(JobDedupTest, IdenticalSubmissionsShareOneComputation) {
  const std::string dir = testing::MakeTempDir("job-dedup");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.insert(args.end(), {"--job_workers=4", "--data_dir=" + SourcePath("data")});
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks("arc_easy");
  request.set_limit(25);
  std::vector<std::string> ids(10);
  std::vector<std::thread> submitters;
  for (int i = 0; i < 10; ++i) {
    submitters.emplace_back([&, i] {
      absl::StatusOr<std::string> id = testing::ConnectClient(server.address())->SubmitJob(request);
      ids[i] = id.ok() ? *id : "";
    });
  }
  for (std::thread& t : submitters) t.join();
  for (const std::string& id : ids) EXPECT_EQ(id, ids[0]);
  absl::StatusOr<v1::Job> job = client->WatchJob(ids[0], nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  // Finished: the same spec again is a new job (answered from the store).
  absl::StatusOr<std::string> again = client->SubmitJob(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(*again, ids[0]);
  ASSERT_TRUE(client->WatchJob(*again, nullptr).ok());
  server.Stop(SIGTERM);
  auto store = server::ResultStore::Open(dir + "/store.sqlite");
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<server::StoreStats> stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->results, 0);
  EXPECT_EQ(stats->max_compute_count, 1) << "a request was computed more than once";
}

TEST(HelpTest, ServerAndNiahHelpListTheirFlags) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {testing::ServerBinary(),
       {"--model_root", "--max_request_bytes", "--max_request_tokens", "--shutdown_grace_ms",
        "--auth_token_file", "--store"}},
      {testing::NiahBinary(), {"--model", "--output_dir", "--lengths", "--depths"}}};
  for (const auto& [binary, flags] : cases) {
    std::string out;
    EXPECT_EQ(testing::RunCommand({binary, "--help"}, &out), 0) << binary;
    EXPECT_THAT(out, ::testing::Not(HasSubstr("No flags matched"))) << binary;
    for (const std::string& flag : flags) EXPECT_THAT(out, HasSubstr(flag)) << binary;
  }
}

// `hgeval score --input` with more lines than one call may carry (the server's default is
// 4,096 pairs) splits them into several calls instead of failing; output stays in order.
// `hgeval job ID --output=F` writes the finished job's results JSON to F (issue 29, low
// list: it wrote nothing), and fails saying why for a job without results.
TEST(CliTest, JobOutputWritesTheResults) {
  const std::string dir = testing::MakeTempDir("cli-job-output");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--data_dir=" + SourcePath("data"));
  ASSERT_TRUE(server.Start(dir, args).ok());
  auto client = Connect(server);
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks("arc_easy");
  request.set_limit(2);
  absl::StatusOr<std::string> id = client->SubmitJob(request);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_EQ(client->WatchJob(*id, nullptr)->state(), v1::JOB_STATE_SUCCEEDED);
  std::string out;
  ASSERT_EQ(testing::RunCommand({testing::ClientBinary(), "job", *id,
                                 "--server=" + server.address(), "--output=" + dir + "/r.json"},
                                &out),
            0)
      << out;
  std::ifstream in(dir + "/r.json");
  const std::string written((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(written, HasSubstr("\"arc_easy\""));
  // A job cancelled before any result: nothing to write is an error, not silence.
  absl::StatusOr<std::string> cancelled = client->SubmitJob(LongNiahJob("", "hgrn2"));
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  ASSERT_TRUE(client->CancelJob(*cancelled).ok());
  EXPECT_NE(testing::RunCommand({testing::ClientBinary(), "job", *cancelled,
                                 "--server=" + server.address(), "--output=" + dir + "/c.json"},
                                &out),
            0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.json"));
}

TEST(CliTest, ScoreInputLongerThanOneCallIsSplit) {
  const std::string dir = testing::MakeTempDir("cli-split");
  ServerProcess server;
  ASSERT_TRUE(server.Start(dir, GoldenArgs(dir)).ok());
  Connect(server);
  const int lines = 5000;
  {
    std::ofstream input(dir + "/pairs.jsonl");
    for (int i = 0; i < lines; ++i) {
      input << "{\"context_ids\": [1, " << 3 + i % 400 << "], \"continuation_ids\": [" << 5 + i % 7
            << "]}\n";
    }
  }
  std::string out;
  ASSERT_EQ(testing::RunCommand({testing::ClientBinary(), "score", "--server=" + server.address(),
                                 "--model=hgrn2", "--input=" + dir + "/pairs.jsonl"},
                                &out),
            0);
  std::vector<std::string> rows = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), static_cast<size_t>(lines));
  // Row i scored line i: its continuation id is echoed back.
  for (int i : {0, 1023, 1024, 4095, 4096, 4999}) {
    EXPECT_THAT(rows[i], HasSubstr(absl::StrCat("\"continuation_ids\":[", 5 + i % 7, "]")))
        << i << ": " << rows[i];
  }
}

}  // namespace
}  // namespace hgeval
