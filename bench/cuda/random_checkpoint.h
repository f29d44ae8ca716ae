// Random-weight checkpoints of the 1.3B-class shapes (HGRN2, LLaMA, TNL), shared by the
// CUDA benchmarks (timing) and tests/cuda (a small LLaMA of head dim 128 compared with the
// CPU backend). Nothing built from them is saved or evaluated.
#ifndef HGEVAL_BENCH_CUDA_RANDOM_CHECKPOINT_H_
#define HGEVAL_BENCH_CUDA_RANDOM_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "nlohmann/json.hpp"

namespace hgeval::bench {

// Uniform in [-a, a], deterministic for a seed (filled by several threads).
void FillRandom(std::vector<float>& data, float amplitude, uint64_t seed);

// config.json of the 1.3B shape: "hgrn2" (D 2048, expand_ratio 128, vocab 32000),
// "llama" (D 2048, 16 heads, MLP 5632, vocab 32000, max_position_embeddings 65536) or
// "tnl" (D 2048, 16 heads, GLU 5632, vocab 64000, LRPE on layer 0) or "gla" (D 2048,
// 4 heads, key dim 1024, value dim 2048, MLP 5632, vocab 32000).
nlohmann::json RandomModelConfig(const std::string& family, int layers);

// Whether RandomModelConfig knows `family` ("hgrn2", "llama", "tnl", "gla").
bool IsRandomModelFamily(const std::string& family);
// "HGRN2-1.3B shape (random)", "LLaMA-1.3B shape (random)", "TNL-1B class shape (random)",
// "GLA-1.3B shape (random)".
std::string RandomModelLabel(const std::string& family);
// Whether the row's family keeps a KV cache (engine/model/family_table.h): a positional
// limit, and a state that grows with the context.
bool RandomModelHasKvCache(const std::string& family);
// Whether the row's own vocabulary (TNL's 64,000) gives way to the sweep's tokenizer's.
bool RandomModelTakesTokenizerVocab(const std::string& family);

// Weights under the family's Hugging Face / fla names: matrices uniform with variance
// 1 / fan_in, norm weights 1, HGRN2 lower bounds uniform; LLaMA's attention projections
// shaped by head_dim and num_kv_heads. Deterministic (fixed seeds).
std::map<std::string, HostTensor> RandomWeights(const std::string& family,
                                                const ModelConfig& config);

// The model of RandomModelConfig-style `config_json` with RandomWeights, built with `load`.
absl::StatusOr<std::unique_ptr<Model>> BuildRandomModel(const std::string& family,
                                                        const nlohmann::json& config_json,
                                                        const LoadOptions& load);

}  // namespace hgeval::bench

#endif  // HGEVAL_BENCH_CUDA_RANDOM_CHECKPOINT_H_
