// lm-evaluation-harness's traffic over hgeval-server's HTTP door beside `hgeval run` on
// the same tasks (issue 30): one fresh server each (so that neither route finds the
// other's results in the store), the bundled stories260K model on the CPU.
//   http  — what lm-eval's `local-completions` with `tokenizer_backend=remote` sends
//           (tests/server/lm_eval_http_model.h): per request two POST /tokenize calls on
//           one kept-alive session, then batched POST /v1/completions over token ids with
//           echo=true, logprobs=1, max_tokens=1, over --num_concurrent connections.
//   job   — `hgeval run --model M --tasks ... --limit N --bos=none` (one gRPC job).
// Prints JSON with the wall times, their ratio, the per-task accuracies of both routes
// and the servers' peak RSS. Exit status 1 when a route fails or the accuracies differ.
//   http_lm_eval_bench [--tasks=piqa,arc_easy,hellaswag] [--limit=50] [--batch_size=16]
//                      [--num_concurrent=4] [--repeats=3]
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tests/server/lm_eval_http_model.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

ABSL_FLAG(std::vector<std::string>, tasks,
          std::vector<std::string>({"piqa", "arc_easy", "hellaswag"}), "Tasks to run.");
ABSL_FLAG(int, limit, 50, "Docs per task.");
ABSL_FLAG(int, batch_size, 16, "Prompts per /v1/completions call (lm-eval's batch_size).");
ABSL_FLAG(int, num_concurrent, 4, "Completions calls in flight (lm-eval's num_concurrent).");
ABSL_FLAG(int, max_tokens, 1, "max_tokens of the scoring calls (lm-eval sends 1 and drops it).");
ABSL_FLAG(int, repeats, 3, "Runs of each route on its server; the best wall time is kept.");

namespace hgeval {
namespace {

using Json = nlohmann::json;

constexpr char kModel[] = "stories";

struct Server {
  testing::ServerProcess process;
  int http_port = 0;
};

absl::Status StartServer(const std::string& tag, Server* server) {
  const std::string dir = testing::MakeTempDir(tag);
  const std::string model_dir = testing::SourcePath("data/models/stories260K");
  if (absl::Status s = server->process.Start(
          dir, {absl::StrCat("--model=", kModel, "=", model_dir, "/stories260K.bin"),
                "--tokenizer=" + model_dir + "/tok512.bin", "--store=:memory:", "--preload=all",
                "--log=false", "--shutdown_grace_ms=0", "--http_listen=127.0.0.1:0",
                "--http_port_file=" + dir + "/http-port"});
      !s.ok()) {
    return s;
  }
  std::ifstream(dir + "/http-port") >> server->http_port;
  return testing::ConnectClient(server->process.address())->WaitServing(absl::Seconds(60));
}

// The 1-minute load average now (the machine is shared: it says what the times met).
double LoadAverage() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

// task -> acc of a results JSON.
Json Accuracies(const Json& results, const std::vector<std::string>& task_names) {
  Json out = Json::object();
  for (const std::string& name : task_names) out[name] = results["results"][name]["acc,none"];
  return out;
}

int Main() {
  const std::vector<std::string> task_names = absl::GetFlag(FLAGS_tasks);
  const int limit = absl::GetFlag(FLAGS_limit);
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));

  // Route 1: hgeval run, a fresh server, best of `repeats` (each later run on the same
  // server reuses nothing: jobs are recomputed unless cached, so each gets its own server).
  double job_seconds = 1e300;
  double job_cpu = 1e300;  // the server's CPU seconds, least of the repeats
  Json job_acc;
  int64_t job_peak_rss = 0;
  for (int r = 0; r < repeats; ++r) {
    Server server;
    if (absl::Status s = StartServer("http-lm-eval-bench-job", &server); !s.ok()) {
      std::fprintf(stderr, "job server: %s\n", s.ToString().c_str());
      return 1;
    }
    const std::string output = testing::MakeTempDir("http-lm-eval-bench-out") + "/results.json";
    std::string out;
    const double cpu_before = server.process.CpuSeconds();
    const absl::Time start = absl::Now();
    const int rc = testing::RunCommand(
        {testing::ClientBinary(), "run", "--server=" + server.process.address(),
         absl::StrCat("--model=", kModel), "--tasks=" + absl::StrJoin(task_names, ","),
         absl::StrCat("--limit=", limit), "--bos=none", "--output=" + output},
        &out);
    job_seconds = std::min(job_seconds, absl::ToDoubleSeconds(absl::Now() - start));
    job_cpu = std::min(job_cpu, server.process.CpuSeconds() - cpu_before);
    if (rc != 0) {
      std::fprintf(stderr, "hgeval run failed (%d): %s\n", rc, out.c_str());
      return 1;
    }
    std::ifstream in(output);
    job_acc = Accuracies(Json::parse(in), task_names);
    job_peak_rss = std::max(job_peak_rss, server.process.PeakRssKib());
    server.process.Stop(SIGTERM);
  }

