// hgeval-engine: tokenize, score and generate with a checkpoint folder or a llama2.c .bin on
// the CPU or a GPU, through the engine's runtime (scoring.h, generation.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/cli_flags.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"

namespace hgeval::tools {
namespace {

constexpr int kUsageError = 2;

constexpr char kMainHelp[] =
    "hgeval-engine: run a language model checkpoint with the hgeval engine.\n"
    "\n"
    "Usage: hgeval-engine <command> [flags] [text]\n"
    "\n"
    "Commands:\n"
    "  tokenize   text -> token ids\n"
    "  score      log-probability of a continuation after a context (per token, greedy)\n"
    "  generate   text from a prompt (greedy, or sampled with --temperature/--top-p/--seed)\n"
    "\n"
    "Models: a Hugging Face checkpoint folder (config.json + model.safetensors or shards;\n"
    "HGRN2, HGRN, GLA, LLaMA / fla transformer, Mamba) or a llama2.c .bin file.\n"
    "Run 'hgeval-engine <command> --help' for the flags of a command.\n";

void AddModelFlags(CliFlags* flags) {
  flags->AddValue("model", "checkpoint folder or llama2.c .bin file (required)");
  flags->AddValue("tokenizer",
                  "tokenizer file or folder (tokenizer.json, tokenizer.model, *.tiktoken, "
                  "tok*.bin); default: the one in the model's folder");
  flags->AddValue("device", "cpu, cuda or cuda:N (without a usable GPU: the CPU)", "cpu");
  flags->AddValue("dtype", "fp32 or bf16 (bf16 on CUDA only; the CPU computes in fp32)", "fp32");
  flags->AddValue("threads", "CPU worker threads (0: all cores)", "0");
  flags->AddValue("max-context",
                  "LLaMA: accept up to this many positions, past the training length (RoPE "
                  "extrapolation); 0: max_position_embeddings",
                  "0");
}

void AddCommonFlags(CliFlags* flags) {
  flags->AddSwitch("json", "print one JSON object instead of text");
  flags->AddSwitch("help", "show this help");
}

// The text argument: --text, else the positional words joined by spaces, else stdin.
std::string InputText(const CliFlags& flags, const std::string& text_flag) {
  if (flags.Has(text_flag)) return flags.Value(text_flag);
  if (!flags.positional().empty()) return absl::StrJoin(flags.positional(), " ");
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(const CliFlags& flags) {
  if (flags.Has("tokenizer")) return LoadTokenizer(flags.Value("tokenizer"));
  if (!flags.Has("model")) {
    return absl::InvalidArgumentError("pass --model or --tokenizer");
  }
  const std::filesystem::path model = flags.Value("model");
  const std::string where =
      std::filesystem::is_directory(model) ? model.string() : model.parent_path().string();
  auto tokenizer = LoadTokenizer(where.empty() ? "." : where);
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat("no tokenizer found beside the model (", where,
                                     "): pass --tokenizer (", tokenizer.status().message(), ")"));
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<Model>> OpenModel(const CliFlags& flags) {
  if (!flags.Has("model")) return absl::InvalidArgumentError("--model is required");
  LoadOptions options;
  options.device = flags.Value("device");
  options.dtype = flags.Value("dtype");
  HG_ASSIGN_OR_RETURN(int64_t threads, flags.Int("threads"));
  options.threads = static_cast<int>(threads);
  HG_ASSIGN_OR_RETURN(options.max_context, flags.Int("max-context"));
  if (options.device != "cpu" && !absl::StartsWith(options.device, "cuda")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu, cuda or cuda:N, got '", options.device, "'"));
  }
  if (absl::StartsWith(options.device, "cuda") && !CudaAvailable()) {
    std::fprintf(stderr,
                 "hgeval-engine: --device %s: no usable CUDA GPU (none visible, or this build "
                 "has no CUDA backend); running on the CPU instead.\n",
                 options.device.c_str());
    options.device = "cpu";
  }
  if (options.device == "cpu" && options.dtype != "fp32") {
    std::fprintf(stderr, "hgeval-engine: the CPU backend computes in fp32; ignoring --dtype %s.\n",
                 options.dtype.c_str());
    options.dtype = "fp32";
  }
  return LoadModel(flags.Value("model"), options);
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A token's text for display: its vocabulary piece.
std::string Piece(const Tokenizer& tokenizer, int32_t id) { return tokenizer.IdToPiece(id); }

// ---- tokenize ----

absl::Status Tokenize(const CliFlags& flags) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, OpenTokenizer(flags));
  const std::string text = InputText(flags, "text");
  HG_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                      tokenizer->Encode(text, flags.Switch("add-special")));
  if (flags.Switch("json")) {
    nlohmann::json out = {{"ids", ids}, {"tokenizer", tokenizer->kind()}};
    if (flags.Switch("pieces")) {
      nlohmann::json pieces = nlohmann::json::array();
      for (int32_t id : ids) pieces.push_back(Piece(*tokenizer, id));
      out["pieces"] = pieces;
    }
    std::printf("%s\n", Dump(out).c_str());
    return absl::OkStatus();
  }
  if (flags.Switch("pieces")) {
    for (int32_t id : ids) {
      std::printf("%d\t%s\n", id, Dump(nlohmann::json(Piece(*tokenizer, id))).c_str());
    }
  } else {
    std::printf("%s\n", absl::StrJoin(ids, " ").c_str());
  }
  return absl::OkStatus();
}

// ---- score ----

absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(", "), absl::SkipEmpty())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      return absl::InvalidArgumentError(absl::StrCat("not a token id: '", part, "'"));
    }
    ids.push_back(id);
  }
  return ids;
}

