#include "tests/cuda/cuda_test_util.h"

#include <cstring>

#include "engine/cuda/cuda_models.h"
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

absl::StatusOr<std::unique_ptr<Model>> BuildGoldenCudaModel(const std::string& family,
                                                            const std::string& dtype,
                                                            int64_t max_context) {
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

}  // namespace hgeval::testing
