// CudaModel construction: the shared block skeleton's weights (embedding, norms, MLP,
// final norm, head; names from engine/model/tensor_names.h) and scratch; the family's
// token mixer loads its own (token_mixer.h). Projections that share an input are fused,
// converted to the activation dtype and uploaded.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/cuda_model.h"
#include "engine/cuda/env_switch.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::Status CudaModel::LoadWeights(const Checkpoint& ck, DeviceAllocator& alloc) {
  const ModelConfig& c = config_;
  const BlockTensorNames names = BlockTensorNamesFor(ck, c);
  D_ = c.hidden_size;
  V_ = c.vocab_size;
  L_ = c.num_layers;
  I_ = c.intermediate_size;
  const std::vector<int64_t> vec_d = {D_};
  // A norm without weight (TNL's SimpleRMSNorm) runs with a weight of ones (not counted).
  const std::vector<float> ones(D_, 1.0f);
  auto norm = [&](const std::string& name, DeviceBuffer* out) -> absl::Status {
    if (!layout_.norm_weights) return alloc.UploadDerived(ones, out);
    HG_ASSIGN_OR_RETURN(HostTensor weight, ck.ReadFloat(name, vec_d));
    return alloc.UploadFloat(weight, out);
  };
  {
    HG_ASSIGN_OR_RETURN(HostTensor e, ck.ReadFloat(names.embed, std::vector<int64_t>{V_, D_}));
    HG_ASSIGN_OR_RETURN(HostTensor head,
                        ReadLmHead(ck, names.head, names.embed, c.tie_word_embeddings, V_, D_));
    if (layout_.embedding_scale != 1.0f) {
      // The input embedding is scaled (TNL: sqrt(D); the tied head is not): the CPU's
      // row * scale, done once here.
      for (float& x : e.data) x *= layout_.embedding_scale;
    }
    HG_RETURN_IF_ERROR(alloc.UploadAct({&e}, &embed_));
    // A tied head is counted once, with the embedding.
    HG_RETURN_IF_ERROR(alloc.UploadAct({&head}, &lm_head_, /*counted=*/ck.Has(names.head)));
    HG_RETURN_IF_ERROR(norm(names.final_norm, &final_norm_));
  }
  blocks_.resize(L_);
  for (int64_t l = 0; l < L_; ++l) {
    BlockWeights& w = blocks_[l];
    HG_RETURN_IF_ERROR(norm(names.Norm1Weight(l), &w.norm1));
    if (!layout_.mlp) continue;
    HG_RETURN_IF_ERROR(norm(names.Norm2Weight(l), &w.norm2));
    HG_ASSIGN_OR_RETURN(GatedMlpWeights mlp, ReadBlockMlp(ck, c, l));
    HG_RETURN_IF_ERROR(alloc.UploadAct({&mlp.gate, &mlp.up}, &w.mlp_gate_up));
    HG_RETURN_IF_ERROR(alloc.UploadAct({&mlp.down}, &w.mlp_down));
  }
  return mixer_->Load(ck, names, alloc);
}

