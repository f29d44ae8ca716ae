#include "server/exec/model_registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/lm_eval/requests.h"
#include "engine/model/model_location.h"
#include "engine/tokenizer/token_only_tokenizer.h"
#include "engine/util/sha256.h"
#include "nlohmann/json.hpp"
#include "server/core/echoed_name.h"
#include "server/core/log.h"
#include "server/exec/serialized_model.h"
#include "tasks/lra/engine_lra_classifier.h"

namespace hgeval::server {
namespace fs = std::filesystem;
namespace {

// The file or folder the checkpoint is opened from (engine/model/model_location.h).
struct ModelFiles {
  std::string load_path;
};

absl::StatusOr<ModelFiles> FindModelFiles(const std::string& path) {
  absl::StatusOr<std::string> load_path = CheckpointPath(path);
  if (!load_path.ok()) return load_path.status();
  return ModelFiles{*std::move(load_path)};
}

std::string ResolveRelative(const fs::path& base, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (base / p).lexically_normal().string();
}

// The tokenizer setting that means "no tokenizer": the model takes token-level requests
// only.
constexpr char kNoTokenizer[] = "none";

std::string TokenizerPath(const fs::path& base, const std::string& p) {
  return p == kNoTokenizer ? p : ResolveRelative(base, p);
}

}  // namespace

int64_t LmEvalMaxLength(const LoadedModel& model, int64_t requested) {
  // An LRA classifier (no language model) has no lm-eval length of its own.
  const int64_t max_length =
      model.model == nullptr
          ? lm_eval::MaxLength(requested, 0, 0)
          : lm_eval::MaxLength(requested, model.model->config().max_position_embeddings,
                               model.info.max_context);
  return std::min(max_length, model.max_sequence_tokens);
}

bool IsValidModelName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  if (absl::StrContains(name, "..")) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return name[0] != '.' && name[0] != '-';
}

