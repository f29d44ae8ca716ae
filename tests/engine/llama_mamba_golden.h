// Shared helpers of the LLaMA / Mamba / stories260K golden tests: reading the reference
// fixtures (tests/golden/<model>/expected.safetensors) through the loader, running a model
// on them, and rewriting a checkpoint in another dtype or layout.
#ifndef HGEVAL_TESTS_ENGINE_LLAMA_MAMBA_GOLDEN_H_
#define HGEVAL_TESTS_ENGINE_LLAMA_MAMBA_GOLDEN_H_

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
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval::testing {

// The CPU model for a checkpoint folder or llama2.c .bin, through the public LoadModel.
inline absl::StatusOr<std::unique_ptr<Model>> LoadCpuModel(const std::string& path) {
  return LoadModel(path, LoadOptions());
}

struct GoldenCase {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [T, vocab]
  double tail_logprob = 0.0;
};

struct Golden {
  std::vector<GoldenCase> cases;  // input_ids.J / logits.J / tail_logprob.J, J = 0..4
  std::vector<int32_t> greedy_prompt;
  std::vector<int32_t> greedy_output;
};

inline absl::StatusOr<std::vector<int32_t>> ReadIds(const Checkpoint& file,
                                                    const std::string& name) {
  HG_ASSIGN_OR_RETURN(TensorInfo info, file.Info(name));
  if (info.dtype != DType::kI64) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is not int64"));
  }
  HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> raw, file.RawBytes(name));
  std::vector<int32_t> ids(raw.size() / sizeof(int64_t));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t v;
    std::memcpy(&v, raw.data() + i * sizeof(int64_t), sizeof(v));
    ids[i] = static_cast<int32_t>(v);
  }
  return ids;
}

// expected.safetensors is opened as a checkpoint folder (its model's config.json beside a
// copy of it named model.safetensors), so it is read by the project's own loader.
inline absl::StatusOr<Golden> ReadGolden(const std::string& model_dir) {
  const std::string dir = MakeTempDir("golden-expected");
  std::filesystem::copy_file(model_dir + "/config.json", dir + "/config.json");
  std::filesystem::copy_file(model_dir + "/expected.safetensors", dir + "/model.safetensors");
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, OpenCheckpoint(dir));
  Golden golden;
  for (int j = 0; file->Has(absl::StrCat("input_ids.", j)); ++j) {
    GoldenCase c;
    HG_ASSIGN_OR_RETURN(c.ids, ReadIds(*file, absl::StrCat("input_ids.", j)));
    HG_ASSIGN_OR_RETURN(HostTensor logits, file->ReadFloat(absl::StrCat("logits.", j), {}));
    c.logits = std::move(logits.data);
    HG_ASSIGN_OR_RETURN(HostTensor tail, file->ReadFloat(absl::StrCat("tail_logprob.", j), {1}));
    c.tail_logprob = tail.data[0];
    golden.cases.push_back(std::move(c));
  }
  HG_ASSIGN_OR_RETURN(golden.greedy_prompt, ReadIds(*file, "greedy.prompt"));
  HG_ASSIGN_OR_RETURN(golden.greedy_output, ReadIds(*file, "greedy.output"));
  return golden;
}

struct CaseRun {
  std::vector<float> logits;  // [T, vocab]
  double tail_logprob = 0.0;  // Σ_t log p(ids[t+1] | ids[..t]), summed in double
};

// One fresh sequence through Model::Forward with every logit materialised.
inline absl::StatusOr<CaseRun> RunCase(Model& model, const std::vector<int32_t>& ids) {
  std::vector<int32_t> targets(ids.size(), -1);
  for (size_t t = 0; t + 1 < ids.size(); ++t) targets[t] = ids[t + 1];
  std::unique_ptr<SequenceState> state = model.NewState();
  ForwardItem item;
  item.tokens = ids;
  item.targets = targets;
  item.state = state.get();
  item.want_all_logits = true;
  std::vector<ForwardOutput> out(1);
  HG_RETURN_IF_ERROR(model.Forward({&item, 1}, absl::MakeSpan(out)));
  CaseRun run;
  run.logits = std::move(out[0].logits);
  for (size_t t = 0; t + 1 < ids.size(); ++t) run.tail_logprob += out[0].logprob[t];
  return run;
}

inline float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

// Greedy decoding through the runtime (KV cache / recurrent state, one token per step).
inline absl::StatusOr<std::vector<int32_t>> GreedyTokens(Model& model,
                                                         const std::vector<int32_t>& prompt,
                                                         int steps) {
  GenerateRequest request;
  request.prompt = prompt;
  request.max_new_tokens = steps;
  HG_ASSIGN_OR_RETURN(std::vector<GenerateResult> results, Generate(model, nullptr, {&request, 1}));
  return results[0].tokens;
}

inline absl::StatusOr<std::map<std::string, HostTensor>> ReadAllTensors(const Checkpoint& ckpt) {
  std::map<std::string, HostTensor> tensors;
  for (const std::string& name : ckpt.TensorNames()) {
    HG_ASSIGN_OR_RETURN(tensors[name], ckpt.ReadFloat(name, {}));
  }
  return tensors;
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

// Writes config.json + model.safetensors into a fresh folder and returns it.
inline absl::StatusOr<std::string> WriteCheckpointFolder(
    const std::string& tag, const nlohmann::json& config,
    const std::map<std::string, HostTensor>& tensors, DType dtype) {
  const std::string dir = MakeTempDir(tag);
  std::ofstream(dir + "/config.json") << config.dump(2);
  HG_RETURN_IF_ERROR(WriteSafetensors(dir + "/model.safetensors", tensors, dtype));
  return dir;
}

inline absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat("bad JSON in ", path));
  return j;
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_ENGINE_LLAMA_MAMBA_GOLDEN_H_
