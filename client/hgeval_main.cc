// hgeval: command-line client for hgeval-server. Run `hgeval --help`.
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/niah_command.h"
#include "client/remote_language_model.h"
#include "client/results_table.h"
#include "client/sweep_command.h"
#include "engine/cli/command_line.h"
#include "engine/cli/common_flags.h"
#include "engine/cli/generation_flags.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tasks/harness/progress_bar.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(std::vector<std::string>, server, {"127.0.0.1:50051"},
          "Server: host:port, a gRPC target such as dns:///name:port (every address the name "
          "resolves to), or several host:port comma-separated. Several servers are one "
          "channel under gRPC's round_robin policy; for jobs they must share one store "
          "(hgeval-server --store=postgresql://...).");
ABSL_FLAG(std::string, token, "", "Bearer token (also $HGEVAL_AUTH_TOKEN, --token_file).");
ABSL_FLAG(std::string, token_file, "", "File holding the bearer token.");
ABSL_FLAG(bool, tls, false, "Use TLS.");
ABSL_FLAG(std::string, tls_ca, "", "PEM root certificate(s) for TLS (default: system roots).");
ABSL_FLAG(double, timeout, 0, "Per-call deadline in seconds (0: none).");
ABSL_FLAG(std::string, model, "", "Model name (see `hgeval models`).");
// score / generate / tokenize
ABSL_FLAG(std::string, context, "", "score: the context text.");
ABSL_FLAG(hgeval::cli::EscapedList, continuation, {},
          "score: continuations to score after --context, comma-separated (C escapes; \\x2c "
          "for a comma); one pair each.");
ABSL_FLAG(std::string, input, "",
          "score: JSON lines file of {\"context\", \"continuation\"} (or \"context_ids\", "
          "\"continuation_ids\"); rolling: JSON lines of {\"text\"}.");
ABSL_FLAG(std::string, text, "", "tokenize / rolling: the text.");
ABSL_FLAG(bool, token_logprobs, false, "score/rolling: print per-token log-probabilities.");
ABSL_FLAG(int, top_k, 0, "score: top-k alternatives per continuation token.");
ABSL_FLAG(bool, truncate, false, "score: left-truncate over-long pairs as lm-eval does.");
ABSL_FLAG(std::string, prompt, "", "generate: the prompt text.");
// run / jobs
ABSL_FLAG(double, reconnect_for, 600,
          "run/watch: keep re-watching a job this many seconds after the connection drops.");
ABSL_FLAG(int64_t, shard_requests, 0,
          "run: requests per shard of the job (a range of a task's docs) that the servers "
          "sharing its store claim one at a time; 0: about 1/64 of the job; at least 32.");
ABSL_FLAG(bool, local, false,
          "run: evaluate the tasks in this client, its model calls split over the --server "
          "replicas (default: a server job, which a fleet sharing a store "
          "splits into shards).");
ABSL_FLAG(double, wait, 0, "health: wait up to this many seconds for SERVING.");

