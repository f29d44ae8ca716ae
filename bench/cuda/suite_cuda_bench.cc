// Times the paper's zero-shot suite (issue 18: piqa, arc_easy, arc_challenge, hellaswag,
// winogrande, openbookqa, boolq, social_iqa, lambada_openai; full sets, context reuse on)
// through the tasks layer exactly as hgeval-eval runs it, on random-weight HGRN2-1.3B and
// LLaMA-1.3B shapes with the Mistral tokenizer. Writes wall time, tokens fed and tokens/s
// per task as JSON.
//
// --requests_out DIR also writes each task's tokenized loglikelihood requests (after
// lm-eval's tokenization and truncation) as DIR/<task>.jsonl (a generation task's prompts,
// max_gen_toks and stop strings, for bench/peers/scrolls_peer.py), and each model's
// config.json as DIR/<family>_config.json, so bench/peers/suite_peer.py can run the same
// requests the way lm-eval's HF backend does, in the same device call.
//
// --verify_limit N reruns the first N docs of every task twice, packed (the model's
// batch) and one item per Forward call, and checks the per-sample log-likelihoods are
// bitwise equal (issue 18's acceptance 2).
//
// --save_checkpoints DIR writes each random model as a Hugging Face folder
// (DIR/<family>-1.3b: config.json, BF16 model.safetensors, the tokenizer's files) and runs
// the suite on the model loaded back from it, so that bench/cuda/suite_server_bench.sh can
// serve the same weights with hgeval-server; --samples_out FILE writes every task's
// per-sample responses ({family: {task: [resps, ...]}}) to compare that job's samples with.
//
// Random weights are for timing only: the program refuses to run without
// --random_weights (the accuracies it prints are chance).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/cuda/random_checkpoint.h"
#include "bench/cuda/timed_model.h"
#include "bench/cuda/tool_main.h"
#include "engine/cuda/host_counters.h"
#include "engine/lm_eval/requests.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/memory_budget.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"

ABSL_FLAG(bool, random_weights, false,
          "required: acknowledge that the models get random weights (timing only)");
ABSL_FLAG(std::string, models, "hgrn2,llama", "comma-separated: hgrn2, llama, tnl");
ABSL_FLAG(std::string, tasks,
          "piqa,arc_easy,arc_challenge,hellaswag,winogrande,openbookqa,boolq,social_iqa,"
          "lambada_openai",
          "comma-separated lm-eval tasks (default: the paper's suite)");
ABSL_FLAG(double, limit, 0, "docs per task (0: all, as the paper)");
ABSL_FLAG(std::string, dtype, "bf16", "fp32 or bf16");
ABSL_FLAG(std::string, device, "cuda", "cuda, cuda:N or cpu (cpu: to check the program only)");
ABSL_FLAG(std::string, device_memory, "",
          "GPU memory budget (20GiB, 0.5, 50%; empty: free memory less a margin); with "
          "--device cpu, the host budget");
ABSL_FLAG(int, layers, 24, "layers (24 for the 1.3B shapes)");
ABSL_FLAG(std::string, tokenizer, "", "tokenizer (default: data/tokenizers/mistral-7b-v0.1)");
ABSL_FLAG(std::string, data_dir, "", "task data (default: the source tree's data/)");
ABSL_FLAG(int64_t, max_batch_tokens, 0, "tokens per Forward call (0: the model's choice)");
ABSL_FLAG(std::string, requests_out, "", "folder for the peer's requests and configs");
ABSL_FLAG(double, verify_limit, 0,
          "docs per task for the packed-vs-alone bitwise check (0: no check)");
ABSL_FLAG(std::string, out, "", "JSON report path (default: stdout only)");
ABSL_FLAG(std::string, save_checkpoints, "",
          "write each model as DIR/<family>-1.3b (config, BF16 safetensors, tokenizer) and run "
          "on the model loaded back from there");
ABSL_FLAG(bool, host_only, true,
          "also time the host's share alone (the tasks with the model left out)");
