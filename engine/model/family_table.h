// The model-family table: each family (engine/model/families/<family>.cc) declares in one
// FamilySpec its config.json spellings and parsing, its checkpoint names and what callers
// may ask of it (capabilities, state sizes), so nothing outside the table and the backends'
// per-family files switches on the family. The backends key their builders by FamilySpec::name
// (engine/cpu/cpu_models.cc, engine/cuda/cuda_mixers.cc).
#ifndef HGEVAL_ENGINE_MODEL_FAMILY_TABLE_H_
#define HGEVAL_ENGINE_MODEL_FAMILY_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"
#include "engine/model/tensor_names.h"
#include "nlohmann/json.hpp"

namespace hgeval {

struct FamilySpec {
  ModelFamily family;
  std::string_view name;  // ModelInfo's and the reports' spelling ("hgrn2")

  // config.json: the model_type values that select the family, and the architectures[0]
  // prefixes that stand for a model_type when it is absent.
  std::vector<std::string_view> model_types;
  std::vector<std::pair<std::string_view, std::string_view>> architecture_prefixes;
  // Keys that name D and L besides hidden_size / num_hidden_layers (read after them,
  // so they win); null when the family has none.
  const char* hidden_size_key = nullptr;
  const char* num_layers_key = nullptr;
  // The norm epsilon's key(s) as an error message names them.
  const char* norm_eps_keys = "norm_eps' / 'rms_norm_eps";
  // The family's own fields, after the shared ones (vocab, D, L, max positions) and
  // before tie_word_embeddings / special tokens / epsilon checks.
  absl::Status (*parse_config)(const nlohmann::json& config, ModelConfig* c) = nullptr;

  // Checkpoint names of the block skeleton; `checkpoint` settles legacy spellings. Null:
  // fla's names (FlaBlockTensorNames).
  BlockTensorNames (*tensor_names)(const Checkpoint& checkpoint, const ModelConfig& c) = nullptr;
  // Layer MLP under `layer_prefix`; null: SwiGLU `mlp.{gate,up,down}_proj`.
  absl::StatusOr<GatedMlpWeights> (*read_mlp)(const Checkpoint& checkpoint, const ModelConfig& c,
                                              const std::string& layer_prefix) = nullptr;

  // State sizes in values (each backend picks the element type): what one sequence's state
  // holds whatever its length (recurrent state and short-convolution windows, all layers),
  // and what it grows by per token fed (the KV cache, all layers). Null: 0.
  int64_t (*state_values_per_sequence)(const ModelConfig& c) = nullptr;
  int64_t (*state_values_per_token)(const ModelConfig& c) = nullptr;

  // Capabilities. recurrent: a fixed-size state per sequence (no positional limit);
  // has_kv_cache: the state grows by ModelInfo::state_bytes_per_token per token fed.
  bool recurrent = true;
  bool has_kv_cache = false;
};

// Every family, in the order config.json's architectures prefixes are tried.
absl::Span<const FamilySpec* const> AllFamilies();

const FamilySpec& FamilySpecOf(ModelFamily family);
// Null when no family has that model_type / name.
const FamilySpec* FindFamilyByModelType(std::string_view model_type);
const FamilySpec* FindFamilyByName(std::string_view name);

// c.family's state_values_per_sequence / state_values_per_token (0 where null).
int64_t StateValuesPerSequence(const ModelConfig& c);
int64_t StateValuesPerToken(const ModelConfig& c);

// "hgrn2, hgrn, gla, llama, transformer, mamba, transnormer": for error messages.
std::string SupportedModelTypes();

// A backend's per-family entry (a CPU builder, a CUDA mixer factory), keyed by name.
template <typename Entry>
const Entry* FindBackendEntry(absl::Span<const Entry> entries, ModelFamily family) {
  const std::string_view name = FamilySpecOf(family).name;
  for (const Entry& entry : entries) {
    if (entry.family_name == name) return &entry;
  }
  return nullptr;
}

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_FAMILY_TABLE_H_