absl::Status ParseRegistryConfig(const std::string& config_path, RegistryOptions& options) {
  std::ifstream in(config_path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config ", config_path));
  const fs::path base = fs::absolute(config_path).parent_path();
  try {
    nlohmann::json config = nlohmann::json::parse(in);
    if (config.contains("roots")) {
      for (const auto& root : config.at("roots")) {
        options.roots.push_back(ResolveRelative(base, root.get<std::string>()));
      }
    }
    if (config.contains("default_tokenizer")) {
      options.default_tokenizer =
          TokenizerPath(base, config.at("default_tokenizer").get<std::string>());
    }
    if (config.contains("models")) {
      for (const auto& m : config.at("models")) {
        ModelSpec spec;
        spec.name = m.at("name").get<std::string>();
        if (!IsValidModelName(spec.name)) {
          return absl::InvalidArgumentError(
              absl::StrCat("config ", config_path, ": invalid model name '", spec.name, "'"));
        }
        spec.path = ResolveRelative(base, m.at("path").get<std::string>());
        spec.tokenizer = TokenizerPath(base, m.value("tokenizer", std::string()));
        spec.device = m.value("device", std::string("cpu"));
        spec.dtype = m.value("dtype", std::string("fp32"));
        spec.max_context = m.value("max_context", int64_t{0});
        if (spec.max_context < 0) {
          return absl::InvalidArgumentError(absl::StrCat("config ", config_path, ": model '",
                                                         spec.name, "': max_context must be >= 0"));
        }
        options.models.push_back(std::move(spec));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config ", config_path, ": ", e.what()));
  }
  return absl::OkStatus();
}

ModelRegistry::ModelRegistry(RegistryOptions options) : options_(std::move(options)) {}

ModelRegistry::~ModelRegistry() { StopSchedulers(); }

std::vector<ModelSpec> ModelRegistry::List() const {
  std::vector<ModelSpec> specs = options_.models;
  std::set<std::string> seen;
  for (const ModelSpec& s : specs) seen.insert(s.name);
  for (const std::string& root : options_.roots) {
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && IsValidModelName(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (!seen.insert(name).second) continue;
      absl::StatusOr<ModelSpec> spec = Resolve(name);
      if (spec.ok()) specs.push_back(*spec);
    }
  }
  return specs;
}

absl::StatusOr<ModelSpec> ModelRegistry::Resolve(const std::string& name) const {
  if (!IsValidModelName(name)) {
    return absl::NotFoundError(absl::StrCat("unknown model '", EchoedName(name),
                                            "' (names use only letters, digits, '.', '_', '-')"));
  }
  for (const ModelSpec& spec : options_.models) {
    if (spec.name == name) return spec;
  }
  for (const std::string& root : options_.roots) {
    std::error_code ec;
    const fs::path canonical_root = fs::canonical(root, ec);
    if (ec) continue;
    const fs::path candidate = fs::weakly_canonical(canonical_root / name, ec);
    if (ec || !fs::is_directory(candidate, ec)) continue;
    // Symlinks must not lead outside the root.
    const std::string root_prefix = canonical_root.string() + "/";
    if (!absl::StartsWith(candidate.string(), root_prefix)) continue;
    // So must links to files inside the model's folder (model.safetensors pointing at
    // /etc/shadow): a model with one is refused, naming the file.
    for (const auto& entry : fs::recursive_directory_iterator(candidate, ec)) {
      if (!entry.is_symlink(ec)) continue;
      const fs::path target = fs::weakly_canonical(entry.path(), ec);
      if (ec || !absl::StartsWith(target.string(), root_prefix)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "model '", name, "': ", entry.path().lexically_relative(canonical_root).string(),
            " is a symbolic link out of the model root; such links are not followed (copy the "
            "file into the root, or name the model with --model or --config)"));
      }
    }
    if (!FindModelFiles(candidate.string()).ok()) continue;
    ModelSpec spec = options_.root_model_defaults;
    spec.name = name;
    spec.path = candidate.string();
    spec.tokenizer.clear();
    return spec;
  }
  return absl::NotFoundError(absl::StrCat("unknown model '", EchoedName(name), "'"));
}

absl::StatusOr<std::unique_ptr<LoadedModel>> ModelRegistry::Load(const ModelSpec& spec) const {
  const absl::Time start = absl::Now();
  absl::StatusOr<ModelFiles> files = FindModelFiles(spec.path);
  if (!files.ok()) return files.status();
  auto loaded = std::make_unique<LoadedModel>();
  loaded->spec = spec;
  LoadOptions load_options;
  load_options.device = spec.device;
  load_options.dtype = spec.dtype;
  load_options.max_context = spec.max_context;
  load_options.threads = options_.threads;
  load_options.device_memory = options_.device_memory;
  load_options.host_memory = options_.host_memory;
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = OpenModelCheckpoint(files->load_path);
  if (checkpoint.ok() && IsLraClassifierConfig((*checkpoint)->config())) {
    return LoadClassifier(spec, **checkpoint, load_options);
  }
  absl::StatusOr<std::unique_ptr<Model>> model =
      checkpoint.ok() ? BuildModel(**checkpoint, load_options)
                      : absl::StatusOr<std::unique_ptr<Model>>(checkpoint.status());
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat("loading model '", spec.name,
                                                            "': ", model.status().message()));
  }
  // The engine's content hash of config and tensors: the same model_hash hgeval-eval
  // records for this checkpoint (one identity on every route).
  loaded->model_hash = (*checkpoint)->ContentHash();
  // Jobs (NIAH sweeps) feed the model besides the scheduler: serialise their calls.
  loaded->model = std::make_unique<SerializedModel>(*std::move(model));
  std::string tokenizer_path = spec.tokenizer;
  if (tokenizer_path.empty()) tokenizer_path = DefaultTokenizerPath(spec.path);
  // "none": token-level requests only (MQAR-trained checkpoints ship no tokenizer).
  auto load_tokenizer = [&](const std::string& path) -> absl::StatusOr<std::unique_ptr<Tokenizer>> {
    if (path == kNoTokenizer) {
      return MakeTokenOnlyTokenizer(static_cast<int32_t>(loaded->model->info().vocab_size));
    }
    return LoadTokenizer(path);
  };
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = load_tokenizer(tokenizer_path);
  // The server's --tokenizer stands in only for a folder without a tokenizer: a folder's
  // own tokenizer that fails to load (a corrupt tokenizer.json) is an error, not a silent
  // switch to another vocabulary.
  if (!tokenizer.ok() && absl::IsNotFound(tokenizer.status()) && spec.tokenizer.empty() &&
      !options_.default_tokenizer.empty()) {
    tokenizer_path = options_.default_tokenizer;
    tokenizer = load_tokenizer(tokenizer_path);
  }
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat("loading the tokenizer of model '", spec.name, "' from ",
                                     tokenizer_path, ": ", tokenizer.status().message()));
  }
  loaded->tokenizer = *std::move(tokenizer);
  loaded->tokenizer_hash = loaded->tokenizer->ContentHash();
  loaded->info = loaded->model->info();
  loaded->family = std::string(ModelFamilyName(loaded->info.family));
  loaded->max_sequence_tokens =
      loaded->info.max_context > 0
          ? std::min(loaded->info.max_context, options_.max_sequence_tokens)
          : options_.max_sequence_tokens;
  if (loaded->tokenizer->vocab_size() > loaded->info.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", spec.name, "': tokenizer vocabulary (", loaded->tokenizer->vocab_size(),
        ") is larger than the model's (", loaded->info.vocab_size, ")"));
  }
  loaded->scheduler = std::make_unique<ModelScheduler>(spec.name, loaded->model.get(),
                                                       loaded->tokenizer.get(), options_.scheduler);
  LogInfo("model_loaded", {{"model", spec.name},
                           {"path", files->load_path},
                           {"tokenizer", tokenizer_path},
                           {"family", loaded->family},
                           {"backend", loaded->info.backend},
                           {"model_hash", loaded->model_hash.substr(0, 16)},
                           {"seconds", absl::StrCat(absl::ToDoubleSeconds(absl::Now() - start))}});
  return loaded;
}

