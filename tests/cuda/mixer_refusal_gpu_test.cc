// A config the CUDA token mixer refuses is refused, not a crash: one per family whose
// mixer refuses anything (LLaMA's refusals are all the shared parser's, config_ranges_test).
// Before the fix CudaModel's destructor dereferenced the not-yet-created device context
// when Make<Family>Mixer refused: SIGSEGV for every such checkpoint.
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cuda/cuda_test_util.h"
#include "tests/support/paths.h"

namespace hgeval::testing {
namespace {

// (golden family, config field, value the CUDA backend refuses)
using Refusal = std::tuple<std::string, std::string, nlohmann::json>;

class MixerRefusalGpuTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(MixerRefusalGpuTest, RefusedByNameWithoutCrash) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, field, value] = GetParam();
  const std::string golden = SourcePath("tests/golden/" + family);
  nlohmann::json config;
  std::ifstream(golden + "/config.json") >> config;
  config[field] = value;
  const std::string dir = MakeTempDir("mixer_refusal");
  std::ofstream(dir + "/config.json") << config.dump(1) << "\n";
  std::filesystem::create_symlink(golden + "/model.safetensors", dir + "/model.safetensors");
  for (const char* dtype : {"fp32", "bf16"}) {
    LoadOptions options;
    options.device = "cuda";
    options.dtype = dtype;
    auto model = LoadModel(dir, options);
    ASSERT_FALSE(model.ok()) << family << " " << field;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented) << model.status();
    EXPECT_NE(model.status().message().find(field), absl::string_view::npos) << model.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MixerRefusalGpuTest,
                         ::testing::Values(Refusal{"hgrn2", "use_short_conv", true},
                                           Refusal{"hgrn", "use_short_conv", true},
                                           Refusal{"gla", "use_short_conv", true},
                                           Refusal{"mamba", "state_size", 32},
                                           Refusal{"tnl", "bias", true}),
                         [](const auto& info) { return std::get<0>(info.param); });

}  // namespace
}  // namespace hgeval::testing
