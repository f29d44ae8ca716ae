// The runtime layer (Score, PrefillWithSnapshots, Generate) on real golden checkpoints:
// it must add nothing to and lose nothing from what Model::Forward computes.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

std::vector<int32_t> ReadIds(const Checkpoint& expected, const std::string& name) {
  auto info = expected.Info(name);
  EXPECT_TRUE(info.ok()) << info.status();
  auto bytes = expected.RawBytes(name);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  std::vector<int32_t> ids(bytes->size() / sizeof(int64_t));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t v;
    std::memcpy(&v, bytes->data() + i * sizeof(int64_t), sizeof(v));
    ids[i] = static_cast<int32_t>(v);
  }
  return ids;
}

class RuntimeGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string dir = testing::SourcePath("tests/golden/" + GetParam());
    auto model = LoadModel(dir, LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    dir_ = dir;
  }
  std::unique_ptr<Model> model_;
  std::string dir_;
};

// Reads tensors of expected.safetensors by writing a temporary folder that names it.
std::unique_ptr<Checkpoint> OpenExpected(const std::string& dir) {
  const std::string tmp = testing::MakeTempDir("expected");
  std::filesystem::copy_file(dir + "/config.json", tmp + "/config.json");
  std::filesystem::create_symlink(dir + "/expected.safetensors", tmp + "/model.safetensors");
  auto ckpt = OpenCheckpoint(tmp);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  return ckpt.ok() ? *std::move(ckpt) : nullptr;
}

TEST_P(RuntimeGoldenTest, ScoreEqualsTailLogprobOfTheReference) {
  auto expected = OpenExpected(dir_);
  ASSERT_NE(expected, nullptr);
  const std::vector<int32_t> ids = ReadIds(*expected, "input_ids.300");
  auto tail = expected->ReadFloat("tail_logprob.300", {});
  ASSERT_TRUE(tail.ok()) << tail.status();
  ScoreRequest request;
  request.context = {ids[0]};
  request.continuation.assign(ids.begin() + 1, ids.end());
  auto results = Score(*model_, absl::MakeConstSpan(&request, 1));
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_NEAR((*results)[0].logprob, tail->data[0], 1e-3);
  EXPECT_EQ((*results)[0].token_logprobs.size(), ids.size() - 1);
}

TEST_P(RuntimeGoldenTest, SnapshotsContinueLikeOneLongRun) {
  auto expected = OpenExpected(dir_);
  ASSERT_NE(expected, nullptr);
  const std::vector<int32_t> ids = ReadIds(*expected, "input_ids.300");
  const std::vector<int64_t> cuts = {1, 64, 65, 200};
  auto snapshots = PrefillWithSnapshots(*model_, ids, cuts);
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  ScoreRequest whole;
  whole.context = {ids[0]};
  whole.continuation.assign(ids.begin() + 1, ids.end());
  auto reference = Score(*model_, absl::MakeConstSpan(&whole, 1));
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (size_t c = 0; c < cuts.size(); ++c) {
    // Fork after cut-1 tokens: context = the cut's last token, then the rest.
    auto fork_base = PrefillWithSnapshots(*model_, ids, std::vector<int64_t>{cuts[c] - 1});
    ASSERT_TRUE(fork_base.ok());
    ScoreRequest branch;
    branch.start = (*fork_base)[0].get();
    branch.context = {ids[cuts[c] - 1]};
    branch.continuation.assign(ids.begin() + cuts[c], ids.end());
    auto scored = Score(*model_, absl::MakeConstSpan(&branch, 1));
    ASSERT_TRUE(scored.ok()) << scored.status();
    for (size_t j = 0; j < branch.continuation.size(); ++j) {
      EXPECT_NEAR(scored->at(0).token_logprobs[j],
                  reference->at(0).token_logprobs[cuts[c] - 1 + j], 1e-5)
          << "cut " << cuts[c] << " token " << j;
    }
    EXPECT_EQ((*snapshots)[c]->position(), cuts[c]);
  }
}

TEST_P(RuntimeGoldenTest, GreedyGenerationReproducesTheReference) {
  auto expected = OpenExpected(dir_);
  ASSERT_NE(expected, nullptr);
  GenerateRequest request;
  request.prompt = ReadIds(*expected, "greedy.prompt");
  const std::vector<int32_t> want = ReadIds(*expected, "greedy.output");
  request.max_new_tokens = static_cast<int>(want.size());
  // Two copies decoded together with a sampled third: batching must not change them.
  GenerateRequest sampled = request;
  sampled.sampling = {.temperature = 0.8f, .top_p = 0.9f, .seed = 5};
  std::vector<GenerateRequest> requests = {request, sampled, request};
  auto results = Generate(*model_, nullptr, requests);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].tokens, want);
  EXPECT_EQ((*results)[2].tokens, want);
  EXPECT_EQ((*results)[0].finish_reason, FinishReason::kLength);
  // The sampled one is reproducible from its seed.
  auto again = Generate(*model_, nullptr, absl::MakeConstSpan(&sampled, 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].tokens, (*results)[1].tokens);
}

TEST_P(RuntimeGoldenTest, RejectsEmptyContinuationAndOutOfRangeIds) {
  ScoreRequest empty;
  empty.context = {1};
  EXPECT_EQ(Score(*model_, absl::MakeConstSpan(&empty, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ScoreRequest bad;
  bad.context = {1};
  bad.continuation = {static_cast<int32_t>(model_->info().vocab_size)};
  EXPECT_EQ(Score(*model_, absl::MakeConstSpan(&bad, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Families, RuntimeGoldenTest,
                         ::testing::Values("hgrn2", "hgrn", "gla", "llama", "mamba"));

}  // namespace
}  // namespace hgeval
