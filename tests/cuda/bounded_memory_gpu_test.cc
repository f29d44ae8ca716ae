// Bounded memory on the CUDA backend (issue "Bounded memory"): for every family in fp32
// and bf16, the one scorer under a state bound so small that it walks the prefix tree in
// many waves, and under a device budget so tight that batches are refused and halved,
// gives bitwise the results of an unbounded run; a LLaMA scoring pass longer than one pack
// that keeps no state (layer-major, one layer's keys and values at a time) gives bitwise
// the results of the pass that keeps its KV cache, in less memory; a request that cannot
// fit the device budget alone is refused with its size and the model goes on.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/cuda_model.h"
#include "engine/model/model.h"
#include "engine/runtime/prefix_scoring.h"
#include "engine/util/memory_budget.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"
#include "tests/support/scoped_budget_limit.h"
#include "tests/support/score_checks.h"

namespace hgeval {
namespace {

using testing::ExpectSameBits;

std::vector<int32_t> RandomTokens(std::mt19937& rng, int64_t n, int64_t vocab) {
  return testing::RandomTokenIds(rng, n, vocab);
}

class BoundedMemoryGpuTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
};

TEST_P(BoundedMemoryGpuTest, TightBoundsGiveTheUnboundedBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  auto model = testing::BuildGoldenCudaModel(family, dtype);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<ScoreRequest> requests =
      testing::SharedPrefixRequests((*model)->info().vocab_size, 1126, 4, 40, 4);

  PrefixScoreOptions unbounded;
  unbounded.state_bytes = size_t{1} << 40;
  auto expected = ScoreWithPrefixReuse(**model, requests, unbounded);
  ASSERT_TRUE(expected.ok()) << expected.status();

  PrefixScoreOptions bounded;
  bounded.state_bytes = 3 * (*model)->StateBytes(160);
  PrefixScoreStats narrow;
  auto got = ScoreWithPrefixReuse(**model, requests, bounded, &narrow);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(narrow.waves, 3);
  EXPECT_GT(narrow.dropped_states, 0);
  ExpectSameBits(*expected, *got);

  // The device budget itself: prefix states fit, whole leaf batches do not.
  MemoryBudget* budget = (*model)->memory_budget();
  ASSERT_NE(budget, nullptr);
  PrefixScoreStats halved;
  absl::StatusOr<std::vector<ScoreResult>> tight;
  {
    testing::ScopedBudgetLimit limit(budget, budget->held() + 20 * (*model)->StateBytes(160));
    tight = ScoreWithPrefixReuse(**model, requests, unbounded, &halved);
  }
  ASSERT_TRUE(tight.ok()) << tight.status();
  ExpectSameBits(*expected, *tight);
  std::printf("%s %s: %lld waves under the bound, %lld halved batches under the budget\n",
              family.c_str(), dtype.c_str(), static_cast<long long>(narrow.waves),
              static_cast<long long>(halved.split_batches));
}

INSTANTIATE_TEST_SUITE_P(Families, BoundedMemoryGpuTest, testing::EveryFamilyAndDtype(),
                         testing::FamilyDtypeName);

class LayerMajorGpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerMajorGpuTest, FreshStartLongerThanAPackEqualsTheKeptCache) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  constexpr int64_t kTokens = 2 * cuda::kPackRows + 1234;  // three segments
  auto model = testing::BuildGoldenCudaModel("llama", GetParam(), kTokens + 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto* cuda_model = dynamic_cast<cuda::CudaModel*>(model->get());
  ASSERT_NE(cuda_model, nullptr);
  std::mt19937 rng(5);
  const std::vector<int32_t> tokens = RandomTokens(rng, kTokens, (*model)->info().vocab_size);
  std::vector<int32_t> targets(tokens.size(), -1);
  for (size_t t = 0; t + 1 < tokens.size(); t += 97) targets[t] = tokens[t + 1];
  for (size_t t = tokens.size() - 40; t + 1 < tokens.size(); ++t) targets[t] = tokens[t + 1];

  auto run = [&](bool fresh, size_t* peak) -> absl::StatusOr<ForwardOutput> {
    cuda_model->ResetPeakDeviceBytes();
    const size_t base = cuda_model->device_bytes_in_use();
    std::unique_ptr<SequenceState> state = fresh ? nullptr : (*model)->NewState();
    ForwardItem item;
    item.tokens = tokens;
    item.targets = targets;
    item.state = state.get();
    item.fresh_start = fresh;
    item.want_last_logprobs = true;
    std::vector<ForwardOutput> out(1);
    absl::Status s = (*model)->Forward({&item, 1}, absl::MakeSpan(out));
    *peak = cuda_model->peak_device_bytes() - base;
    if (!s.ok()) return s;
    return out[0];
  };
  size_t kept_peak = 0, fresh_peak = 0;
  auto kept = run(false, &kept_peak);
  ASSERT_TRUE(kept.ok()) << kept.status();
  auto fresh = run(true, &fresh_peak);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_EQ(kept->logprob.size(), fresh->logprob.size());
  EXPECT_EQ(std::memcmp(kept->logprob.data(), fresh->logprob.data(),
                        kept->logprob.size() * sizeof(float)),
            0);
  EXPECT_EQ(kept->argmax, fresh->argmax);
  EXPECT_EQ(kept->last_logprobs, fresh->last_logprobs);
  std::printf(
      "llama %s, %lld tokens: extra device memory %.1f MiB keeping the cache, %.1f MiB "
      "layer-major\n",
      GetParam().c_str(), static_cast<long long>(kTokens), kept_peak / 1048576.0,
      fresh_peak / 1048576.0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerMajorGpuTest, ::testing::Values("fp32", "bf16"));

TEST(BoundedMemoryGpu, RequestLargerThanTheBudgetIsRefusedWithItsSize) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  auto model = testing::BuildGoldenCudaModel("llama", "bf16");
  ASSERT_TRUE(model.ok()) << model.status();
  MemoryBudget* budget = (*model)->memory_budget();
  ASSERT_NE(budget, nullptr);
  std::mt19937 rng(9);
  ScoreRequest request;
  request.context = RandomTokens(rng, 400, (*model)->info().vocab_size);
  request.continuation = RandomTokens(rng, 4, (*model)->info().vocab_size);
  auto fits = ScoreWithPrefixReuse(**model, {request}, PrefixScoreOptions{});
  ASSERT_TRUE(fits.ok()) << fits.status();
  absl::StatusOr<std::vector<ScoreResult>> refused;
  {
    // Cached blocks go back to the driver first, so the limit counts live memory only.
    testing::ScopedBudgetLimit limit(budget, budget->held());
    budget->Reserve(size_t{1} << 62, "trim").IgnoreError();
    budget->SetLimit(budget->held() + (*model)->StateBytes(32));
    refused = ScoreWithPrefixReuse(**model, {request}, PrefixScoreOptions{});
  }
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("budget of"), std::string::npos) << refused.status();
  auto again = ScoreWithPrefixReuse(**model, {request}, PrefixScoreOptions{});
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectSameBits(*fits, *again);
}

}  // namespace
}  // namespace hgeval
