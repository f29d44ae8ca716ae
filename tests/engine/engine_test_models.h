// The checkpoints the family-independent engine tests (model_fork_test,
// model_batch_invariance_test) run on: repo-relative paths of Hugging Face folders or
// llama2.c .bin files. To cover another family, add its fixture here.
#ifndef HGEVAL_TESTS_ENGINE_ENGINE_TEST_MODELS_H_
#define HGEVAL_TESTS_ENGINE_ENGINE_TEST_MODELS_H_

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::testing {

inline std::vector<std::string> EngineTestModels() {
  // clang-format off
  return {
      "tests/golden/hgrn2",
      "tests/golden/hgrn",
      "tests/golden/gla",
      "tests/golden/llama",
      "tests/golden/mamba",
      "data/models/stories260K/stories260K.bin",
  };
  // clang-format on
}

// A gtest parameter name for a model path ("tests/golden/hgrn2" -> "tests_golden_hgrn2").
inline std::string ModelTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

inline std::unique_ptr<Model> LoadTestModel(const std::string& relative_path) {
  auto model = LoadModel(SourcePath(relative_path), LoadOptions{});
  EXPECT_TRUE(model.ok()) << relative_path << ": " << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_ENGINE_ENGINE_TEST_MODELS_H_
