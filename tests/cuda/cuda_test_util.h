// Shared helpers for the CUDA backend tests: GPU detection, golden fixtures, model builds.
#ifndef HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model.h"

namespace hgeval::testing {

bool HaveGpu();

// A float or integer tensor from a golden expected.safetensors, as doubles.
struct FixtureTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
};
absl::StatusOr<std::map<std::string, FixtureTensor>> ReadFixture(const std::string& path);

// Builds tests/golden/<family> on cuda:0 in `dtype` ("fp32" or "bf16"); max_context
// overrides LLaMA's max_position_embeddings when positive (LoadOptions::max_context).
absl::StatusOr<std::unique_ptr<Model>> BuildGoldenCudaModel(const std::string& family,
                                                            const std::string& dtype,
                                                            int64_t max_context = 0);

// Runs one item with fresh outputs; returns its output.
absl::StatusOr<ForwardOutput> RunOne(Model& model, SequenceState* state,
                                     const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& targets, bool want_last = false,
                                     int top_k = 0);

std::vector<int32_t> ToInts(const FixtureTensor& t);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_CUDA_CUDA_TEST_UTIL_H_