ABSL_FLAG(std::string, samples_out, "", "write per-sample responses of every task here (JSON)");
ABSL_FLAG(std::string, variants, "",
          "measurement: after the timed tasks, time them again under each variant, "
          "NAME:VAR=VALUE+VAR=VALUE,... (the engine's environment switches; reported under "
          "variants)");

namespace hgeval {
namespace {

using Clock = std::chrono::steady_clock;

// The checkout with data/: $HGEVAL_SOURCE_DIR (a copy on another machine), else the
// source tree this was built from.
std::string SourceDir() {
  const char* env = std::getenv("HGEVAL_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : HGEVAL_SOURCE_DIR;
}

// Writes each Loglikelihood call's tokenized requests to the current task's file, then
// answers through the wrapped model.
class RecordingLanguageModel : public tasks::LanguageModel {
 public:
  RecordingLanguageModel(tasks::EngineLanguageModel* inner, const Tokenizer* tokenizer)
      : inner_(inner), tokenizer_(tokenizer) {}
  void StartTask(const std::string& path) { out_ = std::make_unique<std::ofstream>(path); }
  void StopRecording() { out_.reset(); }

  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Loglikelihood(
      absl::Span<const tasks::LoglikelihoodRequest> requests,
      const tasks::CallOptions& options) override {
    if (out_ != nullptr) {
      for (const auto& r : requests) {
        HG_ASSIGN_OR_RETURN(tasks::TokenizedRequest t, inner_->Tokenize(r));
        *out_ << nlohmann::json{{"context", t.context}, {"continuation", t.continuation}}.dump()
              << "\n";
      }
    }
    return inner_->Loglikelihood(requests, options);
  }
  absl::StatusOr<std::vector<tasks::RollingResult>> LoglikelihoodRolling(
      absl::Span<const tasks::RollingRequest> requests,
      const tasks::CallOptions& options) override {
    return inner_->LoglikelihoodRolling(requests, options);
  }
  absl::StatusOr<std::vector<tasks::GenerateUntilResult>> GenerateUntil(
      absl::Span<const tasks::GenerateUntilRequest> requests,
      const tasks::CallOptions& options) override {
    if (out_ == nullptr) return inner_->GenerateUntil(requests, options);
    // Recording: the prompts as the engine builds them (lm-eval's truncation), for the
    // peer to generate from; nothing is generated here (this pass's metrics are unused).
    std::vector<tasks::GenerateUntilResult> empty(requests.size());
    for (const auto& r : requests) {
      HG_ASSIGN_OR_RETURN(GenerateRequest g, lm_eval::MakeLmEvalGenerateRequest(
                                                 *tokenizer_, r.context, r.until, r.max_gen_toks,
                                                 inner_->info().bos_regime == "tokenizer",
                                                 inner_->max_length(), inner_->prefix_token_id()));
      *out_ << nlohmann::json{{"prompt", g.prompt},
                              {"max_gen_toks", g.max_new_tokens},
                              {"until", g.stop_strings}}
                   .dump()
            << "\n";
    }
    return empty;
  }
  tasks::LanguageModelInfo info() const override { return inner_->info(); }
  tasks::LanguageModelStats stats() const override { return inner_->stats(); }
  void ResetStats() override { inner_->ResetStats(); }

 private:
  tasks::EngineLanguageModel* inner_;
  const Tokenizer* tokenizer_;
  std::unique_ptr<std::ofstream> out_;
};

// Per-sample log-likelihoods of a report, in doc order.
std::vector<double> SampleLogprobs(const tasks::TaskReport& report) {
  std::vector<double> out;
  for (const nlohmann::json& sample : report.samples) {
    for (const nlohmann::json& resp : sample["resps"]) {
      out.push_back(resp.is_array() ? resp[0].get<double>() : resp.get<double>());
    }
  }
  return out;
}

// Writes `config` with the family's random weights (BF16) and the tokenizer's files as a
// Hugging Face folder.
absl::Status SaveRandomCheckpoint(const std::string& family, const nlohmann::json& config,
                                  const std::string& tokenizer_path, const std::string& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) return absl::InternalError(absl::StrCat("creating ", folder, ": ", error.message()));
  std::ofstream(folder + "/config.json") << config.dump(2) << "\n";
  HG_ASSIGN_OR_RETURN(ModelConfig parsed, ParseModelConfig(config));
  HG_RETURN_IF_ERROR(WriteSafetensors(folder + "/model.safetensors",
                                      bench::RandomWeights(family, parsed), DType::kBF16));
  for (const auto& entry : std::filesystem::directory_iterator(tokenizer_path, error)) {
    if (!entry.is_regular_file()) continue;
    std::filesystem::copy_file(entry.path(), folder + "/" + entry.path().filename().string(),
                               std::filesystem::copy_options::overwrite_existing, error);
    if (error) return absl::InternalError(absl::StrCat("copying the tokenizer: ", error.message()));
  }
  return absl::OkStatus();
}

absl::Status Run(nlohmann::json& report) {
  const std::string source = SourceDir();
  const std::string tokenizer_path = absl::GetFlag(FLAGS_tokenizer).empty()
                                         ? source + "/data/tokenizers/mistral-7b-v0.1"
                                         : absl::GetFlag(FLAGS_tokenizer);
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(tokenizer_path));
  const std::vector<std::string> task_names = absl::StrSplit(absl::GetFlag(FLAGS_tasks), ',');
  const std::string requests_out = absl::GetFlag(FLAGS_requests_out);
  tasks::EvaluatorOptions eval;
  eval.limit = absl::GetFlag(FLAGS_limit);
  eval.data_dir =
      absl::GetFlag(FLAGS_data_dir).empty() ? source + "/data" : absl::GetFlag(FLAGS_data_dir);
  // Stderrs as hgeval-eval and a server job compute them (lm-eval's bootstrap for
  // perplexity), so the three routes do the same work.
  eval.log_samples = !absl::GetFlag(FLAGS_samples_out).empty();
  nlohmann::json samples;
  report["dtype"] = absl::GetFlag(FLAGS_dtype);
  report["layers"] = absl::GetFlag(FLAGS_layers);
  report["weights"] = "random (timing only)";
  report["tokenizer"] = tokenizer_path;
  report["limit"] = eval.limit;
  report["context_reuse"] = true;