namespace hgeval::client {
namespace {
namespace v1 = ::hgeval::v1;

// generate's --max_tokens when none is given.
constexpr int kDefaultMaxTokens = 64;

constexpr char kUsage[] =
    "hgeval: client for hgeval-server.\n"
    "Usage: hgeval <command> [flags]\n"
    "Commands:\n"
    "  models                      list the server's models\n"
    "  health [--wait S]           print SERVING / NOT_SERVING (exit 0 only when SERVING)\n"
    "  tokenize --model M --text T\n"
    "  score --model M --context C --continuation X   (or --input pairs.jsonl)\n"
    "  rolling --model M --text T                     (or --input texts.jsonl)\n"
    "  generate --model M --prompt P [--max_tokens N --until a,b --temperature T --top_p P "
    "--seed S --ignore_eos]\n"
    "  run --model M --tasks a,b [--limit N] [--output results.json]   submit a job, show\n"
    "      progress, print the results table (re-watches after dropped connections)\n"
    "  niah --model M [--mode easy|standard --preset quick|paper --lengths a,b --depths a,b\n"
    "      --output_dir DIR]   Needle-in-a-Haystack sweep as a server job: progress, then\n"
    "      DIR/niah_results.json, niah_grid.csv and niah_heatmap.png (resumable: --job ID)\n"
    "  sweep --series S.json --tasks a,b [--limit N --fit_metric TASK/METRIC --output_dir DIR]\n"
    "      one job per checkpoint of a series (resumable: run it again), then power-law fits\n"
    "      per architecture: DIR/series_results.json, series_points.csv, series_table.md and\n"
    "      series_loss_vs_{compute,parameters}.png (docs/series.md)\n"
    "  jobs [--limit N]            list jobs\n"
    "  job ID | watch ID | cancel ID";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hgeval: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

// --bos, checked in main().
v1::BosMode Bos() {
  return *cli::TokenizerBosFromFlags() ? v1::BOS_MODE_TOKENIZER : v1::BOS_MODE_NONE;
}

int Models(Client& client) {
  absl::StatusOr<v1::ListModelsResponse> models = client.ListModels();
  if (!models.ok()) return Fail(models.status());
  for (const v1::ModelInfo& m : models->models()) {
    if (m.loaded()) {
      std::printf("%s\t%s\tvocab=%lld\tmax_seq=%lld\tparams=%lld\t%s\t%s\thash=%s\n",
                  m.name().c_str(), m.family().c_str(), static_cast<long long>(m.vocab_size()),
                  static_cast<long long>(m.max_sequence_tokens()),
                  static_cast<long long>(m.num_parameters()), m.backend().c_str(),
                  m.dtype().c_str(), m.model_hash().substr(0, 12).c_str());
    } else {
      std::printf("%s\t(not loaded)\n", m.name().c_str());
    }
  }
  return 0;
}

int Health(Client& client) {
  const double wait = absl::GetFlag(FLAGS_wait);
  if (wait > 0) {
    absl::Status s = client.WaitServing(absl::Seconds(wait));
    if (!s.ok()) return Fail(s);
  }
  absl::StatusOr<std::string> h = client.Health();
  std::printf("%s\t%s\n", client.target().c_str(),
              h.ok() ? h->c_str() : h.status().ToString().c_str());
  return h.ok() && *h == "SERVING" ? 0 : 1;
}

int Tokenize(Client& client) {
  v1::TokenizeRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  request.set_text(absl::GetFlag(FLAGS_text));
  request.set_add_special(Bos() == v1::BOS_MODE_TOKENIZER);
  request.set_return_pieces(true);
  absl::StatusOr<v1::TokenizeResponse> r = client.Tokenize(request);
  if (!r.ok()) return Fail(r.status());
  std::printf("%s\n", ToJson(*r).c_str());
  return 0;
}

absl::StatusOr<std::vector<nlohmann::json>> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<nlohmann::json> lines;
  std::string line;
  try {
    while (std::getline(in, line)) {
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      lines.push_back(nlohmann::json::parse(line));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  return lines;
}

// What one scoring call from `score`/`rolling --input` carries at most: long inputs go out
// in calls the server accepts (its default per-call limits are 4,096 pairs and 8 MiB of
// text), one after another, so results print in input order as they come.
constexpr int kPairsPerCall = 1024;
constexpr int64_t kTextBytesPerCall = 4 << 20;

// Calls send(first, end) for consecutive runs of the `count` items, each at most
// kPairsPerCall items and kTextBytesPerCall bytes (an item larger than that goes alone).
absl::Status ForEachCall(int count, const std::function<int64_t(int)>& bytes_of,
                         const std::function<absl::Status(int, int)>& send) {
  int first = 0;
  int64_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t b = bytes_of(i);
    if (i > first && (i - first >= kPairsPerCall || bytes + b > kTextBytesPerCall)) {
      if (absl::Status s = send(first, i); !s.ok()) return s;
      first = i;
      bytes = 0;
    }
    bytes += b;
  }
  return count > first ? send(first, count) : absl::OkStatus();
}

int Score(Client& client) {
  v1::LoglikelihoodRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  request.set_bos_mode(Bos());
  request.set_return_token_logprobs(absl::GetFlag(FLAGS_token_logprobs));
  request.set_top_k(absl::GetFlag(FLAGS_top_k));
  request.set_truncate(absl::GetFlag(FLAGS_truncate));
  request.set_max_length(tasks::MaxLengthFromFlags());
  if (!absl::GetFlag(FLAGS_input).empty()) {
    absl::StatusOr<std::vector<nlohmann::json>> lines = ReadJsonLines(absl::GetFlag(FLAGS_input));
    if (!lines.ok()) return Fail(lines.status());
    try {
      for (const nlohmann::json& j : *lines) {
        v1::LoglikelihoodPair* pair = request.add_pairs();
        if (j.contains("context")) pair->set_context(j.at("context").get<std::string>());
        if (j.contains("continuation")) {
          pair->set_continuation(j.at("continuation").get<std::string>());
        }
        if (j.contains("context_ids")) {
          for (int id : j.at("context_ids")) pair->add_context_ids(id);
        }
        if (j.contains("continuation_ids")) {
          for (int id : j.at("continuation_ids")) pair->add_continuation_ids(id);
        }
      }
    } catch (const nlohmann::json::exception& e) {
      return Fail(absl::InvalidArgumentError(e.what()));
    }
  } else {
    const std::vector<std::string> continuations = absl::GetFlag(FLAGS_continuation).items;
    if (continuations.empty()) {
      return Fail(absl::InvalidArgumentError("score needs --continuation (or --input)"));
    }
    for (const std::string& continuation : continuations) {
      v1::LoglikelihoodPair* pair = request.add_pairs();
      pair->set_context(absl::GetFlag(FLAGS_context));
      pair->set_continuation(continuation);
    }
  }
  v1::LoglikelihoodRequest shell = request;
  shell.clear_pairs();
  const absl::Status sent = ForEachCall(
      request.pairs_size(),
      [&](int i) {
        return static_cast<int64_t>(request.pairs(i).context().size() +
                                    request.pairs(i).continuation().size());
      },
      [&](int first, int end) -> absl::Status {
        v1::LoglikelihoodRequest call = shell;
        for (int i = first; i < end; ++i) *call.add_pairs() = request.pairs(i);
        absl::StatusOr<v1::LoglikelihoodResponse> r = client.Loglikelihood(call);
        if (!r.ok()) return r.status();
        for (const v1::LoglikelihoodResult& result : r->results()) {
          std::printf("%s\n", ToJson(result).c_str());
        }
        std::fflush(stdout);
        return absl::OkStatus();
      });
  return sent.ok() ? 0 : Fail(sent);
}

int Rolling(Client& client) {
  v1::LoglikelihoodRollingRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  request.set_bos_mode(Bos());
  request.set_max_length(tasks::MaxLengthFromFlags());
  request.set_return_token_logprobs(absl::GetFlag(FLAGS_token_logprobs));
  if (!absl::GetFlag(FLAGS_input).empty()) {
    absl::StatusOr<std::vector<nlohmann::json>> lines = ReadJsonLines(absl::GetFlag(FLAGS_input));
    if (!lines.ok()) return Fail(lines.status());
    for (const nlohmann::json& j : *lines) {
      request.add_inputs()->set_text(j.value("text", std::string()));
    }
  } else {
    request.add_inputs()->set_text(absl::GetFlag(FLAGS_text));
  }
  v1::LoglikelihoodRollingRequest shell = request;
  shell.clear_inputs();
  const absl::Status sent = ForEachCall(
      request.inputs_size(),
      [&](int i) { return static_cast<int64_t>(request.inputs(i).text().size()); },
      [&](int first, int end) -> absl::Status {
        v1::LoglikelihoodRollingRequest call = shell;
        for (int i = first; i < end; ++i) *call.add_inputs() = request.inputs(i);
        absl::StatusOr<v1::LoglikelihoodRollingResponse> r = client.LoglikelihoodRolling(call);
        if (!r.ok()) return r.status();
        for (const auto& result : r->results()) std::printf("%s\n", ToJson(result).c_str());
        std::fflush(stdout);
        return absl::OkStatus();
      });
  return sent.ok() ? 0 : Fail(sent);
}

int Generate(Client& client) {
  v1::GenerateRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  request.set_prompt(absl::GetFlag(FLAGS_prompt));
  request.set_bos_mode(Bos());
  absl::StatusOr<int> max_tokens = cli::MaxTokensFromFlags(kDefaultMaxTokens);
  if (!max_tokens.ok()) return Fail(max_tokens.status());
  request.set_max_tokens(*max_tokens);
  for (const std::string& u : cli::UntilFromFlags({})) request.add_until(u);
  request.set_ignore_eos(cli::IgnoreEosFromFlags());
  const cli::Sampling sampling = cli::SamplingFromFlags();
  request.set_temperature(static_cast<float>(sampling.temperature));
  request.set_top_p(static_cast<float>(sampling.top_p));
  request.set_seed(sampling.seed);
  absl::StatusOr<v1::GenerateResponse> r =
      client.Generate(request, [](const v1::GenerateResponse& c) {
        std::fwrite(c.text().data(), 1, c.text().size(), stdout);
        std::fflush(stdout);
      });
  std::printf("\n");
  std::fflush(stdout);
  if (!r.ok()) return Fail(r.status());
  std::fprintf(stderr, "[%d prompt tokens, %d generated, %s%s]\n", r->prompt_tokens(),
               r->generated_tokens(), v1::FinishReason_Name(r->finish_reason()).c_str(),
               r->cached() ? ", from the store" : "");
  return 0;
}

// What a job's progress bar shows.
tasks::Progress JobProgress(const v1::Job& job) {
  return {.done = job.requests_done(),
          .total = job.requests_total(),
          .cached = job.requests_cached(),
          .unit = job.has_niah() ? "cells" : "requests",
          .label = job.current_task()};
}

// Watches with a progress bar on stderr; returns the final job.
absl::StatusOr<v1::Job> WatchWithProgress(Client& client, const std::string& id) {
  tasks::ProgressBar bar(cli::ProgressFromFlags());
  return client.WatchJob(
      id,
      [&](const v1::Job& j) {
        // The rate (and so the ETA) counts from when the job starts running.
        if (j.state() != v1::JOB_STATE_QUEUED) bar.Update(JobProgress(j));
      },
      absl::Seconds(absl::GetFlag(FLAGS_reconnect_for)));
}

// --output: the job's results JSON into the file; an error when there is nothing to
// write (a job still running, or one that failed before any result), so that a script
// does not take a missing file for success.
absl::Status WriteResultsToOutput(const v1::Job& job) {
  const std::string output = tasks::OutputFromFlags();
  if (output.empty()) return absl::OkStatus();
  if (job.results_json().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id(), " has no results to write to ", output, " (state ",
                     v1::JobState_Name(job.state()), "; results come with a finished job)"));
  }
  std::ofstream out(output);
  out << job.results_json() << "\n";
  if (!out) return absl::InternalError("cannot write " + output);
  std::fprintf(stderr, "results written to %s\n", output.c_str());
  return absl::OkStatus();
}