// lm-evaluation-harness's split: the context's trailing spaces move to the continuation;
// the continuation's tokens are those of encode(context + continuation) after
// encode(context), so merges across the boundary tokenise as the model saw them.
absl::Status EncodePair(const Tokenizer& tokenizer, std::string context, std::string continuation,
                        bool bos, std::vector<int32_t>* context_ids,
                        std::vector<int32_t>* continuation_ids) {
  const size_t kept = context.find_last_not_of(' ');
  const size_t cut = kept == std::string::npos ? 0 : kept + 1;
  continuation = context.substr(cut) + continuation;
  context.resize(cut);
  HG_ASSIGN_OR_RETURN(std::vector<int32_t> whole, tokenizer.Encode(context + continuation, false));
  HG_ASSIGN_OR_RETURN(*context_ids, tokenizer.Encode(context, false));
  if (context_ids->size() > whole.size() ||
      !std::equal(context_ids->begin(), context_ids->end(), whole.begin())) {
    // The boundary merged: fall back to encoding the two parts separately.
    HG_ASSIGN_OR_RETURN(*continuation_ids, tokenizer.Encode(continuation, false));
  } else {
    continuation_ids->assign(whole.begin() + context_ids->size(), whole.end());
  }
  if (bos || context_ids->empty()) {
    // An empty context is scored after BOS (or EOS when there is none), as lm-eval does.
    const int32_t prefix = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
    if (prefix < 0) {
      return absl::InvalidArgumentError(
          "the context is empty and the tokenizer has neither BOS nor EOS to start from");
    }
    context_ids->insert(context_ids->begin(), prefix);
  }
  return absl::OkStatus();
}

