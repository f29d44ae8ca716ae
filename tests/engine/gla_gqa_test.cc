// GLA with grouped key/value heads (num_kv_heads < num_heads): kv head j serves query
// heads [jG, (j+1)G) (fla's repeat '(h d) -> (h g) d'). A GQA checkpoint must give exactly
// the logits of the plain checkpoint whose k/v/gk weights repeat each kv head G times.
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

// Rows [head * width, (head + 1) * width) of a [rows, cols] tensor, for each head in `heads`.
HostTensor Rows(const HostTensor& t, const std::vector<int>& heads, int64_t width) {
  const int64_t cols = t.shape.size() > 1 ? t.shape[1] : 1;
  HostTensor out;
  out.shape = t.shape;
  out.shape[0] = static_cast<int64_t>(heads.size()) * width;
  for (int h : heads) {
    out.data.insert(out.data.end(), t.data.begin() + h * width * cols,
                    t.data.begin() + (h + 1) * width * cols);
  }
  return out;
}

TEST(GlaGqaTest, GroupedHeadsEqualRepeatedHeads) {
  auto golden = OpenCheckpoint(testing::SourcePath("tests/golden/gla"));
  ASSERT_TRUE(golden.ok()) << golden.status();
  absl::StatusOr<std::map<std::string, HostTensor>> base_or = testing::ReadAllTensors(**golden);
  ASSERT_TRUE(base_or.ok()) << base_or.status();
  const std::map<std::string, HostTensor>& base = *base_or;
  const nlohmann::json base_config = (*golden)->config();
  const int64_t d = base_config["hidden_size"];
  const int64_t heads = base_config["num_heads"];
  ASSERT_EQ(heads, 4);
  const int64_t dk = d / 2 / heads, dv = d / heads;  // expand_k 0.5, expand_v 1

  std::map<std::string, HostTensor> grouped = base, repeated = base;
  for (int64_t l = 0; l < base_config["num_hidden_layers"].get<int64_t>(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".attn.";
    for (const auto& [name, width] :
         std::vector<std::pair<std::string, int64_t>>{{"k_proj.weight", dk},
                                                      {"v_proj.weight", dv},
                                                      {"gk_proj.1.weight", dk},
                                                      {"gk_proj.1.bias", dk}}) {
      // Two kv heads (the golden's heads 0 and 1); the plain model repeats them 0,0,1,1.
      grouped[p + name] = Rows(base.at(p + name), {0, 1}, width);
      repeated[p + name] = Rows(base.at(p + name), {0, 0, 1, 1}, width);
    }
  }
  nlohmann::json grouped_config = base_config;
  grouped_config["num_kv_heads"] = 2;
  auto grouped_checkpoint = MakeMemoryCheckpoint(grouped_config, grouped);
  auto repeated_checkpoint = MakeMemoryCheckpoint(base_config, repeated);
  auto grouped_model = testing::BuildOrDie(*grouped_checkpoint);
  auto repeated_model = testing::BuildOrDie(*repeated_checkpoint);
  ASSERT_NE(grouped_model, nullptr);
  ASSERT_NE(repeated_model, nullptr);
  std::vector<int32_t> ids;
  for (int i = 0; i < 90; ++i) ids.push_back((i * 131 + 7) % 512);
  const std::vector<float> a = testing::AllLogits(*grouped_model, ids);
  EXPECT_EQ(a, testing::AllLogits(*repeated_model, ids));
  // And the grouping matters: another assignment of kv heads gives other logits.
  std::map<std::string, HostTensor> swapped = repeated;
  for (int64_t l = 0; l < base_config["num_hidden_layers"].get<int64_t>(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".attn.";
    for (const auto& [name, width] :
         std::vector<std::pair<std::string, int64_t>>{{"k_proj.weight", dk},
                                                      {"v_proj.weight", dv},
                                                      {"gk_proj.1.weight", dk},
                                                      {"gk_proj.1.bias", dk}}) {
      swapped[p + name] = Rows(base.at(p + name), {0, 1, 0, 1}, width);
    }
  }
  auto swapped_model = testing::BuildOrDie(*MakeMemoryCheckpoint(base_config, swapped));
  ASSERT_NE(swapped_model, nullptr);
  EXPECT_GT(testing::MaxAbsDiff(a, testing::AllLogits(*swapped_model, ids)), 1e-3);
}

}  // namespace
}  // namespace hgeval
