// The one CPU model skeleton every family runs in (the CPU's mirror of
// engine/cuda/cuda_model.h): embeddings; per layer pre-norm -> token mixer -> add, then
// (when the family has an MLP) norm -> MLP -> add; final norm; the LM head. A family
// supplies one TokenMixer per layer (its own file: hgrn2.cc, llama.cc, ...) and a
// CpuBlockLayout saying how its block differs from fla's (the same fields as CUDA's
// BlockLayout). The skeleton validates a batch and resolves its states before changing
// anything, runs each item on its own (batch invariance) and holds one state type for all.
#ifndef HGEVAL_ENGINE_CPU_CPU_MODEL_H_
#define HGEVAL_ENGINE_CPU_CPU_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"
#include "engine/model/model.h"
#include "engine/model/tensor_names.h"

namespace hgeval::cpu {

// One layer's state for one sequence; a mixer uses the parts its family needs.
struct MixerState {
  // fp32 recurrent state (fla's recurrent_state: measured on the golden fixtures, whose
  // references run the scans in float64, fp32 keeps every logit within 1e-5, the same as a
  // double state, at half the snapshot memory).
  std::vector<float> recurrent;
  // float64 recurrent state (Mamba's SSM state, TNL's S: they accumulate over the whole
  // sequence).
  std::vector<double> recurrent64;
  // One window per short convolution: the last (kernel - 1) inputs, [kernel-1, channels]
  // row-major, oldest first (zeros at the start of a sequence).
  std::vector<std::vector<float>> conv;
  // A KV cache (LLaMA): keys and values of every consumed position, [position, width].
  std::vector<float> keys, values;

  size_t bytes() const;
};

// A sequence's state: position plus one MixerState per layer. Clone is a plain deep copy,
// so forks are exact.
class CpuSequenceState final : public SequenceState {
 public:
  CpuSequenceState(const void* owner, std::vector<MixerState> layers)
      : owner_(owner), layers_(std::move(layers)) {}

  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<CpuSequenceState>(*this);
  }
  size_t bytes() const override;

  // The model that created the state (Forward rejects states of another model).
  const void* owner() const { return owner_; }
  MixerState& layer(int64_t l) { return layers_[static_cast<size_t>(l)]; }
  void Advance(int64_t tokens) { position_ += tokens; }

 private:
  const void* owner_;
  int64_t position_ = 0;
  std::vector<MixerState> layers_;
};

// A layer's token mixer (the "attn" sublayer of a block; Mamba's mixer, LLaMA's
// self-attention, TNL's token_mixer) over one sequence.
class TokenMixer {
 public:
  virtual ~TokenMixer() = default;
  virtual MixerState NewState() const = 0;
  // x: [T, D] (the block's first norm), fed at positions position .. position + T - 1;
  // out: [T, D], the mixer's output before the residual add. Advances `state` past the T
  // tokens. Not const: a mixer may keep scratch (a model runs one Forward at a time).
  virtual void Forward(const float* x, int64_t t_len, int64_t position, MixerState* state,
                       float* out) = 0;
  virtual int64_t num_parameters() const = 0;
};

// How a family's block differs from fla's (norm -> mixer -> add -> norm -> SwiGLU MLP ->
// add; RMSNorm with weights and config.norm_eps).
struct CpuBlockLayout {
  bool mlp = true;               // Mamba: norm -> mixer -> add only
  bool mlp_silu = true;          // TNL: a GLU without activation
  bool norm_weights = true;      // TNL: SimpleRMSNorm (no weights)
  float embedding_scale = 1.0f;  // TNL: sqrt(D) unless no_scale_embedding
  // Replaces config.norm_eps for every block norm and the final norm (TNL: 1e-6).
  std::optional<float> norm_eps;
  // Positions bounded by this many (LLaMA: max_position_embeddings or the loader's
  // max_context); 0: unbounded (the recurrent families).
  int64_t max_context = 0;
  // Bytes a state grows by per token (LLaMA's fp32 KV cache); 0 for fixed-size states.
  int64_t state_bytes_per_token = 0;
};

// What a family's builder hands the skeleton.
struct CpuModelParts {
  CpuBlockLayout layout;
  std::vector<std::unique_ptr<TokenMixer>> mixers;  // one per layer
  // Per layer when the MLP has biases (TNL with `bias`: l1, l2, l3); else empty.
  std::vector<GatedMlpWeights> mlp_biases;
  // Family weights held outside the mixers (HGRN's lower bounds).
  int64_t extra_parameters = 0;
};

// Reads the embeddings, the block norms and MLPs (BlockTensorNamesFor / ReadBlockMlp), the
// final norm and the head (tied or not) and builds the model around `parts`.
absl::StatusOr<std::unique_ptr<Model>> MakeCpuModel(const Checkpoint& checkpoint,
                                                    const ModelConfig& config, CpuModelParts parts);

// Whether `model` is the skeleton (tests: every family runs in it).
bool IsCpuModel(const Model& model);

// Reads float tensors of an exact shape and counts their parameters.
class CountingReader {
 public:
  explicit CountingReader(const Checkpoint& checkpoint) : checkpoint_(checkpoint) {}

  absl::StatusOr<HostTensor> operator()(const std::string& name, std::vector<int64_t> shape) {
    absl::StatusOr<HostTensor> tensor = checkpoint_.ReadFloat(name, std::move(shape));
    if (tensor.ok()) parameters_ += tensor->numel();
    return tensor;
  }
  // lm_head, or the embeddings when tied (counted only when the checkpoint has its own).
  absl::StatusOr<HostTensor> ReadHead(const BlockTensorNames& names, const ModelConfig& c) {
    absl::StatusOr<HostTensor> head = ReadLmHead(
        checkpoint_, names.head, names.embed, c.tie_word_embeddings, c.vocab_size, c.hidden_size);
    if (head.ok() && checkpoint_.Has(names.head)) parameters_ += head->numel();
    return head;
  }
  void Count(int64_t parameters) { parameters_ += parameters; }
  int64_t parameters() const { return parameters_; }

 private:
  const Checkpoint& checkpoint_;
  int64_t parameters_ = 0;
};

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_CPU_MODEL_H_
