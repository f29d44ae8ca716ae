// The NIAH sweep's default batch: wide for recurrent models on CUDA, 8 elsewhere.
#include "gtest/gtest.h"
#include "tasks/niah/sweep.h"

namespace hgeval::niah {
namespace {

ModelInfo Info(ModelFamily family, const std::string& backend) {
  ModelInfo info;
  info.family = family;
  info.backend = backend;
  return info;
}

TEST(NiahBatchDefaultTest, WideForRecurrentModelsOnCudaOnly) {
  for (ModelFamily family :
       {ModelFamily::kHgrn2, ModelFamily::kHgrn, ModelFamily::kGla, ModelFamily::kMamba}) {
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cuda:0")), 32);
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cuda:1")), 32);
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cpu")), 8);
  }
  // A LLaMA's snapshots are KV caches that grow with the context.
  EXPECT_EQ(DefaultNiahMaxBatch(Info(ModelFamily::kLlama, "cuda:0")), 8);
  EXPECT_EQ(DefaultNiahMaxBatch(Info(ModelFamily::kLlama, "cpu")), 8);
}

}  // namespace
}  // namespace hgeval::niah
