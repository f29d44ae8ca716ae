// libFuzzer target: a checkpoint's config.json through ParseModelConfig, the CPU model
// construction of every family (HGRN2, HGRN, GLA, LLaMA, Mamba, TNL) and one tiny forward
// pass (issue 28: no crash from a checkpoint). Input: config.json text, optionally followed
// by a NUL byte and one "absent" byte that drops some of the tensors the model asks for
// (optional biases, tied heads, legacy names, whole layers). The weights are the ones the
// config implies: the checkpoint hands out whatever shape the loader asks for, filled with
// small deterministic values. Anything but a clean absl::Status refusal (a crash, an
// escaped exception, a sanitizer report, an INTERNAL/UNKNOWN status, a loaded model whose
// forward pass fails) stops the run.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "nlohmann/json.hpp"

namespace hgeval {
namespace {

// Per tensor and per model: a config may declare any size; materialising it is not
// what this target tests (see kMaxDim below), but no input may make the fuzzer OOM.
constexpr int64_t kMaxTensorElements = int64_t{1} << 20;
constexpr int64_t kMaxModelElements = int64_t{1} << 23;

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

uint64_t NameHash(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// A checkpoint whose tensors are whatever the model reads: ReadFloat(name, shape) returns
// that shape, values uniform in ±1/sqrt(last dim) (deterministic per name). With `absent`
// non-zero, a name is missing when its hash says so (about one in four).
class ConfigImpliedCheckpoint : public Checkpoint {
 public:
  ConfigImpliedCheckpoint(nlohmann::json config, int64_t layers, uint8_t absent)
      : config_(std::move(config)), absent_(absent) {
    for (int64_t l = 0; l < layers; ++l) {
      const std::string name = absl::StrCat("model.layers.", l, ".weight");
      if (Has(name)) names_.push_back(name);
    }
  }

  const nlohmann::json& config() const override { return config_; }
  const std::string& source() const override { return source_; }
  std::vector<std::string> TensorNames() const override { return names_; }
  bool Has(std::string_view name) const override {
    return absent_ == 0 || Mix(NameHash(name) ^ absent_) % 4 != 0;
  }
  absl::StatusOr<TensorInfo> Info(std::string_view name) const override {
    auto it = shapes_.find(std::string(name));
    if (!Has(name) || it == shapes_.end()) {
      return absl::NotFoundError(absl::StrCat("<fuzz>: no tensor '", std::string(name), "'"));
    }
    return TensorInfo{std::string(name), DType::kF32, it->second, source_};
  }
  absl::StatusOr<HostTensor> ReadFloat(std::string_view name,
                                       absl::Span<const int64_t> expected_shape) const override {
    if (!Has(name) || expected_shape.empty()) {
      return absl::NotFoundError(absl::StrCat("<fuzz>: no tensor '", std::string(name), "'"));
    }
    int64_t count = 1;
    for (int64_t d : expected_shape) {
      if (d < 0 || (d > 0 && count > kMaxTensorElements / d)) {
        return absl::ResourceExhaustedError(
            absl::StrCat("<fuzz>: '", std::string(name), "' too large"));
      }
      count *= d;
    }
    if (count > kMaxTensorElements || total_ + count > kMaxModelElements) {
      return absl::ResourceExhaustedError(
          absl::StrCat("<fuzz>: '", std::string(name), "' too large"));
    }
    total_ += count;
    HostTensor t;
    t.shape.assign(expected_shape.begin(), expected_shape.end());
    t.data.resize(count);
    const int64_t last = std::max<int64_t>(1, expected_shape.back());
    const float amplitude = 1.0f / std::sqrt(static_cast<float>(last));
    uint64_t x = NameHash(name);
    for (float& v : t.data) {
      x = Mix(x + 0x9E3779B97F4A7C15ull);
      v = (static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f) * amplitude;
    }
    shapes_[std::string(name)] = t.shape;
    return t;
  }
  absl::StatusOr<absl::Span<const uint8_t>> RawBytes(std::string_view name) const override {
    return absl::UnimplementedError(
        absl::StrCat("<fuzz>: no raw bytes of '", std::string(name), "'"));
  }
  std::string ContentHash() const override { return "fuzz"; }

 private:
  nlohmann::json config_;
  uint8_t absent_;
  std::string source_ = "<fuzz>";
  std::vector<std::string> names_;
  mutable std::map<std::string, std::vector<int64_t>> shapes_;
  mutable int64_t total_ = 0;
};

// A valid config of a huge model allocates in proportion (bounded by --host_memory, not
// by parsing): beyond these sizes the target stops after ParseModelConfig.
constexpr int64_t kMaxDim = 1024;

bool SmallEnough(const ModelConfig& c) {
  for (int64_t v : {c.vocab_size, c.hidden_size, c.intermediate_size, c.expand_ratio, c.num_heads,
                    c.num_kv_heads, c.head_dim, c.mamba_inner, c.state_size, c.time_step_rank,
                    c.conv_size, c.conv_kernel}) {
    if (v > kMaxDim) return false;
  }
  return c.num_layers <= 6 && c.hidden_size * c.expand_ratio <= kMaxDim * 4;
}

void Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "model_config_fuzz: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::abort();
}

// MODEL_CONFIG_FUZZ_VERBOSE=1: one line per input saying how far it went (seed checks).
void Report(const std::string& outcome) {
  static const bool verbose = std::getenv("MODEL_CONFIG_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "model_config_fuzz: %s\n", outcome.c_str());
}

bool Unmapped(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInternal ||
         status.code() == absl::StatusCode::kUnknown;
}

void RunOne(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const uint8_t absent =
      nul != std::string_view::npos && nul + 1 < input.size() ? input[nul + 1] : 0;
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return;
  absl::StatusOr<ModelConfig> parsed = ParseModelConfig(config);
  if (!parsed.ok()) {
    if (Unmapped(parsed.status())) Fail("ParseModelConfig", parsed.status());
    Report("config refused: " + parsed.status().ToString());
    return;
  }
  if (!SmallEnough(*parsed)) {
    Report("config too large to build");
    return;
  }
  ConfigImpliedCheckpoint checkpoint(std::move(config), parsed->num_layers, absent);
  LoadOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Model>> model = BuildModel(checkpoint, options);
  if (!model.ok()) {
    if (Unmapped(model.status())) Fail("BuildModel", model.status());
    Report("model refused: " + model.status().ToString());
    return;
  }
  const int64_t vocab = (*model)->info().vocab_size;
  if (vocab <= 0) Fail("a model that loaded", absl::InternalError("no vocabulary"));
  std::vector<int32_t> tokens, targets;
  for (int32_t t = 0; t < 5; ++t) {
    tokens.push_back(static_cast<int32_t>((t * 7 + 1) % vocab));
    targets.push_back(t + 1 < 5 ? static_cast<int32_t>(((t + 1) * 7 + 1) % vocab) : -1);
  }
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.fresh_start = true;
  item.want_last_logprobs = true;
  item.want_last_argmax = true;
  item.top_k = 2;
  std::vector<ForwardOutput> out(1);
  const absl::Status status = (*model)->Forward({&item, 1}, absl::MakeSpan(out));
  if (!status.ok()) Fail("Forward of a model that loaded", status);
  Report(absl::StrCat("loaded and ran: ", std::string(ModelFamilyName(parsed->family))));
}

}  // namespace
}  // namespace hgeval

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgeval::RunOne(data, size);
  return 0;
}
