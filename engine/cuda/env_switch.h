// The engine's measurement switches (HGEVAL_CUDA_*, HGEVAL_DECODE_GEMM_*): environment
// variables that turn a path on or off for an A/B run. Most callers read their switch once;
// a few read it at each use so that `suite_cuda_bench --variants` can flip it within a run.
// docs/cuda.md ("Measurement switches") lists them and says which.
#ifndef HGEVAL_ENGINE_CUDA_ENV_SWITCH_H_
#define HGEVAL_ENGINE_CUDA_ENV_SWITCH_H_

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

namespace hgeval::cuda {

// Whether the environment variable `name` is set to exactly `value`.
inline bool EnvIs(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == value;
}

// The value of `name` where it is set to one of `values`, else 0 (a numeric switch).
inline int EnvChoice(const char* name, std::initializer_list<int> values) {
  for (const int v : values) {
    if (EnvIs(name, std::to_string(v))) return v;
  }
  return 0;
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_ENV_SWITCH_H_
