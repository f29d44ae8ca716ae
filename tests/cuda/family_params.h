// The parameters of the GPU tests that run over the golden families (tests/golden): each
// family alone, each in fp32 and bf16, and the head-dim-128 LLaMA in bf16 (the wgmma flash
// kernel), with instances named "<family>_<dtype>".
#ifndef HGEVAL_TESTS_CUDA_FAMILY_PARAMS_H_
#define HGEVAL_TESTS_CUDA_FAMILY_PARAMS_H_

#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"

namespace hgeval::testing {

using FamilyDtype = std::tuple<std::string, std::string>;

inline auto GoldenFamilies() {
  return ::testing::Values("hgrn2", "hgrn", "gla", "llama", "mamba", "tnl");
}

inline auto EveryFamilyAndDtype() {
  return ::testing::Combine(GoldenFamilies(), ::testing::Values("fp32", "bf16"));
}

// The golden LLaMA's head dim 32 runs the mma.sync flash kernel; a random LLaMA of head
// dim 128 (cuda_test_util.h) the wgmma one (sm_90a).
inline auto WgmmaLlamaBf16() {
  return ::testing::Combine(::testing::Values(kHeadDim128Llama), ::testing::Values("bf16"));
}

inline std::string FamilyDtypeName(const ::testing::TestParamInfo<FamilyDtype>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_CUDA_FAMILY_PARAMS_H_