int PrintFinalJob(const v1::Job& job) {
  if (!tasks::OutputFromFlags().empty() && !job.results_json().empty()) {
    if (absl::Status s = WriteResultsToOutput(job); !s.ok()) return Fail(s);
  }
  std::printf("job %s: %s (model %s, %lld requests, %lld from the store)\n", job.id().c_str(),
              v1::JobState_Name(job.state()).c_str(), job.model().c_str(),
              static_cast<long long>(job.requests_done()),
              static_cast<long long>(job.requests_cached()));
  if (!job.results().empty()) std::printf("%s", FormatResultsTable(job).c_str());
  if (job.state() != v1::JOB_STATE_SUCCEEDED) {
    if (!job.error().empty()) std::fprintf(stderr, "error: %s\n", job.error().c_str());
    return 1;
  }
  return 0;
}

// Tasks evaluated here, model calls spread over the servers by the channel.
int RunLocal(Client& client) {
  RemoteLanguageModelOptions lm_options;
  lm_options.model = absl::GetFlag(FLAGS_model);
  lm_options.bos_mode = Bos();
  lm_options.max_length = tasks::MaxLengthFromFlags();
  absl::StatusOr<std::unique_ptr<RemoteLanguageModel>> lm =
      RemoteLanguageModel::Create(&client, lm_options);
  if (!lm.ok()) return Fail(lm.status());
  absl::StatusOr<tasks::EvaluatorOptions> evaluator_options = tasks::EvaluatorOptionsFromFlags();
  if (!evaluator_options.ok()) return Fail(evaluator_options.status());
  tasks::EvaluatorOptions& options = *evaluator_options;
  tasks::ProgressBar bar(cli::ProgressFromFlags());
  options.progress = [&](const std::string& task, int64_t done, int64_t total) {
    bar.Update({.done = done, .total = total, .label = task});
  };
  std::fprintf(stderr, "evaluating in the client, %d calls at a time to %s\n",
               client.parallel_calls(), client.target().c_str());
  absl::StatusOr<tasks::EvaluationReport> report =
      tasks::RunTasks(**lm, tasks::TaskNamesFromFlags(), options);
  bar.Finish();
  if (!report.ok()) return Fail(report.status());
  try {
    nlohmann::json results = tasks::ResultsJson(*report);
    if (options.log_samples) results["samples"] = tasks::SamplesByTask(*report);
    if (const std::string output = tasks::OutputFromFlags(); !output.empty()) {
      std::ofstream out(output);
      out << results.dump(2) << "\n";
      std::fprintf(stderr, "results written to %s\n", output.c_str());
    }
    std::printf("%s", tasks::ResultsTable(results).c_str());
  } catch (const nlohmann::json::exception& e) {
    return Fail(absl::InternalError(e.what()));
  }
  return 0;
}

