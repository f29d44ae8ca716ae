// The trained ListOps fixture (data/models/lra/listops_hgrn2, made by
// tools/train/lra_listops_train.py on a GPU): on the first 100 examples of its test split
// (regenerated here by the same generator and seed), the engine's logits are within 1e-4
// of PyTorch's (each example run alone in float64 there) and the predicted classes, hence
// the accuracies, are equal. The accuracy is reported and must be well above chance (0.1).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/loader/mapped_file.h"
#include "engine/loader/safetensors.h"
#include "engine/model/lra_classifier.h"
#include "engine/tokenizer/lra_vocabulary.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/lra/listops_generator.h"
#include "tests/support/paths.h"

namespace hgeval::tasks::lra {
namespace {

TEST(LraListOpsFixtureTest, EngineLogitsAndAccuracyEqualPyTorchs) {
  const std::string dir = hgeval::testing::SourcePath("data/models/lra/listops_hgrn2");
  if (!std::filesystem::exists(dir + "/expected_logits.safetensors")) {
    GTEST_SKIP() << "the trained fixture " << dir
                 << " is not committed yet: run tools/train/lra_listops_train.py --out " << dir
                 << " on a GPU machine (issue 15)";
  }
  std::ifstream in(dir + "/lra_listops_train.json");
  const nlohmann::json report = nlohmann::json::parse(in);
  const nlohmann::json& spec = report["test_generator"];
  ListOpsGeneratorOptions options;
  options.seed = spec["seed"].get<uint64_t>();
  options.min_length = spec["min_length"].get<int64_t>();
  options.max_length = spec["max_length"].get<int64_t>();
  options.max_depth = spec["max_depth"].get<int>();
  options.max_args = spec["max_args"].get<int>();

  auto file = MappedFile::Open(dir + "/expected_logits.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tensors = ParseSafetensors(dir, (*file)->bytes());
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  const SafetensorsTensor* logits_tensor = nullptr;
  const SafetensorsTensor* labels_tensor = nullptr;
  for (const SafetensorsTensor& t : *tensors) {
    if (t.info.name == "logits") logits_tensor = &t;
    if (t.info.name == "labels") labels_tensor = &t;
  }
  ASSERT_TRUE(logits_tensor && labels_tensor);
  ASSERT_EQ(logits_tensor->info.dtype, DType::kF32);
  ASSERT_EQ(labels_tensor->info.dtype, DType::kI64);
  const int64_t n = logits_tensor->info.shape[0], classes = logits_tensor->info.shape[1];
  ASSERT_GE(n, 100);
  const auto* expected = reinterpret_cast<const float*>(logits_tensor->bytes.data());
  const auto* labels = reinterpret_cast<const int64_t*>(labels_tensor->bytes.data());

  auto examples = GenerateListOps(options, n);
  ASSERT_TRUE(examples.ok()) << examples.status();
  auto vocab = LraVocabulary::Load(dir + "/lra_vocab.json");
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  auto model = LoadLraClassifier(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<LraInput> inputs(n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ((*examples)[i].label, labels[i]) << "test example " << i << " differs from PyTorch's";
    auto ids = vocab->Encode((*examples)[i].source);
    ASSERT_TRUE(ids.ok()) << ids.status();
    inputs[i].documents.push_back({*ids, {}, 0});
  }
  std::vector<std::vector<float>> logits;
  ASSERT_TRUE((*model)->Classify(inputs, &logits).ok());
  double max_diff = 0.0;
  int engine_correct = 0, torch_correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    int engine_argmax = 0, torch_argmax = 0;
    for (int64_t k = 0; k < classes; ++k) {
      max_diff = std::max<double>(max_diff, std::abs(logits[i][k] - expected[i * classes + k]));
      if (logits[i][k] > logits[i][engine_argmax]) engine_argmax = static_cast<int>(k);
      if (expected[i * classes + k] > expected[i * classes + torch_argmax]) {
        torch_argmax = static_cast<int>(k);
      }
    }
    EXPECT_EQ(engine_argmax, torch_argmax) << "example " << i;
    engine_correct += engine_argmax == labels[i];
    torch_correct += torch_argmax == labels[i];
  }
  const double accuracy = static_cast<double>(engine_correct) / n;
  std::cout << "lra_listops fixture: max |logit diff| " << max_diff << " over " << n
            << " examples; engine accuracy " << accuracy << ", PyTorch "
            << static_cast<double>(torch_correct) / n
            << " (script, whole test split: " << report["test_accuracy"] << ")\n";
  EXPECT_LE(max_diff, 1e-4);
  EXPECT_EQ(engine_correct, torch_correct);
  if (n == 100) EXPECT_NEAR(accuracy, report["first100_accuracy"].get<double>(), 1e-12);
  EXPECT_GT(accuracy, 0.2) << "not well above chance (0.1)";
}

}  // namespace
}  // namespace hgeval::tasks::lra