absl::Status ScoreCommand(const CliFlags& flags) {
  const bool ids_mode = flags.Has("context-ids");
  std::unique_ptr<Tokenizer> tokenizer;
  auto opened = OpenTokenizer(flags);
  if (opened.ok()) {
    tokenizer = std::move(*opened);
  } else if (!ids_mode) {
    return opened.status();
  }
  HG_ASSIGN_OR_RETURN(int64_t top_k, flags.Int("top-k"));
  std::vector<ScoreRequest> requests;
  std::vector<std::string> labels;
  if (ids_mode) {
    ScoreRequest r;
    HG_ASSIGN_OR_RETURN(r.context, ParseIds(flags.Value("context-ids")));
    for (const std::string& c : flags.Values("continuation-ids")) {
      HG_ASSIGN_OR_RETURN(r.continuation, ParseIds(c));
      requests.push_back(r);
      labels.push_back(c);
    }
  } else {
    if (!flags.Has("context") && flags.positional().empty()) {
      return absl::InvalidArgumentError("score needs --context (or --context-ids)");
    }
    const std::string context = InputText(flags, "context");
    for (const std::string& c : flags.Values("continuation")) {
      ScoreRequest r;
      HG_RETURN_IF_ERROR(
          EncodePair(*tokenizer, context, c, flags.Switch("bos"), &r.context, &r.continuation));
      requests.push_back(std::move(r));
      labels.push_back(c);
    }
  }
  if (requests.empty()) {
    return absl::InvalidArgumentError("score needs at least one --continuation");
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].top_k = static_cast<int>(top_k);
    if (requests[i].context.empty() || requests[i].continuation.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "continuation '", labels[i], "': context and continuation need at least one token"));
    }
  }
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, OpenModel(flags));
  HG_ASSIGN_OR_RETURN(std::vector<ScoreResult> results, Score(*model, requests));

  auto piece = [&](int32_t id) { return tokenizer ? Piece(*tokenizer, id) : std::to_string(id); };
  if (flags.Switch("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const ScoreResult& r = results[i];
      nlohmann::json tokens = nlohmann::json::array();
      for (size_t j = 0; j < r.token_logprobs.size(); ++j) {
        nlohmann::json t = {{"id", requests[i].continuation[j]},
                            {"piece", piece(requests[i].continuation[j])},
                            {"logprob", r.token_logprobs[j]},
                            {"greedy_id", r.greedy_tokens[j]}};
        if (!r.top_k.empty()) {
          nlohmann::json alternatives = nlohmann::json::array();
          for (const TokenLogprob& a : r.top_k[j]) {
            alternatives.push_back(
                {{"id", a.token}, {"piece", piece(a.token)}, {"logprob", a.logprob}});
          }
          t["top_k"] = alternatives;
        }
        tokens.push_back(t);
      }
      out.push_back({{"continuation", labels[i]},
                     {"context_ids", requests[i].context},
                     {"logprob", r.logprob},
                     {"is_greedy", r.is_greedy},
                     {"tokens", tokens}});
    }
    std::printf("%s\n", Dump(out).c_str());
    return absl::OkStatus();
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const ScoreResult& r = results[i];
    std::printf("continuation %s: logprob %.6f  greedy %s  (%zu context + %zu tokens)\n",
                Dump(nlohmann::json(labels[i])).c_str(), r.logprob, r.is_greedy ? "yes" : "no",
                requests[i].context.size(), requests[i].continuation.size());
    for (size_t j = 0; j < r.token_logprobs.size(); ++j) {
      const int32_t id = requests[i].continuation[j];
      std::printf("  %6d %-20s %10.6f  greedy: %d %s\n", id,
                  Dump(nlohmann::json(piece(id))).c_str(), r.token_logprobs[j], r.greedy_tokens[j],
                  Dump(nlohmann::json(piece(r.greedy_tokens[j]))).c_str());
      if (!r.top_k.empty()) {
        for (const TokenLogprob& a : r.top_k[j]) {
          std::printf("           top: %6d %-20s %10.6f\n", a.token,
                      Dump(nlohmann::json(piece(a.token))).c_str(), a.logprob);
        }
      }
    }
  }
  return absl::OkStatus();
}

// ---- generate ----

