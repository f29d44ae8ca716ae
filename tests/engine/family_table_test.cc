// The model-family table (engine/model/family_table.h): one entry per ModelFamily, its
// spellings round-trip, its capabilities agree, and each backend has a builder for it.
#include "engine/model/family_table.h"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "engine/cpu/cpu_models.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

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

// The table's state sizes are what the CPU models hold: the per-token growth exactly (fp32
// KV cache), the fixed state its values in fp32 (fla families) or between fp32 and float64
// (Mamba's SSM and TNL's state are float64 on the CPU), plus the state objects' own bytes. Over
// every golden fixture and config-sweep point (short convolutions, kv heads, LRPE layers).
TEST(FamilyTableTest, StateSizesAreWhatTheCpuModelsHold) {
  namespace fs = std::filesystem;
  std::vector<fs::path> fixtures;
  for (const FamilySpec* spec : AllFamilies()) {
    const fs::path golden = testing::SourcePath("tests/golden");
    fixtures.push_back(golden / spec->name);
    const fs::path sweep = golden / (std::string(spec->name) + "_sweep");
    if (!fs::is_directory(sweep)) continue;
    for (const fs::directory_entry& point : fs::directory_iterator(sweep)) {
      // refused_*: configs the loader refuses by name (config_sweep_golden_test).
      if (point.path().filename().string().rfind("refused", 0) == 0) continue;
      if (fs::exists(point.path() / "config.json")) fixtures.push_back(point.path());
    }
  }
  std::set<ModelFamily> seen;
  for (const fs::path& fixture : fixtures) {
    auto model = LoadModel(fixture.string(), LoadOptions());
    ASSERT_TRUE(model.ok()) << fixture << ": " << model.status();
    const ModelConfig& c = (*model)->config();
    seen.insert(c.family);
    const int64_t per_token = StateValuesPerToken(c);
    const int64_t per_sequence = StateValuesPerSequence(c);
    EXPECT_EQ((*model)->info().state_bytes_per_token, per_token * 4) << fixture;
    EXPECT_EQ(per_token > 0, FamilySpecOf(c.family).has_kv_cache) << fixture;
    EXPECT_EQ(per_sequence > 0, FamilySpecOf(c.family).recurrent) << fixture;
    const size_t fixed = (*model)->StateBytes(0);
    EXPECT_GE(fixed, static_cast<size_t>(per_sequence) * 4) << fixture;
    const bool fp32_state = c.family == ModelFamily::kHgrn2 || c.family == ModelFamily::kHgrn ||
                            c.family == ModelFamily::kGla || c.family == ModelFamily::kLlama;
    EXPECT_LE(fixed, static_cast<size_t>(per_sequence) * (fp32_state ? 4 : 8) + 512) << fixture;
  }
  EXPECT_EQ(seen.size(), std::size(kEveryFamily));
}

}  // namespace
}  // namespace hgeval
