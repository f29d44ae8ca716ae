// Shared helpers for the CUDA backend tests: GPU detection, golden fixtures, model builds.
#ifndef HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "nlohmann/json.hpp"

namespace hgeval::testing {

bool HaveGpu();

// A float or integer tensor from a golden expected.safetensors, as doubles.
struct FixtureTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
};
absl::StatusOr<std::map<std::string, FixtureTensor>> ReadFixture(const std::string& path);

// A LLaMA of head dim 128 with random weights (bench/cuda/random_checkpoint's, built in
// memory): hidden 512, 4 query heads over 2 KV heads, MLP 1408, vocab 512, 2 layers,
// 32768 positions. Its bf16 prefill takes the wgmma flash kernel on sm_90a; the golden
// LLaMA's head dim 32 takes mma.sync (engine/cuda/flash_kernel_choice.h).
inline constexpr char kHeadDim128Llama[] = "llama_hd128";
nlohmann::json HeadDim128LlamaConfig();
absl::StatusOr<std::unique_ptr<Model>> BuildHeadDim128Llama(const LoadOptions& options);

// Whether the current GPU is compute capability 9.0 (where a build for sm_90a must choose
// the wgmma flash kernel at head dim 128).
bool GpuIsSm90();

// Builds tests/golden/<family> on cuda:0 in `dtype` ("fp32" or "bf16"), or the random
// kHeadDim128Llama (then, in bf16 on a 9.0 GPU, FailedPrecondition unless the wgmma
// kernel is chosen); max_context overrides LLaMA's max_position_embeddings when
// positive (LoadOptions::max_context).
absl::StatusOr<std::unique_ptr<Model>> BuildGoldenCudaModel(const std::string& family,
                                                            const std::string& dtype,
                                                            int64_t max_context = 0);

// Runs one item with fresh outputs; returns its output.
absl::StatusOr<ForwardOutput> RunOne(Model& model, SequenceState* state,
                                     const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& targets, bool want_last = false,
                                     int top_k = 0);

std::vector<int32_t> ToInts(const FixtureTensor& t);

// n token ids uniform in [0, vocab).
std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int vocab);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_