absl::Status GenerateCommand(const CliFlags& flags) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, OpenTokenizer(flags));
  HG_ASSIGN_OR_RETURN(int64_t max_tokens, flags.Int("max-tokens"));
  HG_ASSIGN_OR_RETURN(double temperature, flags.Double("temperature"));
  HG_ASSIGN_OR_RETURN(double top_p, flags.Double("top-p"));
  HG_ASSIGN_OR_RETURN(int64_t seed, flags.Int("seed"));
  if (max_tokens < 0) return absl::InvalidArgumentError("--max-tokens must be >= 0");

  GenerateRequest request;
  const std::string prompt = flags.Has("prompt") || !flags.positional().empty()
                                 ? InputText(flags, "prompt")
                                 : std::string();
  HG_ASSIGN_OR_RETURN(request.prompt, tokenizer->Encode(prompt, !flags.Switch("no-special")));
  if (request.prompt.empty()) {
    if (tokenizer->bos_id() < 0) {
      return absl::InvalidArgumentError("the prompt is empty and the tokenizer has no BOS");
    }
    request.prompt.push_back(tokenizer->bos_id());
  }
  request.sampling.temperature = static_cast<float>(temperature);
  request.sampling.top_p = static_cast<float>(top_p);
  request.sampling.seed = static_cast<uint64_t>(seed);
  request.max_new_tokens = static_cast<int>(max_tokens);
  if (!flags.Switch("ignore-eos")) {
    if (tokenizer->eos_id() >= 0) request.stop_tokens.push_back(tokenizer->eos_id());
    // llama2.c ends a sample at BOS, which separates its training stories.
    if (tokenizer->kind() == "llama2c" && tokenizer->bos_id() >= 0) {
      request.stop_tokens.push_back(tokenizer->bos_id());
    }
  }
  const std::vector<std::string> stops = flags.Values("stop");

  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, OpenModel(flags));
  const int64_t limit = model->info().max_context;
  if (limit > 0 && static_cast<int64_t>(request.prompt.size()) + request.max_new_tokens > limit) {
    const int64_t room = std::max<int64_t>(0, limit - static_cast<int64_t>(request.prompt.size()));
    std::fprintf(stderr,
                 "hgeval-engine: the model's context is %lld tokens; generating at most %lld.\n",
                 static_cast<long long>(limit), static_cast<long long>(room));
    if (room == 0) {
      return absl::InvalidArgumentError(absl::StrCat("the prompt (", request.prompt.size(),
                                                     " tokens) fills the model's context of ",
                                                     limit, " tokens"));
    }
    request.max_new_tokens = static_cast<int>(room);
  }

  // Text is decoded incrementally after the prompt (so rules that look at the previous
  // token, such as llama2.c's space after BOS, apply) and streamed unless stop strings or
  // JSON output need the whole text first.
  const bool stream = stops.empty() && !flags.Switch("json");
  StreamingDecoder decoder(tokenizer.get());
  for (int32_t id : request.prompt) HG_RETURN_IF_ERROR(decoder.Push(id).status());
  std::string text;
  DecodeBatch batch(model.get(), tokenizer.get());
  HG_ASSIGN_OR_RETURN(int64_t id, batch.Add(request));
  const auto start = std::chrono::steady_clock::now();
  size_t emitted = 0;
  bool first_step = true;
  double first_step_s = 0;
  while (!batch.finished(id)) {
    HG_RETURN_IF_ERROR(batch.Step().status());
    if (first_step) {
      first_step_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      first_step = false;
    }
    const std::vector<int32_t>& tokens = batch.result(id).tokens;
    for (; emitted < tokens.size(); ++emitted) {
      HG_ASSIGN_OR_RETURN(std::string piece, decoder.Push(tokens[emitted]));
      text += piece;
      if (stream) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      }
    }
  }
  HG_ASSIGN_OR_RETURN(std::string rest, decoder.Finish());
  text += rest;
  if (stream) std::fputs(rest.c_str(), stdout);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  GenerateResult result = batch.Take(id);
  text = CutAtStopStrings(std::move(text), stops);
  const char* reason = "length";
  switch (result.finish_reason) {
    case FinishReason::kLength:
      reason = "length";
      break;
    case FinishReason::kStopToken:
      reason = "stop_token";
      break;
    case FinishReason::kStopString:
      reason = "stop_string";
      break;
    case FinishReason::kCancelled:
      reason = "cancelled";
      break;
  }
  const double decode_rate =
      result.tokens.size() > 1 ? (result.tokens.size() - 1) / std::max(1e-9, seconds - first_step_s)
                               : 0.0;
  if (flags.Switch("json")) {
    nlohmann::json out = {{"text", text},
                          {"tokens", result.tokens},
                          {"prompt_tokens", request.prompt.size()},
                          {"finish_reason", reason},
                          {"seconds", seconds},
                          {"decode_tokens_per_second", decode_rate}};
    std::printf("%s\n", Dump(out).c_str());
  } else if (!stream) {
    std::printf("%s\n", text.c_str());
  } else {
    std::printf("\n");
  }
  if (flags.Switch("stats")) {
    std::fprintf(stderr,
                 "hgeval-engine: %zu prompt + %zu generated tokens in %.3f s (first step %.3f s, "
                 "then %.1f tok/s), finish: %s, device %s\n",
                 request.prompt.size(), result.tokens.size(), seconds, first_step_s, decode_rate,
                 reason, model->info().backend.c_str());
  }
  return absl::OkStatus();
}

struct Command {
  const char* name;
  const char* usage;
  void (*declare)(CliFlags*);
  absl::Status (*run)(const CliFlags&);
};