absl::StatusOr<std::unique_ptr<LoadedModel>> ModelRegistry::LoadClassifier(
    const ModelSpec& spec, const Checkpoint& checkpoint, const LoadOptions& options) const {
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(),
                        absl::StrCat("loading LRA classifier '", spec.name, "': ", s.message()));
  };
  absl::StatusOr<std::unique_ptr<LraClassifier>> classifier =
      BuildLraClassifier(checkpoint, options);
  if (!classifier.ok()) return fail(classifier.status());
  const std::string dir =
      fs::is_directory(spec.path) ? spec.path : fs::path(spec.path).parent_path().string();
  absl::StatusOr<std::optional<LraVocabulary>> vocab =
      tasks::lra::LoadLraVocabularyBeside(dir, (*classifier)->config());
  if (!vocab.ok()) return fail(vocab.status());
  auto loaded = std::make_unique<LoadedModel>();
  loaded->spec = spec;
  loaded->model_hash = checkpoint.ContentHash();
  // The vocabulary decides the ids, so it keys the store as a tokenizer does.
  std::string vocab_text;
  if (vocab->has_value()) {
    std::ifstream in(dir + "/lra_vocab.json", std::ios::binary);
    vocab_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  loaded->tokenizer_hash = Sha256Hex(vocab_text).substr(0, 32);
  loaded->lra_vocab = *std::move(vocab);
  loaded->classifier = *std::move(classifier);
  loaded->family = LraFamilyName(loaded->classifier->config());
  const LraClassifierConfig& config = loaded->classifier->config();
  loaded->info.vocab_size = config.embedding_encoder ? config.vocab_size : 0;
  loaded->info.num_parameters = loaded->classifier->num_parameters();
  loaded->info.backend = loaded->classifier->backend();
  loaded->info.dtype = "fp32";
  loaded->max_sequence_tokens = options_.max_sequence_tokens;
  ClassifySchedulerOptions scheduler;
  if (options_.scheduler.max_batch_tokens > 0) {
    scheduler.max_batch_positions = options_.scheduler.max_batch_tokens;
  }
  scheduler.max_queued_examples = options_.scheduler.max_queued_requests;
  loaded->classify_scheduler =
      std::make_unique<ClassifyScheduler>(spec.name, loaded->classifier.get(), scheduler);
  LogInfo("model_loaded", {{"model", spec.name},
                           {"path", spec.path},
                           {"family", loaded->family},
                           {"backend", "cpu"},
                           {"model_hash", loaded->model_hash.substr(0, 16)}});
  return loaded;
}

