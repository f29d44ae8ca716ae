// The CUDA backend's entry points behave on any machine: DeviceCount never fails, and
// without a GPU, building a model says so clearly (FailedPrecondition).
#include "engine/cuda/cuda_models.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

TEST(CudaDeviceTest, DeviceCountIsNonNegative) { EXPECT_GE(cuda::DeviceCount(), 0); }

TEST(CudaDeviceTest, BuildFailsClearlyWithoutGpuOrBadDevice) {
  auto ckpt = OpenCheckpoint(testing::SourcePath("tests/golden/hgrn2"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  auto config = ParseModelConfig((*ckpt)->config());
  ASSERT_TRUE(config.ok());
  LoadOptions options;
  options.device = "cuda:999";
  auto model = cuda::BuildCudaModel(**ckpt, *config, options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  options.device = "cuda:x";
  EXPECT_EQ(cuda::BuildCudaModel(**ckpt, *config, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.device = "cuda";
  options.dtype = "fp16";
  EXPECT_EQ(cuda::BuildCudaModel(**ckpt, *config, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  if (cuda::DeviceCount() == 0) {
    options.dtype = "fp32";
    auto none = cuda::BuildCudaModel(**ckpt, *config, options);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(none.status().message().find("no CUDA GPU"), std::string::npos);
  }
}

}  // namespace
}  // namespace hgeval
