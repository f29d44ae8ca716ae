// The NIAH sweep's default batch: 32 (the decode step's rows) on CUDA, 8 elsewhere.
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

TEST(NiahBatchDefaultTest, WideOnCudaForEveryFamily) {
  // A LLaMA too: its KV-cache snapshots are bounded by the memory budget's bytes, not by
  // the batch.
  for (ModelFamily family : {ModelFamily::kHgrn2, ModelFamily::kHgrn, ModelFamily::kGla,
                             ModelFamily::kMamba, ModelFamily::kLlama}) {
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cuda:0")), 32);
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cuda:1")), 32);
    EXPECT_EQ(DefaultNiahMaxBatch(Info(family, "cpu")), 8);
  }
}

}  // namespace
}  // namespace hgeval::niah
