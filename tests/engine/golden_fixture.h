// The reference fixtures of tests/golden/<model>/ (expected.safetensors computed by the
// upstream implementation; see tests/golden/README.md), read through the project's own
// loader, and the tensor-level tools the golden tests rewrite checkpoints with.
#ifndef HGEVAL_TESTS_ENGINE_GOLDEN_FIXTURE_H_
#define HGEVAL_TESTS_ENGINE_GOLDEN_FIXTURE_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval::testing {

struct GoldenCase {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [T, vocab]
  double tail_logprob = 0.0;
};

struct GoldenExpectations {
  std::vector<GoldenCase> cases;  // T = 1, 7, 64, 65, 300
  std::vector<int32_t> greedy_prompt;
  std::vector<int32_t> greedy_output;
};

// Opens a folder holding only `file` (a safetensors file) through the loader: the loader
// opens folders with config.json + model.safetensors, so the file is copied into a
// temporary folder under that name next to an empty config.
inline absl::StatusOr<std::unique_ptr<Checkpoint>> OpenSafetensorsFile(const std::string& file) {
  const std::string dir = MakeTempDir("safetensors");
  std::error_code error;
  std::filesystem::copy_file(file, dir + "/model.safetensors", error);
  if (error) return absl::InternalError(absl::StrCat("copy ", file, ": ", error.message()));
  std::ofstream(dir + "/config.json") << "{}\n";
  return OpenCheckpoint(dir);
}

inline absl::StatusOr<std::vector<int32_t>> ReadIds(const Checkpoint& file,
                                                    const std::string& name) {
  auto info = file.Info(name);
  if (!info.ok()) return info.status();
  if (info->dtype != DType::kI64) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is not I64"));
  }
  auto bytes = file.RawBytes(name);
  if (!bytes.ok()) return bytes.status();
  std::vector<int32_t> ids(bytes->size() / sizeof(int64_t));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t value;
    std::memcpy(&value, bytes->data() + i * sizeof(int64_t), sizeof(value));
    ids[i] = static_cast<int32_t>(value);
  }
  return ids;
}

inline absl::StatusOr<GoldenExpectations> ReadGoldenExpectations(const std::string& model_dir) {
  auto file = OpenSafetensorsFile(model_dir + "/expected.safetensors");
  if (!file.ok()) return file.status();
  GoldenExpectations expected;
  for (int j = 0; (*file)->Has(absl::StrCat("input_ids.", j)); ++j) {
    GoldenCase c;
    auto ids = ReadIds(**file, absl::StrCat("input_ids.", j));
    if (!ids.ok()) return ids.status();
    c.ids = *ids;
    auto logits = (*file)->ReadFloat(absl::StrCat("logits.", j), {});
    if (!logits.ok()) return logits.status();
    c.logits = logits->data;
    auto tail = (*file)->ReadFloat(absl::StrCat("tail_logprob.", j), {1});
    if (!tail.ok()) return tail.status();
    c.tail_logprob = tail->data[0];
    expected.cases.push_back(std::move(c));
  }
  auto prompt = ReadIds(**file, "greedy.prompt");
  if (!prompt.ok()) return prompt.status();
  auto output = ReadIds(**file, "greedy.output");
  if (!output.ok()) return output.status();
  expected.greedy_prompt = *prompt;
  expected.greedy_output = *output;
  return expected;
}

// max |a - b| over two equally long vectors (infinity on a size mismatch or a NaN).
inline double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

// Every tensor of `checkpoint` as float.
inline absl::StatusOr<std::map<std::string, HostTensor>> ReadAllTensors(
    const Checkpoint& checkpoint) {
  std::map<std::string, HostTensor> tensors;
  for (const std::string& name : checkpoint.TensorNames()) {
    HG_ASSIGN_OR_RETURN(tensors[name], checkpoint.ReadFloat(name, {}));
  }
  return tensors;
}

// Writes config.json + model.safetensors into a fresh folder and returns it.
inline absl::StatusOr<std::string> WriteCheckpointFolder(
    const std::string& tag, const nlohmann::json& config,
    const std::map<std::string, HostTensor>& tensors, DType dtype) {
  const std::string dir = MakeTempDir(tag);
  std::ofstream(dir + "/config.json") << config.dump(2) << "\n";
  HG_RETURN_IF_ERROR(WriteSafetensors(dir + "/model.safetensors", tensors, dtype));
  return dir;
}

// Round to nearest even bfloat16, kept in fp32 (what a BF16 file holds, widened back).
inline float RoundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  float y;
  std::memcpy(&y, &bits, sizeof(y));
  return y;
}

inline absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat("bad JSON in ", path));
  return j;
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_ENGINE_GOLDEN_FIXTURE_H_