const Command kCommands[] = {
    {"tokenize",
     "Usage: hgeval-engine tokenize (--tokenizer T | --model M) [--add-special] [TEXT...]\n"
     "Prints the token ids of TEXT (or --text, or stdin), space-separated.\n",
     [](CliFlags* f) {
       f->AddValue("text", "the text (default: the positional words, else stdin)");
       f->AddValue("model", "checkpoint folder or .bin whose tokenizer to use");
       f->AddValue("tokenizer", "tokenizer file or folder");
       f->AddSwitch("add-special", "add the tokenizer's special tokens (BOS) as HF does");
       f->AddSwitch("pieces", "print each id with its vocabulary piece");
       AddCommonFlags(f);
     },
     Tokenize},
    {"score",
     "Usage: hgeval-engine score --model M --context TEXT --continuation TEXT "
     "[--continuation TEXT...]\n"
     "       hgeval-engine score --model M --context-ids 1,2,3 --continuation-ids 4,5\n"
     "Prints log p(continuation | context) summed over its tokens, whether every token is\n"
     "the greedy choice, and the per-token log-probabilities. Text pairs are tokenised as\n"
     "lm-evaluation-harness does (continuation tokens = encode(context+continuation) after\n"
     "encode(context)); an empty context starts from BOS.\n",
     [](CliFlags* f) {
       AddModelFlags(f);
       f->AddValue("context", "the context text (default: the positional words, else stdin)");
       f->AddValue("continuation", "a continuation to score", "", /*repeatable=*/true);
       f->AddValue("context-ids", "the context as token ids (comma-separated)");
       f->AddValue("continuation-ids", "a continuation as token ids", "", /*repeatable=*/true);
       f->AddSwitch("bos", "prepend BOS to the context");
       f->AddValue("top-k", "also list the k most likely tokens at each position", "0");
       AddCommonFlags(f);
     },
     ScoreCommand},
    {"generate",
     "Usage: hgeval-engine generate --model M [--prompt TEXT | TEXT...] [--max-tokens N]\n"
     "       [--temperature T] [--top-p P] [--seed S] [--stop STR...]\n"
     "Generates text after the prompt (encoded with the tokenizer's special tokens, e.g.\n"
     "BOS; an empty prompt is BOS alone). Greedy unless --temperature > 0. Stops at EOS\n"
     "(llama2.c tokenizers: at BOS too, as llama2.c's run does), a stop string, or\n"
     "--max-tokens.\n",
     [](CliFlags* f) {
       AddModelFlags(f);
       f->AddValue("prompt", "the prompt text (default: the positional words; none: BOS only)");
       f->AddValue("max-tokens", "most tokens to generate", "256");
       f->AddValue("temperature", "sampling temperature; 0 is greedy", "0");
       f->AddValue("top-p", "nucleus sampling mass in (0, 1]", "1");
       f->AddValue("seed", "sampling seed (same seed, same text)", "0");
       f->AddValue("stop", "stop string (text is cut before it)", "", /*repeatable=*/true);
       f->AddSwitch("no-special", "encode the prompt without special tokens (no BOS)");
       f->AddSwitch("ignore-eos", "do not stop at EOS");
       f->AddSwitch("stats", "print token counts and speed on stderr");
       AddCommonFlags(f);
     },
     GenerateCommand},
};

int Main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::fputs(kMainHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? kUsageError : 0;
  }
  const std::string name = argv[1];
  const Command* command = nullptr;
  for (const Command& c : kCommands) {
    if (name == c.name) command = &c;
  }
  if (command == nullptr) {
    std::fprintf(stderr, "hgeval-engine: unknown command '%s'\n\n%s", name.c_str(), kMainHelp);
    return kUsageError;
  }
  CliFlags flags;
  command->declare(&flags);
  if (absl::Status parsed = flags.Parse(argc, argv, 2); !parsed.ok()) {
    std::fprintf(stderr, "hgeval-engine %s: %s\n\n%s\nFlags:\n%s", command->name,
                 std::string(parsed.message()).c_str(), command->usage, flags.Help().c_str());
    return kUsageError;
  }
  if (flags.Switch("help")) {
    std::printf("%s\nFlags:\n%s", command->usage, flags.Help().c_str());
    return 0;
  }
  absl::Status status;
  try {
    status = command->run(flags);
  } catch (const std::exception& e) {  // nlohmann::json and the standard library
    status = absl::InternalError(e.what());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "hgeval-engine %s: %s\n", command->name, status.ToString().c_str());
    return status.code() == absl::StatusCode::kInvalidArgument ? kUsageError : 1;
  }
  return 0;
}

}  // namespace
}  // namespace hgeval::tools

int main(int argc, char** argv) { return hgeval::tools::Main(argc, argv); }