  // Route 2: lm-eval's HTTP traffic.
  double http_seconds = 1e300;
  double http_cpu = 1e300;
  Json http_acc;
  int64_t http_calls = 0, http_peak_rss = 0;
  double tokenize_seconds = 0, completions_seconds = 0;
  for (int r = 0; r < repeats; ++r) {
    Server server;
    if (absl::Status s = StartServer("http-lm-eval-bench-http", &server); !s.ok()) {
      std::fprintf(stderr, "http server: %s\n", s.ToString().c_str());
      return 1;
    }
    testing::LmEvalHttpOptions http;
    http.port = server.http_port;
    http.model = kModel;
    http.batch_size = absl::GetFlag(FLAGS_batch_size);
    http.num_concurrent = absl::GetFlag(FLAGS_num_concurrent);
    http.max_tokens = absl::GetFlag(FLAGS_max_tokens);
    testing::LmEvalHttpModel model(http);
    tasks::EvaluatorOptions options;
    options.limit = limit;
    options.data_dir = testing::SourcePath("data");
    options.bootstrap_iters = 0;
    const double cpu_before = server.process.CpuSeconds();
    const absl::Time start = absl::Now();
    absl::StatusOr<tasks::EvaluationReport> report = tasks::RunTasks(model, task_names, options);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    http_cpu = std::min(http_cpu, server.process.CpuSeconds() - cpu_before);
    if (seconds < http_seconds) {
      http_seconds = seconds;
      tokenize_seconds = model.tokenize_seconds();
      completions_seconds = model.completions_seconds();
    }
    if (!report.ok()) {
      std::fprintf(stderr, "http route: %s\n", report.status().ToString().c_str());
      return 1;
    }
    http_acc = Accuracies(tasks::ResultsJson(*report), task_names);
    http_calls = model.http_calls();
    http_peak_rss = std::max(http_peak_rss, server.process.PeakRssKib());
    server.process.Stop(SIGTERM);
  }

  const double ratio = http_seconds / job_seconds;
  const Json out = {{"benchmark", "http_lm_eval"},
                    {"model", "data/models/stories260K (stories260K.bin, tok512.bin)"},
                    {"tasks", task_names},
                    {"limit", limit},
                    {"batch_size", absl::GetFlag(FLAGS_batch_size)},
                    {"num_concurrent", absl::GetFlag(FLAGS_num_concurrent)},
                    {"repeats_best_of", repeats},
                    {"hgeval_run_seconds", job_seconds},
                    {"http_lm_eval_seconds", http_seconds},
                    {"http_over_run", ratio},
                    {"http_tokenize_seconds", tokenize_seconds},
                    {"http_completions_seconds", completions_seconds},
                    {"http_calls_per_run", http_calls},
                    {"acc_hgeval_run", job_acc},
                    {"acc_http", http_acc},
                    {"server_peak_rss_kib", {{"run", job_peak_rss}, {"http", http_peak_rss}}},
                    {"server_cpu_seconds", {{"run", job_cpu}, {"http", http_cpu}}},
                    {"load_average", LoadAverage()},
                    {"hardware_threads", std::thread::hardware_concurrency()}};
  std::printf("%s\n", out.dump(2).c_str());
  return job_acc == http_acc ? 0 : 1;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hgeval::Main();
}