int Run(Client& client) {
  // The flags' own checks (--num_fewshot, --limit) for both routes.
  absl::StatusOr<tasks::EvaluatorOptions> evaluator_options = tasks::EvaluatorOptionsFromFlags();
  if (!evaluator_options.ok()) return Fail(evaluator_options.status());
  if (absl::GetFlag(FLAGS_local)) return RunLocal(client);
  const double limit = evaluator_options->limit;
  if (limit != static_cast<int32_t>(limit)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--limit ", limit,
                     ": a job takes a whole number of documents per task (a fraction "
                     "works with --local and hgeval-eval)")));
  }
  v1::SubmitJobRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  for (const std::string& t : tasks::TaskNamesFromFlags()) request.add_tasks(t);
  request.set_limit(static_cast<int32_t>(limit));
  request.mutable_options()->set_bos_mode(Bos());
  request.mutable_options()->set_max_length(tasks::MaxLengthFromFlags());
  request.mutable_options()->set_log_samples(evaluator_options->log_samples);
  request.mutable_options()->set_num_fewshot(tasks::NumFewshotFromFlags());
  request.mutable_options()->set_shard_requests(absl::GetFlag(FLAGS_shard_requests));
  absl::StatusOr<std::string> id = client.SubmitJob(request);
  if (!id.ok()) return Fail(id.status());
  std::fprintf(stderr, "submitted job %s\n", id->c_str());
  absl::StatusOr<v1::Job> job = WatchWithProgress(client, *id);
  if (!job.ok()) return Fail(job.status());
  return PrintFinalJob(*job);
}

