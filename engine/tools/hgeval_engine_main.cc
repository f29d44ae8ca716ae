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
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/cli/command_line.h"
#include "engine/cli/common_flags.h"
#include "engine/cli/generation_flags.h"
#include "engine/cli/model_flags.h"
#include "engine/lm_eval/requests.h"
#include "engine/model/load_model.h"
#include "engine/model/model_location.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "engine/runtime/stop_tokens.h"
#include "engine/tokenizer/continuation_text.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, text, "", "tokenize: the text (default: the positional words, else stdin).");
ABSL_FLAG(bool, pieces, false, "tokenize: print each id with its vocabulary piece.");
ABSL_FLAG(std::string, context, "",
          "score: the context text (default: the positional words, else stdin).");
ABSL_FLAG(hgeval::cli::EscapedList, continuation, {},
          "score: continuations to score after the context, comma-separated (C escapes; "
          "\\x2c for a comma).");
ABSL_FLAG(std::string, context_ids, "", "score: the context as token ids (comma-separated).");
ABSL_FLAG(std::string, continuation_ids, "",
          "score: continuations as token ids, ids comma-separated, continuations separated "
          "by ';' (e.g. 261,378;400).");
ABSL_FLAG(int, top_k, 0, "score: also list the k most likely tokens at each position.");
ABSL_FLAG(std::string, prompt, "",
          "generate: the prompt text (default: the positional words; none: BOS only).");
ABSL_FLAG(bool, stats, false, "generate: print token counts and speed on stderr.");
ABSL_FLAG(bool, json, false, "Print one JSON object instead of text.");

namespace hgeval::tools {
namespace {

constexpr int kUsageError = 2;
// generate's --max_tokens when none is given.
constexpr int kDefaultMaxTokens = 256;

constexpr char kMainUsage[] =
    "hgeval-engine: run a language model checkpoint with the hgeval engine.\n"
    "\n"
    "Usage: hgeval-engine <command> [flags] [text]\n"
    "\n"
    "Commands:\n"
    "  tokenize   text -> token ids\n"
    "  score      log-probability of a continuation after a context (per token, greedy)\n"
    "  generate   text from a prompt (greedy, or sampled with --temperature/--top_p/--seed)\n"
    "\n"
    "Models: a Hugging Face checkpoint folder (config.json + model.safetensors or shards;\n"
    "HGRN2, HGRN, GLA, LLaMA / fla transformer, Mamba, TNL) or a llama2.c .bin file.\n"
    "Run 'hgeval-engine <command> --help' for a command's usage.\n";

// The flags every command reads, and those that load the model.
constexpr absl::string_view kOutputFlags[] = {"json"};
constexpr absl::string_view kModelFlags[] = {"model", "tokenizer", "device",
                                             "dtype", "threads",   "max_context"};

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The text argument: the flag, else the positional words joined by spaces, else stdin.
std::string InputText(const std::string& flag_value, bool flag_given,
                      const std::vector<std::string>& words) {
  if (flag_given) return flag_value;
  if (!words.empty()) return absl::StrJoin(words, " ");
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer() {
  if (!absl::GetFlag(FLAGS_tokenizer).empty()) return LoadTokenizer(absl::GetFlag(FLAGS_tokenizer));
  if (absl::GetFlag(FLAGS_model).empty()) {
    return absl::InvalidArgumentError("pass --model or --tokenizer");
  }
  const std::string where = DefaultTokenizerPath(absl::GetFlag(FLAGS_model));
  auto tokenizer = LoadTokenizer(where.empty() ? "." : where);
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat("no tokenizer found beside the model (", where,
                                     "): pass --tokenizer (", tokenizer.status().message(), ")"));
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<Model>> OpenModel() {
  HG_ASSIGN_OR_RETURN(std::string path, cli::ModelPathFromFlags());
  HG_ASSIGN_OR_RETURN(LoadOptions options, cli::LoadOptionsFromFlags());
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
  HG_ASSIGN_OR_RETURN(const std::string checkpoint, CheckpointPath(path));
  return LoadModel(checkpoint, options);
}

// A token's text for display: its vocabulary piece.
std::string Piece(const Tokenizer& tokenizer, int32_t id) { return tokenizer.IdToPiece(id); }

// ---- tokenize ----

absl::Status Tokenize(const std::vector<std::string>& words) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, OpenTokenizer());
  HG_ASSIGN_OR_RETURN(const bool bos, cli::TokenizerBosFromFlags());
  const std::string text =
      InputText(absl::GetFlag(FLAGS_text), !absl::GetFlag(FLAGS_text).empty(), words);
  HG_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer->Encode(text, bos));
  const bool pieces = absl::GetFlag(FLAGS_pieces);
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json out = {{"ids", ids}, {"tokenizer", tokenizer->kind()}};
    if (pieces) {
      nlohmann::json list = nlohmann::json::array();
      for (int32_t id : ids) list.push_back(Piece(*tokenizer, id));
      out["pieces"] = list;
    }
    std::printf("%s\n", Dump(out).c_str());
    return absl::OkStatus();
  }
  if (pieces) {
    for (int32_t id : ids) {
      std::printf("%d\t%s\n", id, Dump(nlohmann::json(Piece(*tokenizer, id))).c_str());
    }
  } else {
    std::printf("%s\n", absl::StrJoin(ids, " ").c_str());
  }
  return absl::OkStatus();
}