absl::Status CudaModel::AllocateScratch(DeviceAllocator& alloc) {
  const size_t R = kPackRows;
  HG_RETURN_IF_ERROR(alloc.Floats(&h_, R * D_));
  HG_RETURN_IF_ERROR(alloc.Acts(&x_, R * D_));
  HG_RETURN_IF_ERROR(alloc.Floats(&delta_, R * D_));
  if (layout_.mlp) {
    // The MLP runs mlp_rows_ rows at a time (EnqueueMlp); in place (bf16) gu_ is all it
    // needs.
    mlp_rows_ = MlpBlockRows(2 * I_ * static_cast<int64_t>(ActSize(act_)));
    HG_RETURN_IF_ERROR(alloc.Acts(&gu_, static_cast<size_t>(mlp_rows_) * 2 * I_));
    if (!MlpInPlace()) {
      HG_RETURN_IF_ERROR(alloc.Acts(&mlp_, static_cast<size_t>(mlp_rows_) * I_));
    }
  }
  HG_RETURN_IF_ERROR(mixer_->AllocateScratch(alloc));
  max_pack_chunks_ = mixer_->MaxPackChunks();
  logit_rows_ = std::max(LogitBlockRows(V_), kDecodeRows);
  const size_t lr = static_cast<size_t>(logit_rows_);
  HG_RETURN_IF_ERROR(alloc.Floats(&logits_, lr * V_));
  HG_RETURN_IF_ERROR(alloc.Acts(&logit_x_, lr * D_));
  // The decode step's row tables: row r is sequence r.
  HG_ASSIGN_OR_RETURN(identity_rows_, alloc.Alloc((kDecodeRows + 1) * sizeof(int32_t)));
  {
    int32_t identity[kDecodeRows + 1];
    for (int r = 0; r <= kDecodeRows; ++r) identity[r] = r;
    HG_RETURN_IF_ERROR(CopyToDevice(identity_rows_.get(), identity, sizeof(identity)));
  }
  pack_bytes_ = PackTableBytes();
  HG_ASSIGN_OR_RETURN(pack_dev_, alloc.Alloc(pack_bytes_));
  HG_CUDA_RETURN(cudaMallocHost(&pack_host_, pack_bytes_));
  HG_ASSIGN_OR_RETURN(pinned_gemm_, PinnedGemm::Create(kPackRows));
  HG_ASSIGN_OR_RETURN(decode_io_, alloc.Alloc(sizeof(DecodeIo)));
  HG_CUDA_RETURN(cudaMallocHost(&host_io_, sizeof(DecodeIo)));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaModel>> CudaModel::Build(const Checkpoint& checkpoint,
                                                            const ModelConfig& config, int device,
                                                            Act act, int64_t max_context) {
  std::unique_ptr<CudaModel> model(new CudaModel());
  model->config_ = config;
  model->act_ = act;
  HG_ASSIGN_OR_RETURN(model->mixer_, MakeCudaTokenMixer(config, act));
  model->layout_ = model->mixer_->layout();
  if (model->layout_.norm_eps.has_value()) model->config_.norm_eps = *model->layout_.norm_eps;
  model->state_floats_per_layer_ = model->mixer_->StateFloatsPerLayer();
  HG_ASSIGN_OR_RETURN(model->ctx_, DeviceContext::Create(device));
  DeviceGuard guard(device);
  ModelInfo& info = model->info_;
  info.family = config.family;
  info.vocab_size = config.vocab_size;
  // LLaMA: LoadOptions::max_context when set (RoPE is computed per position and the KV
  // cache grows on demand, so nothing else bounds it); recurrent models are unbounded.
  info.max_context = !model->layout_.bounded_context ? 0
                     : max_context > 0               ? max_context
                                                     : config.max_position_embeddings;
  info.bos_token_id = config.bos_token_id;
  info.eos_token_id = config.eos_token_id;
  info.backend = absl::StrCat("cuda:", device);
  info.dtype = act == Act::kF32 ? "fp32" : "bf16";
  info.batch_tokens = kPackRows;
  DeviceAllocator alloc(model->ctx_->pool(), act);
  HG_RETURN_IF_ERROR(model->LoadWeights(checkpoint, alloc));
  info.num_parameters = alloc.num_parameters();
  model->mixer_->set_max_context(info.max_context);
  HG_RETURN_IF_ERROR(model->AllocateScratch(alloc));
  model->graphs_enabled_ = !EnvIs("HGEVAL_CUDA_GRAPHS", "0");
  return model;
}

CudaModel::~CudaModel() {
  // Build gives up before the context exists when the mixer refuses the config (or the
  // device cannot be had): nothing was allocated then.
  if (ctx_ == nullptr) return;
  DeviceGuard guard(ctx_->device());
  cudaStreamSynchronize(ctx_->stream());
  for (cudaGraphExec_t graph : decode_graphs_) {
    if (graph) cudaGraphExecDestroy(graph);
  }
  if (pack_host_) cudaFreeHost(pack_host_);
  if (host_io_) cudaFreeHost(host_io_);
}

}  // namespace hgeval::cuda
