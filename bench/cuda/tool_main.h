// The main of a benchmark tool. Its reports are built with nlohmann::json, whose misuse
// throws (as an allocation may): the tool then says what went wrong and exits 1, rather
// than terminating without a word.
#ifndef HGEVAL_BENCH_CUDA_TOOL_MAIN_H_
#define HGEVAL_BENCH_CUDA_TOOL_MAIN_H_

#include <cstdio>
#include <exception>

#include "absl/functional/function_ref.h"

namespace hgeval::bench {

inline int RunToolMain(const char* tool, absl::FunctionRef<int()> body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: an unknown exception\n", tool);
  }
  return 1;
}

}  // namespace hgeval::bench

#endif  // HGEVAL_BENCH_CUDA_TOOL_MAIN_H_
