// A LLaMA with the MQAR vocabulary (8192) for tests that run the standard mqar task: the
// golden LLaMA (tests/golden/llama, vocab 512) with its embedding and output rows
// widened to 8192 (rows tiled, each scaled a little so that no two logits tie). It has
// no tokenizer, like a checkpoint trained on MQAR.
#ifndef HGEVAL_TESTS_TASKS_MQAR_TEST_MODEL_H_
#define HGEVAL_TESTS_TASKS_MQAR_TEST_MODEL_H_

#include <fstream>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "engine/loader/checkpoint.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval::testing {

inline constexpr int64_t kMqarVocab = 8192;

// Writes config.json and model.safetensors into the existing folder `dir`.
inline absl::Status WriteMqarVocabLlama(const std::string& dir) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> golden,
                      OpenCheckpoint(SourcePath("tests/golden/llama")));
  nlohmann::json config = golden->config();
  const int64_t old_vocab = config["vocab_size"].get<int64_t>();
  config["vocab_size"] = kMqarVocab;
  std::ofstream(dir + "/config.json") << config.dump(2);
  std::map<std::string, HostTensor> tensors;
  for (const std::string& name : golden->TensorNames()) {
    HG_ASSIGN_OR_RETURN(HostTensor tensor, golden->ReadFloat(name, {}));
    if (!tensor.shape.empty() && tensor.shape[0] == old_vocab) {
      const int64_t width = tensor.numel() / old_vocab;
      HostTensor wide;
      wide.shape = tensor.shape;
      wide.shape[0] = kMqarVocab;
      wide.data.resize(static_cast<size_t>(kMqarVocab * width));
      for (int64_t row = 0; row < kMqarVocab; ++row) {
        const float scale = 1.0f + static_cast<float>(row) / static_cast<float>(4 * kMqarVocab);
        for (int64_t c = 0; c < width; ++c) {
          wide.data[row * width + c] = tensor.data[(row % old_vocab) * width + c] * scale;
        }
      }
      tensor = std::move(wide);
    }
    tensors[name] = std::move(tensor);
  }
  return WriteSafetensors(dir + "/model.safetensors", tensors, DType::kF32);
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_TASKS_MQAR_TEST_MODEL_H_
