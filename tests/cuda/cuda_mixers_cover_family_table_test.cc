// The CUDA backend's family list (engine/cuda/cuda_mixers.cc) has a token mixer for every
// family in the table (engine/model/family_table.h): each golden fixture's config gets its
// family's mixer, never "no CUDA token mixer". No GPU needed: a mixer touches the device
// only when it loads.
#include <fstream>
#include <set>
#include <string>

#include "engine/cuda/cuda_mixers.h"
#include "engine/model/family_table.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

TEST(CudaMixersTest, EveryFamilyInTheTableHasACudaMixer) {
  std::set<ModelFamily> built;
  for (const FamilySpec* spec : AllFamilies()) {
    std::ifstream file(testing::SourcePath("tests/golden/" + std::string(spec->name)) +
                       "/config.json");
    ASSERT_TRUE(file.good()) << spec->name;
    auto config = ParseModelConfig(nlohmann::json::parse(file));
    ASSERT_TRUE(config.ok()) << spec->name << ": " << config.status();
    ASSERT_EQ(config->family, spec->family);
    auto mixer = cuda::MakeCudaTokenMixer(*config, cuda::Act::kF32);
    ASSERT_TRUE(mixer.ok()) << spec->name << ": " << mixer.status();
    EXPECT_NE(*mixer, nullptr) << spec->name;
    built.insert(spec->family);
  }
  EXPECT_EQ(built.size(), AllFamilies().size());
}

}  // namespace
}  // namespace hgeval
