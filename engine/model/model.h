// The engine contract every model family and backend implements: a forward pass over a
// packed batch of variable-length sequences, each continuing its own state.
#ifndef HGEVAL_ENGINE_MODEL_MODEL_H_
#define HGEVAL_ENGINE_MODEL_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/config.h"
#include "engine/util/memory_budget.h"

namespace hgeval {

// One sequence's state: recurrent state (HGRN2, HGRN, GLA, Mamba: fixed size) or KV cache
// (LLaMA: grows with position). Created by Model::NewState(); only the model that made it
// may advance it. Clone() is the snapshot/fork primitive.
class SequenceState {
 public:
  virtual ~SequenceState() = default;
  // Tokens consumed so far; the position of the next token fed.
  virtual int64_t position() const = 0;
  // A deep copy that continues independently; null when the backend is out of memory
  // (CUDA). Callers go through CloneState() below.
  virtual std::unique_ptr<SequenceState> Clone() const = 0;
  // Bytes held, for memory accounting.
  virtual size_t bytes() const = 0;
};

// One sequence of a packed batch.
struct ForwardItem {
  // Tokens fed, in order, after whatever `state` already consumed. May be empty only
  // when nothing is asked of the item.
  absl::Span<const int32_t> tokens;
  // Empty, or tokens.size() entries: targets[t] is the token whose log-probability is
  // wanted after feeding tokens[0..t]; -1 means position t is not scored. Logits are only
  // computed at scored positions (and the last one when want_last_logprobs).
  absl::Span<const int32_t> targets;
  // Advanced past `tokens` by Forward. Required unless `start` or `fresh_start` is given.
  SequenceState* state = nullptr;
  // Instead of `state` (which must then be null): continue from `start`, which is only
  // read, and keep no state after the item. How a task scores its choices as forks of
  // one context state: nothing is copied per choice. Results equal those of a copy of
  // `start` given as `state`.
  const SequenceState* start = nullptr;
  // Instead of `state` and `start` (both null): start from the model's empty state and
  // keep none after the item, a scoring-only pass. Results equal those of a new state
  // given as `state`; the backend may hold less than a whole state meanwhile (a CUDA
  // LLaMA pass longer than one pack keeps one layer's keys and values at a time).
  bool fresh_start = false;
  // Fill ForwardOutput::last_logprobs: log_softmax over the vocabulary after the last
  // token (what decoding samples from).
  bool want_last_logprobs = false;
  // Fill ForwardOutput::last_argmax: the greedy next token after the last fed token (the
  // argmax of the logits, lowest id on ties). What greedy decoding needs, without copying
  // a vocabulary-sized row out of the model.
  bool want_last_argmax = false;
  // Fill ForwardOutput::top_k at scored positions with this many alternatives.
  int top_k = 0;
  // Fill ForwardOutput::logits with the raw logits of every fed position ([T, vocab]).
  // For verification and debugging only: it materialises everything.
  bool want_all_logits = false;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// Per item. The per-position vectors have tokens.size() entries and hold values only at
// scored positions (targets[t] >= 0); elsewhere logprob is 0 and argmax is -1.
struct ForwardOutput {
  std::vector<float> logprob;                    // log p(targets[t] | state, tokens[0..t])
  std::vector<uint8_t> is_greedy;                // 1 when targets[t] is the argmax
  std::vector<int32_t> argmax;                   // the greedy token (lowest id on ties)
  std::vector<std::vector<TokenLogprob>> top_k;  // empty unless top_k > 0
  std::vector<float> last_logprobs;              // [vocab] when want_last_logprobs
  int32_t last_argmax = -1;                      // when want_last_argmax
  std::vector<float> logits;                     // [T * vocab] when want_all_logits
};

struct ModelInfo {
  ModelFamily family = ModelFamily::kLlama;
  int64_t vocab_size = 0;
  // Longest context the model accepts; 0 when unbounded (recurrent models).
  int64_t max_context = 0;
  int32_t bos_token_id = -1;
  int32_t eos_token_id = -1;
  int64_t num_parameters = 0;
  std::string backend;  // "cpu" or "cuda:N"
  std::string dtype;    // "fp32" or "bf16": what the arithmetic runs in
  // Tokens per Forward call the backend runs efficiently in one pass (CUDA: one pack of
  // many items); callers size their batches by it.
  int64_t batch_tokens = 4096;
  // Bytes a state grows by per token fed (a KV cache); 0 for fixed-size states.
  int64_t state_bytes_per_token = 0;
  // Scoring from a forked state gives the bits of feeding the same tokens from scratch
  // (the CPU backend; CUDA agrees within the fork tolerance), so prefixes may be shared
  // between requests without a result depending on its companions.
  bool forks_are_exact = false;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  virtual const ModelConfig& config() const = 0;
  // An empty state (position 0); null when the backend is out of memory (CUDA). Callers
  // go through StartState() below.
  virtual std::unique_ptr<SequenceState> NewState() const = 0;
  // Runs every item, writing outputs[i] for items[i] (outputs.size() == items.size()).
  // The results of one item never depend on the other items of the batch. Not
  // re-entrant: callers serialise calls on one model.
  virtual absl::Status Forward(absl::Span<const ForwardItem> items,
                               absl::Span<ForwardOutput> outputs) = 0;

  // A copy of `start` (an empty state when null) with room for `tokens` more tokens
  // reserved, so that feeding them does not move it (a KV cache sized once instead of
  // grown with a copy); null when the backend is out of memory. Callers go through
  // StartStateFor() below. Default: Clone() / NewState().
  virtual std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                                     int64_t tokens) const;
  // Bytes of the model's memory (its budget's) that a state holding `tokens` tokens
  // takes: what callers size their rounds by. A LLaMA's KV cache grows with the tokens; a
  // recurrent state is fixed. Default: an empty state's bytes() plus
  // info().state_bytes_per_token per token.
  virtual size_t StateBytes(int64_t tokens) const;
  // Bytes of the model's memory that a Forward item continuing read-only from a start of
  // `start_tokens` tokens (ForwardItem::start) holds while it feeds `tokens` more: a copy
  // of its start where the backend makes one (a KV cache to write its keys into), none
  // where it reads the start in place. Default: StateBytes(start_tokens + tokens).
  virtual size_t ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const;
  // The budget this model's weights, states and scratch are charged against (the GPU's,
  // or the host's), shared with every model in the same memory; null when the model's
  // memory is not accounted. A Forward call whose states would not fit fails with
  // RESOURCE_EXHAUSTED before it changes anything.
  virtual MemoryBudget* memory_budget() const { return nullptr; }
};

// Tokens per Forward call: `requested` when positive, else the model's batch_tokens.
inline int64_t BatchTokens(const Model& model, int64_t requested) {
  return requested > 0 ? requested : model.info().batch_tokens;
}

// A copy of `state`, or RESOURCE_EXHAUSTED when the backend cannot hold another state.
absl::StatusOr<std::unique_ptr<SequenceState>> CloneState(const SequenceState& state);

// StartState with room reserved for `tokens` more tokens (Model::NewStateFor).
absl::StatusOr<std::unique_ptr<SequenceState>> StartStateFor(const Model& model,
                                                             const SequenceState* start,
                                                             int64_t tokens);

// A copy of `start`, or the model's empty state when `start` is null; RESOURCE_EXHAUSTED
// when the backend cannot hold another state.
absl::StatusOr<std::unique_ptr<SequenceState>> StartState(const Model& model,
                                                          const SequenceState* start);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_MODEL_H_
