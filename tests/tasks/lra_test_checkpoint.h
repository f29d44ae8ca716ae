// Writes small random-weight LRA classifier checkpoints in the engine's layout
// (docs/lra.md): config.json, model.safetensors and, for token models, lra_vocab.json.
// For tests of the task and service paths (not of the numbers).
#ifndef HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_
#define HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/loader/checkpoint.h"
#include "nlohmann/json.hpp"

namespace hgeval::testing {

// A tensor of `shape` with values offset + U(-scale, scale).
inline HostTensor RandomHostTensor(std::vector<int64_t> shape, std::mt19937& rng, float scale,
                                   float offset = 0.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  HostTensor t{shape, {}};
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (int64_t i = 0; i < n; ++i) t.data.push_back(offset + u(rng));
  return t;
}

struct LraTestSpec {
  std::string mixer = "hgrn2";         // or "hgrn1"
  std::string vocab_kind = "listops";  // "listops", "bytes"; "" for pixel models
  int channels = 0;                    // pixel models: 1 or 3
  int image_side = 0;                  // > 0: 2-D scans over side x side
  bool retrieval = false;
  int classes = 10;
  int d = 8;
  int layers = 2;
  std::string norm = "batch";
};

inline void WriteRandomLraCheckpoint(const std::string& dir, const LraTestSpec& spec,
                                     uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::map<std::string, HostTensor> w;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float offset = 0.0f) {
    w[name] = RandomHostTensor(std::move(shape), rng, 0.5f, offset);
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    add(name + ".weight", {out, in});
    add(name + ".bias", {out});
  };
  const int64_t d = spec.d;
  auto norm = [&](const std::string& name, int64_t width, bool batch) {
    add(name + ".weight", {width}, 1.0f);
    add(name + ".bias", {width});
    if (batch) {
      add(name + ".running_mean", {width});
      add(name + ".running_var", {width}, 1.0f);
    }
  };
  const bool batch = spec.norm == "batch";
  nlohmann::json vocab;
  int64_t vocab_size = 0;
  if (spec.vocab_kind == "listops") {
    vocab = {{"kind", "listops"},
             {"tokens",
              {"<pad>", "<unk>", "<eos>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN",
               "[MAX", "[MED", "[SM", "]"}},
             {"unk_id", 1},
             {"eos_id", 2},
             {"append_eos", true},
             {"max_length", 2048}};
    vocab_size = 18;
  } else if (spec.vocab_kind == "bytes") {
    vocab = {{"kind", "bytes"}, {"byte_offset", 1}, {"max_length", 512}};
    vocab_size = 257;
  }
  if (vocab_size > 0) {
    add("encoder.weight", {vocab_size, d});
  } else {
    linear("encoder", d, spec.channels);
  }
  add("lower_bounds", {spec.layers, d});
  for (int l = 0; l < spec.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    norm(p + ".mixer_norm", d, batch);
    norm(p + ".glu_norm", d, batch);
    if (spec.mixer == "hgrn2") {
      linear(p + ".mixer.in_proj", 3 * d, d);
      norm(p + ".mixer.norm", d, false);
      linear(p + ".mixer.out_proj", d, d);
    } else {
      linear(p + ".mixer.input_proj", 2 * d, d);
      linear(p + ".mixer.lambda_proj", d, d);
      linear(p + ".mixer.gate", 2 * d, d);
      norm(p + ".mixer.norm", 2 * d, false);
      linear(p + ".mixer.out_proj", d, 2 * d);
      add(p + ".mixer.theta_forward", {d});
      add(p + ".mixer.theta_reverse", {d});
    }
    linear(p + ".glu.l1", d, d);
    linear(p + ".glu.l2", d, d);
    linear(p + ".glu.l3", d, d);
  }
  norm("final_norm", d, batch);
  if (spec.retrieval) {
    linear("head.fc1", d, 4 * d);
    linear("head.fc2", spec.classes, d);
  } else {
    linear("head", spec.classes, d);
  }
  nlohmann::json config = {{"model_type", "lra_classifier"},
                           {"mixer", spec.mixer},
                           {"encoder", vocab_size > 0 ? "embedding" : "linear"},
                           {"hidden_size", d},
                           {"num_layers", spec.layers},
                           {"expand_ratio", 2},
                           {"norm", spec.norm},
                           {"positional", true},
                           {"head", spec.retrieval ? "retrieval" : "linear"},
                           {"num_classes", spec.classes}};
  if (vocab_size > 0) config["vocab_size"] = vocab_size;
  if (vocab_size == 0) {
    config["input_channels"] = spec.channels;
    config["input_mean"] = std::vector<float>(spec.channels, 0.5f);
    config["input_std"] = std::vector<float>(spec.channels, 0.5f);
  }
  if (spec.image_side > 0) {
    config["scan"] = "2d";
    config["image_height"] = spec.image_side;
    config["image_width"] = spec.image_side;
  }
  std::ofstream(dir + "/config.json") << config.dump(2);
  if (vocab_size > 0) std::ofstream(dir + "/lra_vocab.json") << vocab.dump(2);
  (void)WriteSafetensors(dir + "/model.safetensors", w, DType::kF32);
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_