int Jobs(Client& client) {
  absl::StatusOr<v1::ListJobsResponse> jobs =
      client.ListJobs(static_cast<int>(tasks::LimitFromFlags()));
  if (!jobs.ok()) return Fail(jobs.status());
  for (const v1::Job& job : jobs->jobs()) {
    std::printf("%s\t%s\t%s\t%s\tlimit=%d\t%lld/%lld\n", job.id().c_str(),
                v1::JobState_Name(job.state()).c_str(), job.model().c_str(),
                job.has_niah() ? "niah" : absl::StrJoin(job.tasks(), ",").c_str(), job.limit(),
                static_cast<long long>(job.requests_done()),
                static_cast<long long>(job.requests_total()));
  }
  if (jobs->omitted() > 0) {
    std::fprintf(stderr,
                 "%d older jobs left out: the listing reached the server's size budget (jobs "
                 "with large specs); use --limit or `hgeval job ID`\n",
                 jobs->omitted());
  }
  return 0;
}

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  const std::string& command = args[0];
  ClientOptions options;
  options.servers = absl::GetFlag(FLAGS_server);
  if (const char* env = std::getenv("HGEVAL_AUTH_TOKEN"); env != nullptr) options.token = env;
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_token_file));
    std::string token((std::istreambuf_iterator<char>(in)), {});
    options.token = std::string(absl::StripAsciiWhitespace(token));
  }
  if (!absl::GetFlag(FLAGS_token).empty()) options.token = absl::GetFlag(FLAGS_token);
  options.tls = absl::GetFlag(FLAGS_tls);
  if (!absl::GetFlag(FLAGS_tls_ca).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_tls_ca));
    options.tls_ca_pem.assign((std::istreambuf_iterator<char>(in)), {});
  }
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout));
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!client.ok()) return Fail(client.status());
  Client& c = **client;
  if (command == "models") return Models(c);
  if (command == "health") return Health(c);
  if (command == "tokenize") return Tokenize(c);
  if (command == "score") return Score(c);
  if (command == "rolling") return Rolling(c);
  if (command == "generate") return Generate(c);
  if (command == "run") return Run(c);
  if (command == "jobs") return Jobs(c);
  if (command == "niah") return RunNiahCommand(c, WatchWithProgress);
  if (command == "sweep") {
    return RunSweepCommand(
        c,
        [](Client& client, const std::string& id, int index, int total, const std::string& model) {
          std::fprintf(stderr, "[%d/%d] %s: job %s\n", index + 1, total, model.c_str(), id.c_str());
          return WatchWithProgress(client, id);
        },
        Bos());
  }
  if ((command == "job" || command == "watch" || command == "cancel") && args.size() >= 2) {
    const std::string& id = args[1];
    absl::StatusOr<v1::Job> job = command == "job"      ? c.GetJob(id)
                                  : command == "cancel" ? c.CancelJob(id)
                                                        : WatchWithProgress(c, id);
    if (!job.ok()) return Fail(job.status());
    if (command == "watch") return PrintFinalJob(*job);
    std::printf("%s\n", ToJson(*job).c_str());
    if (command == "job") {
      if (absl::Status s = WriteResultsToOutput(*job); !s.ok()) return Fail(s);
    }
    return 0;
  }
  std::fprintf(stderr, "hgeval: unknown command '%s'\n%s\n", command.c_str(), kUsage);
  return 2;
}

}  // namespace
}  // namespace hgeval::client

int main(int argc, char** argv) {
  const std::vector<std::string> args =
      hgeval::cli::ParseCommandLine(argc, argv, hgeval::client::kUsage);
  if (const absl::StatusOr<bool> bos = hgeval::cli::TokenizerBosFromFlags(); !bos.ok()) {
    std::fprintf(stderr, "hgeval: %s\n", std::string(bos.status().message()).c_str());
    return 2;
  }
  return hgeval::client::Main(args);
}
