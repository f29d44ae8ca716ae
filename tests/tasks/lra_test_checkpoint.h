// Writes small random-weight LRA classifier checkpoints in the engine's layout
// (docs/lra.md): config.json, model.safetensors and, for token models, lra_vocab.json.
// For tests of the task and service paths (not of the numbers).
#ifndef HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_
#define HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_

#include <cmath>
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
  int image_side = 0;                  // > 0: 2-D scans over side x side ...
  int image_width = 0;                 // ... or side x image_width when > 0
  bool retrieval = false;
  int classes = 10;
  int d = 8;
  int layers = 2;
  std::string norm = "batch";
  int expand_ratio = 2;  // HGRN2 head size
  int glu_expand_ratio = 1;
  bool positional = true;
  bool lower_bound = true;  // a lower_bounds tensor (use_lower_bound)
  bool mixer_norm = true;   // HGRN2's norm before out_proj
  bool biases = true;       // every nn.Linear bias
  // Linear weights U(-1/sqrt(in), 1/sqrt(in)) instead of U(-0.5, 0.5) (wide models).
  bool fan_in_scale = false;
};

// A random-weight checkpoint's parts: config.json, the tensors and (token models)
// lra_vocab.json (null otherwise).
struct LraTestCheckpoint {
  nlohmann::json config;
  std::map<std::string, HostTensor> tensors;
  nlohmann::json vocab;
};

inline LraTestCheckpoint RandomLraCheckpoint(const LraTestSpec& spec, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  LraTestCheckpoint out;
  std::map<std::string, HostTensor>& w = out.tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float offset = 0.0f,
                 float scale = 0.5f) {
    w[name] = RandomHostTensor(std::move(shape), rng, scale, offset);
  };
  auto linear = [&](const std::string& name, int64_t out_features, int64_t in) {
    add(name + ".weight", {out_features, in}, 0.0f,
        spec.fan_in_scale ? 1.0f / std::sqrt(static_cast<float>(in)) : 0.5f);
    if (spec.biases) add(name + ".bias", {out_features});
  };
  const int64_t d = spec.d, h = spec.d * spec.glu_expand_ratio;
  auto norm = [&](const std::string& name, int64_t width, bool batch) {
    add(name + ".weight", {width}, 1.0f);
    add(name + ".bias", {width});
    if (batch) {
      add(name + ".running_mean", {width});
      add(name + ".running_var", {width}, 1.0f);
    }
  };
  const bool batch = spec.norm == "batch";
  int64_t vocab_size = 0;
  if (spec.vocab_kind == "listops") {
    out.vocab = {{"kind", "listops"},
                 {"tokens",
                  {"<pad>", "<unk>", "<eos>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
                   "[MIN", "[MAX", "[MED", "[SM", "]"}},
                 {"unk_id", 1},
                 {"eos_id", 2},
                 {"append_eos", true},
                 {"max_length", 2048}};
    vocab_size = 18;
  } else if (spec.vocab_kind == "bytes") {
    out.vocab = {{"kind", "bytes"}, {"byte_offset", 1}, {"max_length", 512}};
    vocab_size = 257;
  }
  if (vocab_size > 0) {
    add("encoder.weight", {vocab_size, d});
  } else {
    linear("encoder", d, spec.channels);
  }
  if (spec.lower_bound) add("lower_bounds", {spec.layers, d});
  for (int l = 0; l < spec.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    norm(p + ".mixer_norm", d, batch);
    norm(p + ".glu_norm", d, batch);
    if (spec.mixer == "hgrn2") {
      linear(p + ".mixer.in_proj", 3 * d, d);
      if (spec.mixer_norm) norm(p + ".mixer.norm", d, false);
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
    linear(p + ".glu.l1", h, d);
    linear(p + ".glu.l2", h, d);
    linear(p + ".glu.l3", d, h);
  }
  norm("final_norm", d, batch);
  if (spec.retrieval) {
    linear("head.fc1", d, 4 * d);
    linear("head.fc2", spec.classes, d);
  } else {
    linear("head", spec.classes, d);
  }
  nlohmann::json& config = out.config;
  config = {{"model_type", "lra_classifier"},
            {"mixer", spec.mixer},
            {"encoder", vocab_size > 0 ? "embedding" : "linear"},
            {"hidden_size", d},
            {"num_layers", spec.layers},
            {"expand_ratio", spec.expand_ratio},
            {"norm", spec.norm},
            {"positional", spec.positional},
            {"head", spec.retrieval ? "retrieval" : "linear"},
            {"num_classes", spec.classes}};
  if (spec.glu_expand_ratio != 1) config["glu_expand_ratio"] = spec.glu_expand_ratio;
  if (!spec.lower_bound) config["use_lower_bound"] = false;
  if (!spec.mixer_norm) config["mixer_norm"] = false;
  if (vocab_size > 0) config["vocab_size"] = vocab_size;
  if (vocab_size == 0) {
    config["input_channels"] = spec.channels;
    config["input_mean"] = std::vector<float>(spec.channels, 0.5f);
    config["input_std"] = std::vector<float>(spec.channels, 0.5f);
  }
  if (spec.image_side > 0) {
    config["scan"] = "2d";
    config["image_height"] = spec.image_side;
    config["image_width"] = spec.image_width > 0 ? spec.image_width : spec.image_side;
  }
  return out;
}

inline void WriteRandomLraCheckpoint(const std::string& dir, const LraTestSpec& spec,
                                     uint32_t seed = 1) {
  const LraTestCheckpoint c = RandomLraCheckpoint(spec, seed);
  std::ofstream(dir + "/config.json") << c.config.dump(2);
  if (!c.vocab.is_null()) std::ofstream(dir + "/lra_vocab.json") << c.vocab.dump(2);
  (void)WriteSafetensors(dir + "/model.safetensors", c.tensors, DType::kF32);
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_TASKS_LRA_TEST_CHECKPOINT_H_