  bool recorded = false;
  for (const std::string& family :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_models), ','))) {
    if (!bench::IsRandomModelFamily(family)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown model '", family, "'"));
    }
    nlohmann::json model_report;
    nlohmann::json config = bench::RandomModelConfig(family, absl::GetFlag(FLAGS_layers));
    config["vocab_size"] = tokenizer->vocab_size();
    if (bench::RandomModelHasKvCache(family)) config["max_position_embeddings"] = 4096;
    if (!requests_out.empty()) {
      std::ofstream(absl::StrCat(requests_out, "/", family, "_config.json")) << config.dump(2);
    }
    LoadOptions load;
    load.device = absl::GetFlag(FLAGS_device);
    load.dtype = absl::GetFlag(FLAGS_dtype);
    load.device_memory = absl::GetFlag(FLAGS_device_memory);
    if (load.device == "cpu") load.host_memory = load.device_memory;
    const auto tb = Clock::now();
    std::unique_ptr<Model> model;
    if (const std::string saved = absl::GetFlag(FLAGS_save_checkpoints); !saved.empty()) {
      const std::string folder = absl::StrCat(saved, "/", family, "-1.3b");
      HG_RETURN_IF_ERROR(SaveRandomCheckpoint(family, config, tokenizer_path, folder));
      HG_ASSIGN_OR_RETURN(model, LoadModel(folder, load));
      model_report["checkpoint"] = folder;
    } else {
      HG_ASSIGN_OR_RETURN(model, bench::BuildRandomModel(family, config, load));
    }
    std::fprintf(
        stderr, "[%s] built in %.1f s on %s, %lld params, batch_tokens %lld\n", family.c_str(),
        std::chrono::duration<double>(Clock::now() - tb).count(), model->info().backend.c_str(),
        static_cast<long long>(model->info().num_parameters),
        static_cast<long long>(BatchTokens(*model, absl::GetFlag(FLAGS_max_batch_tokens))));
    tasks::EngineLanguageModelOptions lm_options;
    lm_options.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
    lm_options.model_name = bench::RandomModelLabel(family);
    bench::TimedModel timed(model.get());
    tasks::EngineLanguageModel engine_lm(&timed, tokenizer.get(), lm_options);

    // Warm-up (untimed): cuBLASLt algorithm choice, pools.
    {
      tasks::EvaluatorOptions warm = eval;
      warm.limit = 20;
      HG_ASSIGN_OR_RETURN(auto task, tasks::CreateTask("hellaswag"));
      HG_RETURN_IF_ERROR(tasks::RunTask(engine_lm, *task, warm).status());
    }
    MemoryBudget* budget = model->memory_budget();
    if (budget != nullptr) budget->ResetPeak();
    model_report["params"] = model->info().num_parameters;
    model_report["backend"] = model->info().backend;
    model_report["batch_tokens"] = model->info().batch_tokens;
    // Times every task; rows into tasks_report[name] (metrics, samples and totals too).
    auto time_tasks = [&](nlohmann::json& tasks_report, const std::string& tag, double* seconds_out,
                          int64_t* fed_out) -> absl::Status {
      for (const std::string& name : task_names) {
        HG_ASSIGN_OR_RETURN(auto task, tasks::CreateTask(name));
        engine_lm.ResetStats();
        timed.ResetTimes();
        const cuda::CudaHostCounts before = cuda::CudaHostCounters::Get().Snapshot();
        const auto t0 = Clock::now();
        HG_ASSIGN_OR_RETURN(tasks::TaskReport tr, tasks::RunTask(engine_lm, *task, eval));
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        const cuda::CudaHostCounts host = cuda::CudaHostCounters::Get().Snapshot() - before;
        const tasks::LanguageModelStats stats = engine_lm.stats();
        // Forward calls (device work, launches, copies) vs the rest on the host (tokenizing,
        // prefix trees, state forks, metrics).
        const double forward = timed.times().prefill_seconds + timed.times().decode_seconds;
        nlohmann::json row = {
            {"seconds", seconds},
            {"forward_seconds", forward},
            {"forward_calls", timed.times().prefill_calls + timed.times().decode_steps},
            {"new_state_seconds", timed.times().new_state_seconds},
            {"new_states", timed.times().new_states},
            {"state_seconds", stats.state_seconds},
            {"docs", tr.n_effective},
            {"requests", tr.n_requests},
            {"tokens_fed", stats.tokens_fed},
            {"tokens_scored", stats.tokens_scored},
            {"tokens_per_second", stats.tokens_fed / seconds},
            // The CUDA backend's host-side share (engine/cuda/host_counters.h).
            {"pool_hits", host.pool_hits},
            {"driver_mallocs", host.driver_mallocs},
            {"malloc_seconds", host.malloc_seconds()},
            {"driver_frees", host.driver_frees},
            {"give_backs", host.give_backs},
            {"give_back_seconds", host.free_seconds()},
            {"fork_copies", host.fork_copies},
            {"fork_copy_bytes", host.fork_copy_bytes},
            {"fork_seconds", host.fork_seconds()}};
        for (size_t m = 0; m < tr.metrics.size(); ++m) row[tr.metrics[m].name] = tr.values[m];
        if (eval.log_samples && tag.empty()) {
          nlohmann::json& resps = samples[family][name];
          resps = nlohmann::json::array();
          for (const nlohmann::json& sample : tr.samples) resps.push_back(sample["resps"]);
        }
        tasks_report[name] = row;
        *seconds_out += seconds;
        *fed_out += stats.tokens_fed;
        std::fprintf(stderr,
                     "[%s%s] %-15s %8.2f s (forward %.2f s, states %.2f s) %10lld tokens "
                     "fed %9.0f tok/s; mallocs %lld (%.2f s), give-backs %lld of %lld blocks "
                     "(%.2f s), forks %lld (%.1f GiB, %.2f s)\n",
                     family.c_str(), tag.c_str(), name.c_str(), seconds, forward,
                     stats.state_seconds, static_cast<long long>(stats.tokens_fed),
                     stats.tokens_fed / seconds, static_cast<long long>(host.driver_mallocs),
                     host.malloc_seconds(), static_cast<long long>(host.give_backs),
                     static_cast<long long>(host.driver_frees), host.free_seconds(),
                     static_cast<long long>(host.fork_copies), host.fork_copy_bytes / 1073741824.0,
                     host.fork_seconds());
      }
      return absl::OkStatus();
    };
    double total_seconds = 0;
    int64_t total_fed = 0;
    HG_RETURN_IF_ERROR(time_tasks(model_report["tasks"], "", &total_seconds, &total_fed));
    // Measurement: the same tasks again under each variant's engine switches.
    const std::vector<std::string> variant_specs =
        absl::StrSplit(absl::GetFlag(FLAGS_variants), ',', absl::SkipEmpty());
    for (const std::string& spec : variant_specs) {
      const std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
      std::vector<std::string> names;
      if (parts.size() == 2) {
        const std::vector<std::string> assignments =
            absl::StrSplit(parts[1], '+', absl::SkipEmpty());
        for (const std::string& assignment : assignments) {
          const std::vector<std::string> kv = absl::StrSplit(assignment, absl::MaxSplits('=', 1));
          if (kv.size() != 2) return absl::InvalidArgumentError("--variants: NAME:VAR=VALUE+...");
          setenv(kv[0].c_str(), kv[1].c_str(), 1);
          names.push_back(kv[0]);
        }
      }
      nlohmann::json& variant = model_report["variants"][parts[0]];
      variant["environment"] = parts.size() == 2 ? parts[1] : "";
      double seconds = 0;
      int64_t fed = 0;
      HG_RETURN_IF_ERROR(time_tasks(variant["tasks"], " " + parts[0], &seconds, &fed));
      variant["suite_seconds"] = seconds;
      std::fprintf(stderr, "[%s %s] suite %.2f s\n", family.c_str(), parts[0].c_str(), seconds);
      for (const std::string& n : names) unsetenv(n.c_str());
    }
    // The host's own share: the same tasks with the model left out (tokenizing, prefix
    // trees, metrics; EngineLanguageModelOptions::count_only), to split the wall time into
    // forward calls, state forks and host work. The peer's requests are recorded in a
    // pass of their own, outside every timed one.
    if (absl::GetFlag(FLAGS_host_only) || (!recorded && !requests_out.empty())) {
      tasks::EngineLanguageModelOptions host_options = lm_options;
      host_options.count_only = true;
      tasks::EngineLanguageModel host_lm(model.get(), tokenizer.get(), host_options);
      double host_seconds = 0;
      for (const std::string& name : task_names) {
        HG_ASSIGN_OR_RETURN(auto task, tasks::CreateTask(name));
        const auto t0 = Clock::now();
        HG_RETURN_IF_ERROR(tasks::RunTask(host_lm, *task, eval).status());
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        model_report["tasks"][name]["host_only_seconds"] = s;
        host_seconds += s;
        if (!recorded && !requests_out.empty()) {
          RecordingLanguageModel recorder(&host_lm, tokenizer.get());
          recorder.StartTask(absl::StrCat(requests_out, "/", name, ".jsonl"));
          HG_RETURN_IF_ERROR(tasks::RunTask(recorder, *task, eval).status());
        }
      }
      recorded = true;
      model_report["suite_host_only_seconds"] = host_seconds;
      std::fprintf(stderr, "[%s] host work alone (count_only): %.2f s\n", family.c_str(),
                   host_seconds);
    }
    if (budget != nullptr) {
      // The budget's peak over the timed tasks: weights, scratch, states and cached blocks.
      model_report["memory_budget_bytes"] = budget->limit();
      model_report["peak_budget_bytes"] = budget->peak();
      std::fprintf(stderr, "[%s] memory: peak %s of a budget of %s\n", family.c_str(),
                   FormatBytes(budget->peak()).c_str(), FormatBytes(budget->limit()).c_str());
    }
    model_report["suite_seconds"] = total_seconds;
    model_report["suite_tokens_fed"] = total_fed;
    model_report["suite_tokens_per_second"] = total_fed / total_seconds;
    std::fprintf(stderr, "[%s] suite %.2f s, %lld tokens fed\n", family.c_str(), total_seconds,
                 static_cast<long long>(total_fed));

    // Packed vs one item per Forward call, bitwise, on the first docs of every task.
    if (absl::GetFlag(FLAGS_verify_limit) > 0) {
      tasks::EngineLanguageModelOptions alone_options = lm_options;
      alone_options.max_batch_tokens = 1;
      tasks::EngineLanguageModel alone_lm(model.get(), tokenizer.get(), alone_options);
      tasks::EvaluatorOptions verify = eval;
      verify.limit = absl::GetFlag(FLAGS_verify_limit);
      verify.log_samples = true;
      int64_t compared = 0, different = 0;
      for (const std::string& name : task_names) {
        HG_ASSIGN_OR_RETURN(auto task, tasks::CreateTask(name));
        HG_ASSIGN_OR_RETURN(tasks::TaskReport packed, tasks::RunTask(engine_lm, *task, verify));
        HG_ASSIGN_OR_RETURN(tasks::TaskReport alone, tasks::RunTask(alone_lm, *task, verify));
        const std::vector<double> a = SampleLogprobs(packed), b = SampleLogprobs(alone);
        if (a.size() != b.size()) return absl::InternalError("sample counts differ");
        for (size_t i = 0; i < a.size(); ++i) different += a[i] != b[i] ? 1 : 0;
        compared += static_cast<int64_t>(a.size());
      }
      model_report["verify_packed_vs_alone"] = {{"docs_per_task", verify.limit},
                                                {"loglikelihoods_compared", compared},
                                                {"bitwise_different", different}};
      std::fprintf(stderr, "[%s] packed vs alone: %lld log-likelihoods, %lld differ\n",
                   family.c_str(), static_cast<long long>(compared),
                   static_cast<long long>(different));
      if (different > 0) report["verify_failed"] = true;
    }
    report["models"][family] = model_report;
  }
  if (eval.log_samples) {
    std::ofstream out(absl::GetFlag(FLAGS_samples_out));
    out << samples.dump() << "\n";
    if (!out) return absl::InternalError("cannot write --samples_out");
  }
  return absl::OkStatus();
}

int ToolMain(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "suite_cuda_bench --random_weights [--models hgrn2,llama,tnl] [--limit N] "
      "[--requests_out DIR] [--verify_limit N] [--out FILE]\n"
      "Times the paper's zero-shot suite through the tasks layer on random 1.3B shapes.");
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_random_weights)) {
    std::fprintf(stderr,
                 "suite_cuda_bench builds random-weight models (timing only): pass "
                 "--random_weights\n");
    return 2;
  }
  nlohmann::json report;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  report["date"] = date;
  report["benchmark"] = "suite_cuda_bench (issue 18)";
  const absl::Status st = hgeval::Run(report);
  if (!st.ok()) {
    std::fprintf(stderr, "suite_cuda_bench: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!absl::GetFlag(FLAGS_out).empty()) std::ofstream(absl::GetFlag(FLAGS_out)) << text << "\n";
  return report.contains("verify_failed") ? 3 : 0;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  return hgeval::bench::RunToolMain("suite_cuda_bench",
                                    [&] { return hgeval::ToolMain(argc, argv); });
}
