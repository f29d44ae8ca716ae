// Batch invariance on the GPU: an item's results are bitwise the same whether it runs
// alone or packed with 19 other items of various lengths, for prefill/scoring and for
// one-token decode steps (under the decode GEMM, whose rows round up to 8, a step of 8
// rows alone and of 24 together: decode_gemm.h).
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"

namespace hgeval::testing {
namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Token ids drawn uniformly from a model's vocabulary from a fixed seed, so each test sees
// the same tokens on every run.
class RandomTokens {
 public:
  RandomTokens(const Model& m, uint32_t seed)
      : rng_(seed), dist_(0, static_cast<int>(m.info().vocab_size) - 1) {}
  int32_t Next() { return dist_(rng_); }
  std::vector<int32_t> Take(int n) {
    std::vector<int32_t> v(n);
    for (auto& x : v) x = Next();
    return v;
  }
  uint32_t Raw() { return rng_(); }  // a draw that is not a token (a length)

 private:
  std::mt19937 rng_;
  std::uniform_int_distribution<int> dist_;
};

class CudaBatchInvarianceTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CudaBatchInvarianceTest, AloneEqualsPacked) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  auto model = BuildGoldenCudaModel(family, dtype);
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  RandomTokens random(m, 99);
  const std::vector<int> lengths = {1,  5,  64, 65, 130, 1, 17, 300, 2,   9,
                                    33, 64, 3,  70, 128, 1, 40, 7,   200, 12};
  const int n = static_cast<int>(lengths.size());
  std::vector<std::vector<int32_t>> tokens(n), targets(n);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < lengths[i]; ++t) {
      tokens[i].push_back(random.Next());
      targets[i].push_back(t % 3 == 2 ? -1 : random.Next());
    }
  }
  std::vector<int32_t> step_tokens(n), step_targets(n);
  for (int i = 0; i < n; ++i) {
    step_tokens[i] = random.Next();
    step_targets[i] = random.Next();
  }

  // Alone.
  std::vector<ForwardOutput> alone(n), alone_step(n);
  for (int i = 0; i < n; ++i) {
    auto st = m.NewState();
    auto out = RunOne(m, st.get(), tokens[i], targets[i], /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    alone[i] = std::move(*out);
    auto step = RunOne(m, st.get(), {step_tokens[i]}, {step_targets[i]}, true);
    ASSERT_TRUE(step.ok()) << step.status();
    alone_step[i] = std::move(*step);
  }

  // Packed: all in one Forward, then one decode step for all.
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<ForwardItem> items(n);
  for (int i = 0; i < n; ++i) {
    states.push_back(m.NewState());
    items[i].tokens = tokens[i];
    items[i].targets = targets[i];
    items[i].state = states[i].get();
    items[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> packed(n);
  ASSERT_TRUE(m.Forward(items, absl::MakeSpan(packed)).ok());
  std::vector<ForwardItem> steps(n);
  for (int i = 0; i < n; ++i) {
    steps[i].tokens = absl::MakeConstSpan(&step_tokens[i], 1);
    steps[i].targets = absl::MakeConstSpan(&step_targets[i], 1);
    steps[i].state = states[i].get();
    steps[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> packed_step(n);
  ASSERT_TRUE(m.Forward(steps, absl::MakeSpan(packed_step)).ok());

  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(SameBits(alone[i].logprob, packed[i].logprob)) << "item " << i;
    EXPECT_EQ(alone[i].argmax, packed[i].argmax) << "item " << i;
    EXPECT_TRUE(SameBits(alone[i].last_logprobs, packed[i].last_logprobs)) << "item " << i;
    EXPECT_TRUE(SameBits(alone_step[i].logprob, packed_step[i].logprob)) << "item " << i;
    EXPECT_TRUE(SameBits(alone_step[i].last_logprobs, packed_step[i].last_logprobs))
        << "item " << i;
    EXPECT_EQ(states[i]->position(), lengths[i] + 1);
  }
}

// The packed path: probe items (short, chunk-edge, long, longer than one pack so they
// are cut into segments, and forks continuing a shared context state) give bitwise the
// same results alone, packed with 1, 7, 63 or 400 companions (a third of them forks that
// read the context state in place), at the front, the middle or the end of the batch;
// their states continue identically (checked by one more step).
TEST_P(CudaBatchInvarianceTest, PackedAnywhereEqualsAlone) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  // LLaMA past its 1024 positions: the long probe spans two packs.
  auto model = BuildGoldenCudaModel(family, dtype, /*max_context=*/32768);
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  RandomTokens random(m, 7);
  // A shared context state that forks continue from (as a task's choices do).
  const std::vector<int32_t> context = random.Take(77);
  auto context_state = m.NewState();
  ASSERT_TRUE(RunOne(m, context_state.get(), context, {}).ok());

  struct Probe {
    std::vector<int32_t> tokens, targets;
    bool fork = false;
  };
  std::vector<Probe> probes;
  for (int len : {2, 20, 64, 65, 200, 16384 + 100}) {
    Probe p;
    p.tokens = random.Take(len);
    for (int t = 0; t < len; ++t) p.targets.push_back(t % 4 == 1 ? -1 : random.Next());
    probes.push_back(p);
  }
  for (int len : {3, 21, 70}) {
    Probe p;
    p.fork = true;
    p.tokens = random.Take(len);
    p.targets = random.Take(len);
    probes.push_back(p);
  }
  const int32_t next_token = random.Next(), next_target = random.Next();
  auto start = [&](const Probe& p) { return p.fork ? context_state->Clone() : m.NewState(); };

  // Alone: the probe's own Forward, then one more step from its state.
  std::vector<ForwardOutput> alone(probes.size()), alone_next(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    auto st = start(probes[i]);
    auto out = RunOne(m, st.get(), probes[i].tokens, probes[i].targets, /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    alone[i] = std::move(*out);
    auto next = RunOne(m, st.get(), {next_token, next_token}, {next_target, next_target});
    ASSERT_TRUE(next.ok()) << next.status();
    alone_next[i] = std::move(*next);
  }

  for (int companions : {1, 7, 63, 400}) {
    std::vector<Probe> others;
    for (int c = 0; c < companions; ++c) {
      Probe o;
      o.fork = c % 3 == 0;
      o.tokens = random.Take(2 + static_cast<int>(random.Raw() % 90));
      o.targets = random.Take(static_cast<int>(o.tokens.size()));
      others.push_back(o);
    }
    for (const char* where : {"front", "middle", "end"}) {
      for (size_t i = 0; i < probes.size(); ++i) {
        std::vector<const Probe*> batch;
        batch.reserve(others.size() + 1);
        for (const Probe& o : others) batch.push_back(&o);
        const size_t at = std::string(where) == "front"    ? 0
                          : std::string(where) == "middle" ? batch.size() / 2
                                                           : batch.size();
        batch.insert(batch.begin() + at, &probes[i]);
        std::vector<std::unique_ptr<SequenceState>> states;
        std::vector<ForwardItem> items(batch.size());
        for (size_t b = 0; b < batch.size(); ++b) {
          items[b].tokens = batch[b]->tokens;
          items[b].targets = batch[b]->targets;
          items[b].want_last_logprobs = b == at;
          if (b != at && batch[b]->fork) {
            // Companion forks read the shared context state in place (ForwardItem::start).
            states.push_back(nullptr);
            items[b].start = context_state.get();
            continue;
          }
          states.push_back(start(*batch[b]));
          items[b].state = states[b].get();
        }
        std::vector<ForwardOutput> outs(batch.size());
        ASSERT_TRUE(m.Forward(items, absl::MakeSpan(outs)).ok());
        const std::string label = absl::StrCat("probe ", i, " (", probes[i].tokens.size(),
                                               " tokens) with ", companions, " at ", where);
        EXPECT_TRUE(SameBits(alone[i].logprob, outs[at].logprob)) << label;
        EXPECT_EQ(alone[i].argmax, outs[at].argmax) << label;
        EXPECT_EQ(alone[i].is_greedy, outs[at].is_greedy) << label;
        EXPECT_TRUE(SameBits(alone[i].last_logprobs, outs[at].last_logprobs)) << label;
        auto next =
            RunOne(m, states[at].get(), {next_token, next_token}, {next_target, next_target});
        ASSERT_TRUE(next.ok()) << next.status();
        EXPECT_TRUE(SameBits(alone_next[i].logprob, next->logprob)) << label << " (next)";
        // Large batches: one placement is enough to show the long probe's segments.
        if (companions == 400 && probes[i].tokens.size() > 16384) break;
      }
    }
  }
}

// A pack whose every row reports logits runs its last layer over the whole pack; one where
// fewer rows do runs its MLP, and the output norm and projection of HGRN2, GLA and TNL,
// over those rows alone, and one where none does runs no output at all
// (CudaModel::TailOnLogitRows, MixerPass::out_rows). A row's log-probabilities, argmax and
// last row, and the next token from the state left behind, are bitwise the same either
// way: probes scored at every position, then at some, then at none but the last (a
// prompt's prefill, including one longer than a pack whose first segment reports
// nothing), one by one and packed.
TEST_P(CudaBatchInvarianceTest, LogitsOfSomeRowsEqualThoseOfEveryRow) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  auto model = BuildGoldenCudaModel(family, dtype, /*max_context=*/32768);
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  RandomTokens random(m, 23);
  const std::vector<int> lengths = {1, 7, 64, 65, 300, 16384 + 70};
  const int n = static_cast<int>(lengths.size());
  std::vector<std::vector<int32_t>> tokens(n), every(n), some(n);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < lengths[i]; ++t) {
      tokens[i].push_back(random.Next());
      every[i].push_back(random.Next());
      some[i].push_back(t % 7 == 3 ? every[i].back() : -1);
    }
  }
  // Every row: the whole pack's MLP (each item alone, so each pack is all logit rows);
  // then one more token from the state it left, which must not depend on the rows.
  const std::vector<int32_t> next_token = {random.Next()};
  std::vector<ForwardOutput> full(n), full_next(n);
  for (int i = 0; i < n; ++i) {
    auto st = m.NewState();
    auto out = RunOne(m, st.get(), tokens[i], every[i], /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    full[i] = std::move(*out);
    auto next = RunOne(m, st.get(), next_token, {}, /*want_last=*/true);
    ASSERT_TRUE(next.ok()) << next.status();
    full_next[i] = std::move(*next);
  }
  // Some rows, then only the last: alone and all packed together.
  for (const bool only_last : {false, true}) {
    for (const bool packed : {false, true}) {
      std::vector<std::unique_ptr<SequenceState>> states;
      std::vector<ForwardItem> items(n);
      for (int i = 0; i < n; ++i) {
        states.push_back(m.NewState());
        items[i].tokens = tokens[i];
        if (!only_last) items[i].targets = some[i];
        items[i].state = states[i].get();
        items[i].want_last_logprobs = true;
        items[i].want_last_argmax = true;
      }
      std::vector<ForwardOutput> outs(n);
      if (packed) {
        ASSERT_TRUE(m.Forward(items, absl::MakeSpan(outs)).ok());
      } else {
        for (int i = 0; i < n; ++i) {
          ASSERT_TRUE(
              m.Forward(absl::MakeConstSpan(&items[i], 1), absl::MakeSpan(&outs[i], 1)).ok());
        }
      }
      for (int i = 0; i < n; ++i) {
        const std::string label = absl::StrCat("probe ", lengths[i], only_last ? " last" : " some",
                                               packed ? " packed" : " alone");
        EXPECT_TRUE(SameBits(full[i].last_logprobs, outs[i].last_logprobs)) << label;
        EXPECT_EQ(full[i].argmax.back(), outs[i].last_argmax) << label;
        auto next = RunOne(m, states[i].get(), next_token, {}, /*want_last=*/true);
        ASSERT_TRUE(next.ok()) << next.status();
        EXPECT_TRUE(SameBits(full_next[i].last_logprobs, next->last_logprobs))
            << label << " (next)";
        if (only_last) continue;
        for (int t = 0; t < lengths[i]; ++t) {
          if (some[i][t] < 0) continue;
          ASSERT_EQ(std::bit_cast<uint32_t>(full[i].logprob[t]),
                    std::bit_cast<uint32_t>(outs[i].logprob[t]))
              << label << " position " << t;
          ASSERT_EQ(full[i].argmax[t], outs[i].argmax[t]) << label << " position " << t;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, CudaBatchInvarianceTest, EveryFamilyAndDtype(),
                         FamilyDtypeName);

// The wgmma flash kernel.
INSTANTIATE_TEST_SUITE_P(WgmmaAttention, CudaBatchInvarianceTest, WgmmaLlamaBf16(),
                         FamilyDtypeName);

}  // namespace
}  // namespace hgeval::testing
