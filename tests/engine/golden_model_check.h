// Shared checks of a model against the reference fixtures in tests/golden/<model>/
// (golden_fixture.h), and the checkpoint rewrites (BF16, fla's legacy fused-MLP form) the
// golden tests repeat them on. Header-only so each *_golden_test.cc stays one
// self-contained executable.
#ifndef HGEVAL_TESTS_ENGINE_GOLDEN_MODEL_CHECK_H_
#define HGEVAL_TESTS_ENGINE_GOLDEN_MODEL_CHECK_H_

#include <algorithm>
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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/golden_fixture.h"
#include "tests/support/paths.h"

namespace hgeval::testing {

// The raw logits of every position of `ids` fed to a fresh state.
inline std::vector<float> AllLogits(Model& model, const std::vector<int32_t>& ids) {
  auto state = model.NewState();
  ForwardItem item;
  item.tokens = ids;
  item.state = state.get();
  item.want_all_logits = true;
  std::vector<ForwardOutput> out(1);
  const absl::Status status = model.Forward({&item, 1}, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  return out[0].logits;
}

// Σ_t log p(ids[t+1] | ids[..t]) through the scoring path (targets), summed in double.
inline double TailLogprob(Model& model, const std::vector<int32_t>& ids) {
  std::vector<int32_t> targets(ids.size(), -1);
  for (size_t t = 0; t + 1 < ids.size(); ++t) targets[t] = ids[t + 1];
  auto state = model.NewState();
  ForwardItem item;
  item.tokens = ids;
  item.targets = targets;
  item.state = state.get();
  std::vector<ForwardOutput> out(1);
  const absl::Status status = model.Forward({&item, 1}, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  double sum = 0.0;
  for (size_t t = 0; t + 1 < ids.size(); ++t) sum += out[0].logprob[t];
  return sum;
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

// Every logits.J within `logit_tol` (max |Δ|) and tail_logprob.J within `tail_tol` plus
// `tail_tol_per_token` for each of its T-1 terms.
inline void ExpectMatchesReference(Model& model, const GoldenExpectations& expected,
                                   double logit_tol, double tail_tol, double tail_tol_per_token,
                                   const std::string& what) {
  ASSERT_EQ(expected.cases.size(), 5u);
  for (const GoldenCase& c : expected.cases) {
    const std::vector<float> logits = AllLogits(model, c.ids);
    const double diff = MaxAbsDiff(logits, c.logits);
    EXPECT_LE(diff, logit_tol) << what << ": logits for T=" << c.ids.size();
    const double tail = TailLogprob(model, c.ids);
    const double tail_bound = tail_tol + tail_tol_per_token * (c.ids.size() - 1);
    EXPECT_NEAR(tail, c.tail_logprob, tail_bound)
        << what << ": tail_logprob for T=" << c.ids.size();
    std::printf("[%s] T=%zu max|dlogit|=%.3g |dtail|=%.3g\n", what.c_str(), c.ids.size(), diff,
                std::abs(tail - c.tail_logprob));
  }
}

// 16 greedy steps from greedy.prompt, continuing the state one token at a time; then the
// whole sequence re-scored from scratch must call every generated token greedy.
inline void ExpectGreedyMatchesReference(Model& model, const GoldenExpectations& expected,
                                         const std::string& what) {
  auto state = model.NewState();
  std::vector<int32_t> fed = expected.greedy_prompt;
  std::vector<int32_t> generated;
  std::vector<int32_t> step = expected.greedy_prompt;
  for (size_t n = 0; n < expected.greedy_output.size(); ++n) {
    ForwardItem item;
    item.tokens = step;
    item.state = state.get();
    item.want_last_logprobs = true;
    std::vector<ForwardOutput> out(1);
    const absl::Status status = model.Forward({&item, 1}, absl::MakeSpan(out));
    ASSERT_TRUE(status.ok()) << status;
    const auto& lp = out[0].last_logprobs;
    const int32_t next = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    generated.push_back(next);
    fed.push_back(next);
    step = {next};
  }
  EXPECT_EQ(generated, expected.greedy_output) << what;

  std::vector<int32_t> targets(fed.size(), -1);
  for (size_t t = expected.greedy_prompt.size() - 1; t + 1 < fed.size(); ++t) {
    targets[t] = fed[t + 1];
  }
  auto fresh = model.NewState();
  ForwardItem item;
  item.tokens = fed;
  item.targets = targets;
  item.state = fresh.get();
  std::vector<ForwardOutput> out(1);
  ASSERT_TRUE(model.Forward({&item, 1}, absl::MakeSpan(out)).ok());
  for (size_t t = expected.greedy_prompt.size() - 1; t + 1 < fed.size(); ++t) {
    EXPECT_EQ(out[0].argmax[t], fed[t + 1]) << what << ": recomputed greedy step at " << t;
  }
}

// The model in `dir` (a checkpoint folder), or null with a test failure.
inline std::unique_ptr<Model> LoadOrFail(const std::string& dir) {
  auto model = LoadModel(dir, LoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// tests/golden/<model>'s expectations, read once per test program (empty, with a test
// failure, when they cannot be read).
inline const GoldenExpectations& CachedGoldenExpectations(const std::string& model) {
  static auto* cache = new std::map<std::string, GoldenExpectations>();
  auto it = cache->find(model);
  if (it == cache->end()) {
    auto read = ReadGoldenExpectations(SourcePath("tests/golden/" + model));
    if (!read.ok()) ADD_FAILURE() << read.status();
    it = cache->emplace(model, read.ok() ? std::move(*read) : GoldenExpectations()).first;
  }
  return it->second;
}

// Every reference case (logits within `logit_tolerance` of one run, tail log-prob within
// `tail_tolerance`) and the 16 greedy tokens.
inline void ExpectCasesAndGreedyMatch(Model& model, const GoldenExpectations& golden,
                                      float logit_tolerance, double tail_tolerance) {
  ASSERT_EQ(golden.cases.size(), 5u);
  for (const auto& c : golden.cases) {
    auto run = RunCase(model, c.ids);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_LE(MaxAbsDiff(run->logits, c.logits), logit_tolerance) << "T=" << c.ids.size();
    EXPECT_NEAR(run->tail_logprob, c.tail_logprob, tail_tolerance) << "T=" << c.ids.size();
  }
  auto greedy = GreedyTokens(model, golden.greedy_prompt, 16);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(*greedy, golden.greedy_output);
}

// A BF16 checkpoint of `tensors` against an fp32 one of the same values rounded to bf16:
// the same logits to the bit and the same 16 greedy tokens (the loader widens exactly), and
// against the fp32 reference cases logits that moved (the weights were rounded) but by at
// most `logit_bound`, tail log-probs within `tail_per_token` a token.
inline void ExpectBf16FileEqualsRoundedFp32(const std::string& tag, const nlohmann::json& config,
                                            const std::map<std::string, HostTensor>& tensors,
                                            const GoldenExpectations& golden, float logit_bound,
                                            double tail_per_token) {
  auto bf16_dir = WriteCheckpointFolder(tag + "-bf16", config, tensors, DType::kBF16);
  ASSERT_TRUE(bf16_dir.ok()) << bf16_dir.status();
  std::map<std::string, HostTensor> rounded = tensors;
  for (auto& [name, tensor] : rounded) {
    for (float& x : tensor.data) x = RoundToBf16(x);
  }
  auto rounded_dir = WriteCheckpointFolder(tag + "-rounded", config, rounded, DType::kF32);
  ASSERT_TRUE(rounded_dir.ok()) << rounded_dir.status();
  auto bf16 = LoadOrFail(*bf16_dir);
  auto fp32 = LoadOrFail(*rounded_dir);
  ASSERT_NE(bf16, nullptr);
  ASSERT_NE(fp32, nullptr);
  ASSERT_EQ(golden.cases.size(), 5u);
  for (const auto& c : golden.cases) {
    auto a = RunCase(*bf16, c.ids);
    auto b = RunCase(*fp32, c.ids);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->logits, b->logits)
        << "bf16 file vs fp32 file of the same values, T=" << c.ids.size();
    EXPECT_GT(MaxAbsDiff(a->logits, c.logits), 0.0f) << "the weights were not rounded";
    EXPECT_LE(MaxAbsDiff(a->logits, c.logits), logit_bound) << "T=" << c.ids.size();
    EXPECT_NEAR(a->tail_logprob / c.ids.size(), c.tail_logprob / c.ids.size(), tail_per_token)
        << "T=" << c.ids.size();
  }
  auto greedy_bf16 = GreedyTokens(*bf16, golden.greedy_prompt, 16);
  auto greedy_fp32 = GreedyTokens(*fp32, golden.greedy_prompt, 16);
  ASSERT_TRUE(greedy_bf16.ok() && greedy_fp32.ok());
  EXPECT_EQ(*greedy_bf16, *greedy_fp32);
}

inline std::unique_ptr<Model> BuildOrDie(const Checkpoint& checkpoint) {
  auto model = BuildModel(checkpoint, LoadOptions{});
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// fla's checkpoints before b48ca31d: mlp.gate_proj [2I, D] = concat(gate, up) and no
// up_proj; configs before 6d0aa569 spell norm_eps as rms_norm_eps.
inline absl::StatusOr<std::string> WriteLegacyFusedMlpCheckpoint(const Checkpoint& checkpoint) {
  using TensorMap = std::map<std::string, HostTensor>;
  HG_ASSIGN_OR_RETURN(TensorMap tensors, ReadAllTensors(checkpoint));
  int fused = 0;
  for (auto it = tensors.begin(); it != tensors.end();) {
    if (absl::EndsWith(it->first, ".mlp.up_proj.weight")) {
      const std::string prefix =
          it->first.substr(0, it->first.size() - std::string("up_proj.weight").size());
      HostTensor& gate = tensors.at(prefix + "gate_proj.weight");
      gate.shape[0] *= 2;
      gate.data.insert(gate.data.end(), it->second.data.begin(), it->second.data.end());
      it = tensors.erase(it);
      ++fused;
    } else {
      ++it;
    }
  }
  EXPECT_GT(fused, 0);
  nlohmann::json config = checkpoint.config();
  EXPECT_TRUE(config.contains("norm_eps"));
  config["rms_norm_eps"] = config["norm_eps"];
  config.erase("norm_eps");
  return WriteCheckpointFolder("legacy", config, tensors, DType::kF32);
}

// The whole golden check of one fla/HF model folder: reference logits, tail log-probs and
// greedy tokens on the fp32 checkpoint, on its legacy fused-MLP rewrite (same tolerance:
// the same numbers), and on a BF16 rewrite.
//
// BF16: rounding every weight to bf16 (8 significant bits, relative change <= u = 2^-8)
// changes the model, so the reference logits no longer apply exactly. The exact check is
// that the BF16 checkpoint gives bitwise the same logits as an F32 checkpoint holding the
// same bf16-rounded values (the loader must widen bf16 exactly), and that those values are
// the round-to-nearest bf16 of the originals. Against the reference we only bound the
// effect of the rounding. To first order, rounding one weight tensor moves a logit z by
// about u·|z|; every tensor of these small checkpoints lies on every logit's path, so with
// N tensors the coherent worst case is |Δz| <= N·u·max|z_ref| (N = 31 to 34 here: 0.3 to
// 0.6 for logits of magnitude ~4.8). Measured drift: 0.04 (hgrn2), 0.085 (hgrn), 0.135 (gla).
// A log-softmax entry moves by at most 2·max|Δz|, so each tail term gets 2× that bound.
// Greedy tokens are not required to survive the rounding.
inline void RunGoldenModelChecks(const std::string& model) {
  const std::string dir = SourcePath("tests/golden/" + model);
  auto expected = ReadGoldenExpectations(dir);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  {
    auto m = BuildOrDie(**checkpoint);
    ASSERT_NE(m, nullptr);
    // tests/golden/report.json holds the upstream parameter count of each fixture.
    std::ifstream report_file(SourcePath("tests/golden/report.json"));
    const nlohmann::json report = nlohmann::json::parse(report_file, nullptr, false);
    ASSERT_TRUE(report.is_object() && report.contains(model)) << "report.json";
    EXPECT_EQ(m->info().num_parameters, report[model]["params"].get<int64_t>());
    ExpectMatchesReference(*m, *expected, 1e-4, 1e-3, 0.0, model + " fp32");
    ExpectGreedyMatchesReference(*m, *expected, model + " fp32");
  }
  {
    absl::StatusOr<std::string> legacy_dir = WriteLegacyFusedMlpCheckpoint(**checkpoint);
    ASSERT_TRUE(legacy_dir.ok()) << legacy_dir.status();
    auto legacy = OpenCheckpoint(*legacy_dir);
    ASSERT_TRUE(legacy.ok()) << legacy.status();
    auto m = BuildOrDie(**legacy);
    ASSERT_NE(m, nullptr);
    ExpectMatchesReference(*m, *expected, 1e-4, 1e-3, 0.0, model + " legacy fused MLP");
    ExpectGreedyMatchesReference(*m, *expected, model + " legacy fused MLP");
  }
  {
    absl::StatusOr<std::map<std::string, HostTensor>> original_or = ReadAllTensors(**checkpoint);
    ASSERT_TRUE(original_or.ok()) << original_or.status();
    const std::map<std::string, HostTensor>& original = *original_or;
    absl::StatusOr<std::string> bf16_dir =
        WriteCheckpointFolder("bf16", (*checkpoint)->config(), original, DType::kBF16);
    ASSERT_TRUE(bf16_dir.ok()) << bf16_dir.status();
    auto bf16 = OpenCheckpoint(*bf16_dir);
    ASSERT_TRUE(bf16.ok()) << bf16.status();
    for (const std::string& name : (*bf16)->TensorNames()) {
      auto info = (*bf16)->Info(name);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->dtype, DType::kBF16) << name;
    }
    absl::StatusOr<std::map<std::string, HostTensor>> rounded_or = ReadAllTensors(**bf16);
    ASSERT_TRUE(rounded_or.ok()) << rounded_or.status();
    const std::map<std::string, HostTensor>& rounded = *rounded_or;
    ASSERT_EQ(rounded.size(), original.size());
    int64_t changed = 0;
    for (const auto& [name, tensor] : original) {
      const HostTensor& r = rounded.at(name);
      ASSERT_EQ(r.shape, tensor.shape) << name;
      for (size_t i = 0; i < tensor.data.size(); ++i) {
        // Round to nearest: within half a bf16 ulp (<= 2^-8 relative), and exactly bf16.
        ASSERT_LE(std::abs(r.data[i] - tensor.data[i]), std::abs(tensor.data[i]) * 0x1p-8f)
            << name << "[" << i << "]";
        uint32_t bits;
        std::memcpy(&bits, &r.data[i], sizeof(bits));
        ASSERT_EQ(bits & 0xffffu, 0u) << name << "[" << i << "] is not a bf16 value";
        changed += r.data[i] != tensor.data[i];
      }
    }
    EXPECT_GT(changed, 0);
    absl::StatusOr<std::string> widened_dir =
        WriteCheckpointFolder("bf16w", (*checkpoint)->config(), rounded, DType::kF32);
    ASSERT_TRUE(widened_dir.ok()) << widened_dir.status();
    auto widened = OpenCheckpoint(*widened_dir);
    ASSERT_TRUE(widened.ok()) << widened.status();
    auto m_bf16 = BuildOrDie(**bf16);
    auto m_f32 = BuildOrDie(**widened);
    ASSERT_NE(m_bf16, nullptr);
    ASSERT_NE(m_f32, nullptr);
    for (const GoldenCase& c : expected->cases) {
      EXPECT_EQ(AllLogits(*m_bf16, c.ids), AllLogits(*m_f32, c.ids))
          << model << " bf16 vs f32-of-bf16 logits for T=" << c.ids.size();
    }
    double max_logit = 0.0;
    for (const GoldenCase& c : expected->cases) {
      for (float z : c.logits) max_logit = std::max(max_logit, std::abs(static_cast<double>(z)));
    }
    const double num_tensors = static_cast<double>(original.size());
    const double bf16_logit_tol = num_tensors * 0x1p-8 * max_logit;
    std::printf("[%s bf16] logit bound %.3g\n", model.c_str(), bf16_logit_tol);
    ExpectMatchesReference(*m_bf16, *expected, bf16_logit_tol, 0.0, 2.0 * bf16_logit_tol,
                           model + " bf16");
  }
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_ENGINE_GOLDEN_MODEL_CHECK_H_
