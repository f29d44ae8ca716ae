// The models a server serves: named in a JSON config file, given by --model flags, or
// found as sub-folders of configured roots. A client's model name is only ever looked up
// in this registry: names are validated ([A-Za-z0-9._-], no "..") and a root's model
// must resolve inside that root (no path traversal, no escaping symlinks). Models load
// on first use (or at start with preload) and get their own scheduler thread.
#ifndef HGEVAL_SERVER_EXEC_MODEL_REGISTRY_H_
#define HGEVAL_SERVER_EXEC_MODEL_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/model/load_model.h"
#include "engine/model/lra_classifier.h"
#include "engine/model/model.h"
#include "engine/tokenizer/lra_vocabulary.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/exec/classify_scheduler.h"
#include "server/exec/scheduler.h"

namespace hgeval::server {

struct ModelSpec {
  std::string name;
  // A Hugging Face folder, a llama2.c .bin file, or a folder holding one model .bin.
  std::string path;
  // Tokenizer file or folder; empty: found in the model's folder.
  std::string tokenizer;
  std::string device = "cpu";
  std::string dtype = "fp32";
  // LLaMA: accept sequences up to this many positions, past max_position_embeddings
  // (RoPE extrapolation; LoadOptions::max_context). 0: the config's.
  int64_t max_context = 0;
};

struct RegistryOptions {
  std::vector<ModelSpec> models;   // explicit models (config file, --model)
  std::vector<std::string> roots;  // every sub-folder is a model named by the folder
  // device, dtype and max_context of the roots' models.
  ModelSpec root_model_defaults;
  // Tokenizer for models whose folder has none.
  std::string default_tokenizer;
  // Sequence limit for models without their own (recurrent models).
  int64_t max_sequence_tokens = 32768;
  int threads = 0;  // CPU threads per model (0: all)
  // Memory budgets (LoadOptions::device_memory, host_memory): one per GPU and one for the
  // host, shared by every model, request, generation and job of the server.
  std::string device_memory;
  std::string host_memory;
  SchedulerOptions scheduler;
};

// A loaded model with its tokenizer, hashes and scheduler. Either a language model
// (model, tokenizer, scheduler) or an LRA classifier (classifier, its vocabulary when it
// takes text, classify_scheduler); the other members are null.
struct LoadedModel {
  ModelSpec spec;
  std::unique_ptr<Model> model;  // a SerializedModel: the scheduler and jobs share it
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<LraClassifier> classifier;
  std::optional<LraVocabulary> lra_vocab;
  std::unique_ptr<ClassifyScheduler> classify_scheduler;
  std::string family;  // "hgrn2", ..., or "lra_hgrn2" / "lra_hgrn1"
  std::string model_hash;
  std::string tokenizer_hash;
  ModelInfo info;
  int64_t max_sequence_tokens = 0;
  std::unique_ptr<ModelScheduler> scheduler;
};

// lm-eval's max_length: `requested` if > 0, else config max_position_embeddings, else the
// model's own context limit, else 2048; capped at the model's max_sequence_tokens.
int64_t LmEvalMaxLength(const LoadedModel& model, int64_t requested);

// Parses the JSON config: {"models": [{"name", "path", "tokenizer"?, "device"?,
// "dtype"?, "max_context"?}], "roots": [...], "default_tokenizer"?: ...}. Relative paths are
// relative to the config file's folder.
absl::Status ParseRegistryConfig(const std::string& config_path, RegistryOptions& options);

// Whether `name` is a well-formed model name.
bool IsValidModelName(const std::string& name);

class ModelRegistry {
 public:
  explicit ModelRegistry(RegistryOptions options);
  ~ModelRegistry();

  // Every servable model (explicit ones first, then each root's sub-folders), by name.
  std::vector<ModelSpec> List() const;
  // The loaded model, loading it now if needed. NOT_FOUND for unknown names;
  // FAILED_PRECONDITION for a model whose load failed, kept (not retried) until the
  // model's or its tokenizer's files change.
  absl::StatusOr<LoadedModel*> Get(const std::string& name);
  // The kept load failure of `name` (OK if none).
  absl::Status LoadFailure(const std::string& name) const;
  // The model if loaded, else null.
  LoadedModel* GetIfLoaded(const std::string& name) const;
  // Stops every scheduler (fails pending work with UNAVAILABLE).
  void StopSchedulers();
  const RegistryOptions& options() const { return options_; }

 private:
  absl::StatusOr<ModelSpec> Resolve(const std::string& name) const;
  absl::StatusOr<std::unique_ptr<LoadedModel>> Load(const ModelSpec& spec) const;
  // The LRA classifier branch of Load: `checkpoint` holds an lra_classifier config.
  absl::StatusOr<std::unique_ptr<LoadedModel>> LoadClassifier(const ModelSpec& spec,
                                                              const Checkpoint& checkpoint,
                                                              const LoadOptions& options) const;

  const RegistryOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<LoadedModel>> loaded_ ABSL_GUARDED_BY(mu_);
  struct FailedLoad {
    absl::Status status;
    std::string files;  // FilesSignature when it failed
  };
  std::map<std::string, FailedLoad> failed_ ABSL_GUARDED_BY(mu_);
  absl::Mutex load_mu_;  // one load at a time
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_MODEL_REGISTRY_H_