// ---- score ----

absl::StatusOr<std::vector<int32_t>> ParseIds(absl::string_view text) {
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

absl::Status ScoreCommand(const std::vector<std::string>& words) {
  const bool ids_mode = !absl::GetFlag(FLAGS_context_ids).empty();
  std::unique_ptr<Tokenizer> tokenizer;
  auto opened = OpenTokenizer();
  if (opened.ok()) {
    tokenizer = std::move(*opened);
  } else if (!ids_mode) {
    return opened.status();
  }
  HG_ASSIGN_OR_RETURN(const bool bos, cli::TokenizerBosFromFlags());
  std::unique_ptr<Model> model;
  std::vector<ScoreRequest> requests;
  std::vector<std::string> labels;
  if (ids_mode) {
    ScoreRequest r;
    HG_ASSIGN_OR_RETURN(r.context, ParseIds(absl::GetFlag(FLAGS_context_ids)));
    for (absl::string_view c :
         absl::StrSplit(absl::GetFlag(FLAGS_continuation_ids), ';', absl::SkipWhitespace())) {
      HG_ASSIGN_OR_RETURN(r.continuation, ParseIds(c));
      requests.push_back(r);
      labels.emplace_back(c);
    }
  } else {
    const std::string context_flag = absl::GetFlag(FLAGS_context);
    if (context_flag.empty() && words.empty()) {
      return absl::InvalidArgumentError("score needs --context (or --context_ids)");
    }
    const std::string context = InputText(context_flag, !context_flag.empty(), words);
    HG_ASSIGN_OR_RETURN(model, OpenModel());
    // lm-eval's max_length and left truncation, as the evaluator and the server apply them.
    const int64_t max_length =
        lm_eval::MaxLength(0, model->config().max_position_embeddings, model->info().max_context);
    for (const std::string& c : absl::GetFlag(FLAGS_continuation).items) {
      HG_ASSIGN_OR_RETURN(
          lm_eval::TokenPair pair,
          lm_eval::EncodeLmEvalPair(*tokenizer, context, c, bos, lm_eval::PrefixToken(*tokenizer)));
      if (static_cast<int64_t>(pair.continuation.size()) > max_length) {
        return absl::InvalidArgumentError(
            absl::StrCat("continuation '", c, "' is ", pair.continuation.size(),
                         " tokens, longer than max_length ", max_length));
      }
      lm_eval::TruncateLmEvalPair(max_length, &pair);
      ScoreRequest r;
      r.context = std::move(pair.context);
      r.continuation = std::move(pair.continuation);
      requests.push_back(std::move(r));
      labels.push_back(c);
    }
  }
  if (requests.empty()) {
    return absl::InvalidArgumentError("score needs a --continuation (or --continuation_ids)");
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].top_k = absl::GetFlag(FLAGS_top_k);
    if (requests[i].context.empty() || requests[i].continuation.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "continuation '", labels[i], "': context and continuation need at least one token"));
    }
  }
  if (model == nullptr) {
    HG_ASSIGN_OR_RETURN(model, OpenModel());
  }
  HG_ASSIGN_OR_RETURN(std::vector<ScoreResult> results, Score(*model, requests));

  auto piece = [&](int32_t id) { return tokenizer ? Piece(*tokenizer, id) : std::to_string(id); };
  if (absl::GetFlag(FLAGS_json)) {
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

absl::Status GenerateCommand(const std::vector<std::string>& words) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, OpenTokenizer());
  HG_ASSIGN_OR_RETURN(const bool bos, cli::TokenizerBosFromFlags());
  HG_ASSIGN_OR_RETURN(const int max_tokens, cli::MaxTokensFromFlags(kDefaultMaxTokens));

  GenerateRequest request;
  const std::string prompt_flag = absl::GetFlag(FLAGS_prompt);
  const std::string prompt = !prompt_flag.empty() || !words.empty()
                                 ? InputText(prompt_flag, !prompt_flag.empty(), words)
                                 : std::string();
  HG_ASSIGN_OR_RETURN(request.prompt, tokenizer->Encode(prompt, bos));
  if (request.prompt.empty()) {
    if (tokenizer->bos_id() < 0) {
      return absl::InvalidArgumentError("the prompt is empty and the tokenizer has no BOS");
    }
    request.prompt.push_back(tokenizer->bos_id());
  }
  const cli::Sampling sampling = cli::SamplingFromFlags();
  request.sampling.temperature = static_cast<float>(sampling.temperature);
  request.sampling.top_p = static_cast<float>(sampling.top_p);
  request.sampling.seed = sampling.seed;
  request.max_new_tokens = max_tokens;
  const std::vector<std::string> stops = cli::UntilFromFlags({});
  request.stop_strings = stops;
  const bool json = absl::GetFlag(FLAGS_json);
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, OpenModel());
  if (!cli::IgnoreEosFromFlags()) {
    request.stop_tokens = GenerationStopTokens(*tokenizer, model->info().eos_token_id);
  }
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
  const bool stream = stops.empty() && !json;
  HG_ASSIGN_OR_RETURN(StreamingDecoder decoder, DecoderAfter(*tokenizer, request.prompt));
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
  if (json) {
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
  if (absl::GetFlag(FLAGS_stats)) {
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
  std::vector<absl::string_view> flags;  // besides kOutputFlags
  absl::Status (*run)(const std::vector<std::string>& words);
};

std::vector<absl::string_view> With(std::vector<absl::string_view> flags,
                                    absl::Span<const absl::string_view> more) {
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"tokenize",
       "Usage: hgeval-engine tokenize (--tokenizer T | --model M) [--bos tokenizer|none] "
       "[--pieces] [TEXT...]\n"
       "Prints the token ids of TEXT (or --text, or stdin), space-separated.\n"
       "Flags: --model --tokenizer --text --bos --pieces --json",
       {"model", "tokenizer", "text", "bos", "pieces"},
       Tokenize},
      {"score",
       "Usage: hgeval-engine score --model M --context TEXT --continuation TEXT[,TEXT...]\n"
       "       hgeval-engine score --model M --context_ids 1,2,3 --continuation_ids '4,5;6'\n"
       "Prints log p(continuation | context) summed over its tokens, whether every token is\n"
       "the greedy choice, and the per-token log-probabilities. Text pairs are tokenised as\n"
       "lm-evaluation-harness does (engine/lm_eval/requests.h: the context's trailing\n"
       "whitespace moves to the continuation, continuation tokens = encode(context +\n"
       "continuation) after encode(context), contexts cut on the left to lm-eval's\n"
       "max_length); --bos tokenizer (the default) encodes with the tokenizer's special\n"
       "tokens (BOS); an empty context is the BOS (else EOS) token alone.\n"
       "Flags: the model flags, --context --continuation --context_ids --continuation_ids "
       "--bos --top_k --json",
       With({"context", "continuation", "context_ids", "continuation_ids", "bos", "top_k"},
            kModelFlags),
       ScoreCommand},
      {"generate",
       "Usage: hgeval-engine generate --model M [--prompt TEXT | TEXT...] [--max_tokens N]\n"
       "       [--temperature T] [--top_p P] [--seed S] [--until STR,...]\n"
       "Generates text after the prompt (encoded with the tokenizer's special tokens, e.g.\n"
       "BOS, unless --bos none; an empty prompt is BOS alone). Greedy unless --temperature\n"
       "> 0. Stops at EOS (llama2.c tokenizers: at BOS too, as llama2.c's run does; not with\n"
       "--ignore_eos), a stop string of --until, or --max_tokens.\n"
       "Flags: the model flags, --prompt --max_tokens --temperature --top_p --seed --until "
       "--bos --ignore_eos --stats --json",
       With({"prompt", "max_tokens", "temperature", "top_p", "seed", "until", "bos", "ignore_eos",
             "stats"},
            kModelFlags),
       GenerateCommand},
  };
  return *commands;
}

int Main(int argc, char** argv) {
  const Command* command = nullptr;
  if (argc >= 2) {
    for (const Command& c : Commands()) {
      if (absl::string_view(argv[1]) == c.name) command = &c;
    }
  }
  const std::string usage =
      command == nullptr ? kMainUsage : absl::StrCat(command->usage, "\n\n", kMainUsage);
  std::vector<std::string> words = cli::ParseCommandLine(argc, argv, usage);
  if (command == nullptr) {
    if (!words.empty() && words[0] == "help") {
      std::fputs(kMainUsage, stdout);
      return 0;
    }
    if (!words.empty()) {
      std::fprintf(stderr, "hgeval-engine: unknown command '%s'\n\n", words[0].c_str());
    }
    std::fputs(kMainUsage, stderr);
    return kUsageError;
  }
  words.erase(words.begin());  // the command
  absl::Status status =
      cli::RefuseFlagsOutside(argc, argv, With(command->flags, kOutputFlags), command->name);
  if (status.ok()) {
    try {
      status = command->run(words);
    } catch (const std::exception& e) {  // nlohmann::json and the standard library
      status = absl::InternalError(e.what());
    }
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
