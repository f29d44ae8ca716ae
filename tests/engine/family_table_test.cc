// The model-family table (engine/model/family_table.h): one entry per ModelFamily, its
// spellings round-trip, its capabilities agree, and each backend has a builder for it.
#include "engine/model/family_table.h"

#include <set>
#include <string>

#include "engine/cpu/cpu_models.h"
#include "gtest/gtest.h"

namespace hgeval {
namespace {

constexpr ModelFamily kEveryFamily[] = {ModelFamily::kHgrn2, ModelFamily::kHgrn,
                                        ModelFamily::kGla,   ModelFamily::kLlama,
                                        ModelFamily::kMamba, ModelFamily::kTnl};

TEST(FamilyTableTest, EveryFamilyHasOneEntryWithUniqueSpellings) {
  EXPECT_EQ(AllFamilies().size(), std::size(kEveryFamily));
  std::set<std::string_view> names, model_types;
  for (ModelFamily family : kEveryFamily) {
    const FamilySpec& spec = FamilySpecOf(family);
    EXPECT_EQ(spec.family, family);
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindFamilyByName(spec.name), &spec);
    EXPECT_EQ(ModelFamilyName(family), spec.name);
    EXPECT_FALSE(spec.model_types.empty()) << spec.name;
    for (std::string_view type : spec.model_types) {
      EXPECT_TRUE(model_types.insert(type).second) << type;
      EXPECT_EQ(FindFamilyByModelType(type), &spec);
    }
    EXPECT_NE(spec.parse_config, nullptr) << spec.name;
  }
  EXPECT_EQ(FindFamilyByName("gpt2"), nullptr);
  EXPECT_EQ(FindFamilyByModelType("lra_classifier"), nullptr);
  EXPECT_EQ(SupportedModelTypes(), "hgrn2, hgrn, gla, llama, transformer, mamba, transnormer");
}

TEST(FamilyTableTest, OnlyLlamaKeepsAKvCache) {
  for (ModelFamily family : kEveryFamily) {
    const FamilySpec& spec = FamilySpecOf(family);
    EXPECT_NE(spec.recurrent, spec.has_kv_cache) << spec.name;
    EXPECT_EQ(spec.has_kv_cache, family == ModelFamily::kLlama) << spec.name;
  }
}

TEST(FamilyTableTest, ArchitecturesStandForTheirModelType) {
  for (const FamilySpec* spec : AllFamilies()) {
    for (const auto& [prefix, model_type] : spec->architecture_prefixes) {
      const std::string architecture = std::string(prefix) + "ForCausalLM";
      auto parsed = ParseModelConfig({{"architectures", {architecture}},
                                      {"vocab_size", 16},
                                      {"hidden_size", 8},
                                      {"num_hidden_layers", 2}});
      // Some families need more fields; the family and model_type are settled first.
      if (parsed.ok()) {
        EXPECT_EQ(parsed->family, spec->family) << architecture;
        EXPECT_EQ(parsed->model_type, model_type) << architecture;
      } else {
        EXPECT_EQ(std::string(parsed.status().message()).find("unsupported model_type"),
                  std::string::npos)
            << architecture << ": " << parsed.status();
      }
    }
  }
}

TEST(FamilyTableTest, TheCpuBackendBuildsEveryFamily) {
  auto empty = MakeMemoryCheckpoint(nlohmann::json::object(), {});
  for (ModelFamily family : kEveryFamily) {
    ModelConfig c;
    c.family = family;
    // No weights: the family's own builder runs and refuses; never "no CPU builder".
    auto model = cpu::BuildCpuModel(*empty, c, 0);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().code(), absl::StatusCode::kInternal)
        << ModelFamilyName(family) << ": " << model.status();
  }
}

}  // namespace
}  // namespace hgeval
