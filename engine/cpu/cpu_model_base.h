// The scaffolding the CPU models written whole (LLaMA, Mamba, TNL; fla's families share
// fla_block's skeleton) have in common: config and info, a Forward that validates the batch
// and resolves its states (OwnStates) before running each item on its own, and a weight
// reader that counts the parameters it reads.
#ifndef HGEVAL_ENGINE_CPU_CPU_MODEL_BASE_H_
#define HGEVAL_ENGINE_CPU_CPU_MODEL_BASE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/cpu/ops.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/model.h"
#include "engine/model/tensor_names.h"

namespace hgeval::cpu {

// `State` is the family's SequenceState.
template <typename State>
class CpuModelBase : public Model {
 public:
  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const override { return config_; }

  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) final {
    std::vector<std::unique_ptr<SequenceState>> copies;
    // Checks every item (positions within max_context too) before advancing any state, so
    // a rejected batch changes nothing.
    absl::StatusOr<std::vector<State*>> states =
        OwnStates<State>(this, items, outputs, config_.vocab_size, &copies, info_.max_context);
    if (!states.ok()) return states.status();
    // Each item runs alone (its own matrix products), so batch companions cannot change it.
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].tokens.empty()) {
        outputs[i] = ForwardOutput();
        continue;
      }
      RunItem(items[i], (*states)[i], &outputs[i]);
    }
    return absl::OkStatus();
  }

 protected:
  CpuModelBase(ModelConfig config, ModelInfo info)
      : config_(std::move(config)), info_(std::move(info)) {}

  // One non-empty item: feeds its tokens, advances `state` and scores into `out`.
  virtual void RunItem(const ForwardItem& item, State* state, ForwardOutput* out) = 0;

  ModelConfig config_;
  ModelInfo info_;
};

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

// rows [m, n] += bias [n]; nothing when the bias is absent (empty).
inline void AddBias(float* rows, int64_t m, int64_t n, const HostTensor& bias) {
  if (bias.data.empty()) return;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < n; ++i) rows[r * n + i] += bias.data[i];
  }
}

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_CPU_MODEL_BASE_H_