namespace {

// Sizes and modification times of the files a model is loaded from (the folder's own
// files, or the file) and of its tokenizer: a kept load failure is retried once this
// changes.
std::string FilesSignature(const ModelSpec& spec) {
  std::string signature;
  auto add = [&signature](const fs::path& path) {
    std::error_code ec;
    const auto size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
    const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
    absl::StrAppend(&signature, path.string(), ":", size, ":", time, ";");
  };
  for (const std::string& p : {spec.path, spec.tokenizer}) {
    if (p.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(p, ec)) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) add(f);
    } else {
      add(p);
    }
  }
  return signature;
}

}  // namespace

absl::Status ModelRegistry::LoadFailure(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = failed_.find(name);
  return it == failed_.end() ? absl::OkStatus() : it->second.status;
}

absl::StatusOr<LoadedModel*> ModelRegistry::Get(const std::string& name) {
  if (LoadedModel* m = GetIfLoaded(name)) return m;
  absl::StatusOr<ModelSpec> spec = Resolve(name);
  if (!spec.ok()) return spec.status();
  absl::MutexLock load_lock(&load_mu_);
  if (LoadedModel* m = GetIfLoaded(name)) return m;
  const std::string files = FilesSignature(*spec);
  {
    absl::MutexLock lock(&mu_);
    auto it = failed_.find(name);
    if (it != failed_.end()) {
      if (it->second.files == files) return it->second.status;
      failed_.erase(it);  // the files changed: try again
    }
  }
  absl::StatusOr<std::unique_ptr<LoadedModel>> loaded;
  // The engine's containers report exhaustion by throwing; nothing may escape a handler.
  try {
    loaded = Load(*spec);
  } catch (const std::bad_alloc&) {
    loaded =
        absl::ResourceExhaustedError(absl::StrCat("loading model '", name, "': out of memory"));
  } catch (const std::exception& e) {
    loaded = absl::InternalError(absl::StrCat("loading model '", name, "': ", e.what()));
  }
  if (!loaded.ok()) {
    LogError("model_load_failed", {{"model", name}, {"error", loaded.status().ToString()}});
    const absl::Status kept = absl::FailedPreconditionError(absl::StrCat(
        "model '", name, "' could not be loaded (",
        absl::StatusCodeToString(loaded.status().code()), ": ", loaded.status().message(),
        "); fix its files and the next call loads it again"));
    absl::MutexLock lock(&mu_);
    failed_[name] = FailedLoad{kept, files};
    return kept;
  }
  absl::MutexLock lock(&mu_);
  LoadedModel* raw = loaded->get();
  loaded_[name] = *std::move(loaded);
  return raw;
}

LoadedModel* ModelRegistry::GetIfLoaded(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = loaded_.find(name);
  return it == loaded_.end() ? nullptr : it->second.get();
}

void ModelRegistry::StopSchedulers() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, model] : loaded_) {
    if (model->scheduler) model->scheduler->Stop();
    if (model->classify_scheduler) model->classify_scheduler->Stop();
  }
}

}  // namespace hgeval::server
