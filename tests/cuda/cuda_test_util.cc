#include "tests/cuda/cuda_test_util.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "bench/cuda/random_checkpoint.h"
#include "engine/cuda/cuda_models.h"
#include "engine/cuda/flash_kernel_choice.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/mapped_file.h"
#include "engine/loader/safetensors.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/util/status_macros.h"
#include "tests/support/paths.h"

namespace hgeval::testing {

bool HaveGpu() { return cuda::DeviceCount() > 0; }

absl::StatusOr<std::map<std::string, FixtureTensor>> ReadFixture(const std::string& path) {
  HG_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  HG_ASSIGN_OR_RETURN(auto tensors, ParseSafetensors(path, file->bytes()));
  std::map<std::string, FixtureTensor> out;
  for (const SafetensorsTensor& t : tensors) {
    FixtureTensor ft;
    ft.shape = t.info.shape;
    const size_t n = t.bytes.size() / DTypeSize(t.info.dtype);
    ft.values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* p = t.bytes.data() + i * DTypeSize(t.info.dtype);
      switch (t.info.dtype) {
        case DType::kF32: {
          float v;
          std::memcpy(&v, p, 4);
          ft.values[i] = v;
          break;
        }
        case DType::kI64: {
          int64_t v;
          std::memcpy(&v, p, 8);
          ft.values[i] = static_cast<double>(v);
          break;
        }
        default:
          return absl::InvalidArgumentError("fixture: unexpected dtype for " + t.info.name);
      }
    }
    out[t.info.name] = std::move(ft);
  }
  return out;
}

nlohmann::json HeadDim128LlamaConfig() {
  nlohmann::json config = bench::RandomModelConfig("llama", /*layers=*/2);
  config["hidden_size"] = 512;
  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 2;
  config["intermediate_size"] = 1408;
  config["vocab_size"] = 512;
  config["max_position_embeddings"] = 32768;
  return config;
}

absl::StatusOr<std::unique_ptr<Model>> BuildHeadDim128Llama(const LoadOptions& options) {
  return bench::BuildRandomModel("llama", HeadDim128LlamaConfig(), options);
}

bool GpuIsSm90() {
  int device = 0, major = 0, minor = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
         major == 9 && minor == 0;
}

absl::StatusOr<std::unique_ptr<Model>> BuildGoldenCudaModel(const std::string& family,
                                                            const std::string& dtype,
                                                            int64_t max_context) {
  if (family == kHeadDim128Llama) {
    if (dtype == "bf16" && GpuIsSm90() &&
        cuda::ChosenFlashKernel(128) != cuda::FlashKernel::kWgmma) {
      return absl::FailedPreconditionError(
          "llama_hd128 bf16 on a compute capability 9.0 GPU would not take the wgmma flash "
          "kernel (is this build's CUDA architecture 90a?)");
    }
    LoadOptions options;
    options.device = "cuda";
    options.dtype = dtype;
    options.max_context = max_context;
    return BuildHeadDim128Llama(options);
  }
  HG_ASSIGN_OR_RETURN(auto ckpt, OpenCheckpoint(SourcePath("tests/golden/" + family)));
  HG_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(ckpt->config()));
  LoadOptions options;
  options.device = "cuda";
  options.dtype = dtype;
  options.max_context = max_context;
  return cuda::BuildCudaModel(*ckpt, config, options);
}

absl::StatusOr<ForwardOutput> RunOne(Model& model, SequenceState* state,
                                     const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& targets, bool want_last,
                                     int top_k) {
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = state;
  item.want_last_logprobs = want_last;
  item.top_k = top_k;
  std::vector<ForwardOutput> outs(1);
  HG_RETURN_IF_ERROR(model.Forward(absl::MakeConstSpan(&item, 1), absl::MakeSpan(outs)));
  return std::move(outs[0]);
}

std::vector<int32_t> ToInts(const FixtureTensor& t) {
  std::vector<int32_t> out(t.values.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(t.values[i]);
  return out;
}

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int vocab) {
  std::uniform_int_distribution<int> dist(0, vocab - 1);
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = dist(rng);
  return out;
}

}  // namespace hgeval::testing
