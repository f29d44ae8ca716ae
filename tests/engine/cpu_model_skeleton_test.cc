// The one CPU skeleton (engine/cpu/cpu_model.h): every family of the table builds into it
// from its golden checkpoint, with the one sequence-state type, and runs a Forward.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_models.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/family_table.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

TEST(CpuModelSkeletonTest, EveryFamilyOfTheTableRunsInTheOneSkeleton) {
  for (const FamilySpec* spec : AllFamilies()) {
    SCOPED_TRACE(spec->name);
    auto checkpoint =
        OpenCheckpoint(testing::SourcePath("tests/golden/" + std::string(spec->name)));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    auto config = ParseModelConfig((*checkpoint)->config());
    ASSERT_TRUE(config.ok()) << config.status();
    ASSERT_EQ(config->family, spec->family);
    auto model = cpu::BuildCpuModel(**checkpoint, *config, 0);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_TRUE(cpu::IsCpuModel(**model));

    std::unique_ptr<SequenceState> state = (*model)->NewState();
    ASSERT_NE(dynamic_cast<cpu::CpuSequenceState*>(state.get()), nullptr);
    const std::vector<int32_t> tokens = {1, 17, 42, 99, 3};
    const std::vector<int32_t> targets = {17, 42, 99, 3, 5};
    ForwardItem item;
    item.tokens = tokens;
    item.targets = targets;
    item.state = state.get();
    std::vector<ForwardOutput> outputs(1);
    ASSERT_TRUE((*model)->Forward({&item, 1}, absl::MakeSpan(outputs)).ok());
    EXPECT_EQ(state->position(), 5);
    ASSERT_EQ(outputs[0].logprob.size(), tokens.size());
    for (float logprob : outputs[0].logprob) {
      EXPECT_TRUE(std::isfinite(logprob) && logprob < 0.0f) << logprob;
    }
  }
}

TEST(CpuModelSkeletonTest, RefusesAMixerCountOtherThanTheLayers) {
  auto checkpoint = MakeMemoryCheckpoint(nlohmann::json::object(), {});
  ModelConfig config;
  config.num_layers = 2;
  auto model = cpu::MakeCpuModel(*checkpoint, config, cpu::CpuModelParts());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace hgeval
