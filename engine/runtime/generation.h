// Decoding: greedy and seeded temperature/top-p sampling for a batch of live sequences
// that advance together one token per step (continuous batching: sequences join and
// leave between steps).
#ifndef HGEVAL_ENGINE_RUNTIME_GENERATION_H_
#define HGEVAL_ENGINE_RUNTIME_GENERATION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/model.h"
#include "engine/runtime/stop_strings.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax of the logits, lowest id on ties)
  float top_p = 1.0f;        // nucleus mass in (0, 1]
  uint64_t seed = 0;         // same seed, same tokens
};

// Picks tokens from log-probabilities. Deterministic for a given seed.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  int32_t Sample(absl::Span<const float> logprobs);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

struct GenerateRequest {
  const SequenceState* start = nullptr;  // optional snapshot to continue (cloned)
  std::vector<int32_t> prompt;           // at least one token
  int max_new_tokens = 256;
  SamplingParams sampling;
  std::vector<int32_t> stop_tokens;  // generation ends after emitting one (not kept)
  StopStrings stop_strings;          // needs a tokenizer; text is cut before the stop
};

enum class FinishReason { kLength, kStopToken, kStopString, kCancelled };

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (stop token excluded)
  std::string text;             // decoded, cut at the first stop string (if a tokenizer)
  FinishReason finish_reason = FinishReason::kLength;
  int64_t tokens_fed = 0;  // prompt and generated tokens run through the model
};

struct DecodeOptions {
  // Tokens per Model::Forward call within a step (newcomers' prompts are the long items;
  // a longer one runs alone); 0: each step in one call.
  int64_t max_batch_tokens = 0;
  // Polled before every Model::Forward call of a step (optional): true fails the step with
  // CANCELLED, leaving the batch unusable. Newcomers' prompts make one step long.
  std::function<bool()> cancelled;
};

// A set of live sequences decoded together. Add() queues a sequence; each Step() prefills
// newcomers and emits one token for every live sequence in one Model::Forward call.
class DecodeBatch {
 public:
  // `tokenizer` may be null when no request uses stop strings.
  DecodeBatch(Model* model, const Tokenizer* tokenizer, DecodeOptions options = {});
  ~DecodeBatch();
  DecodeBatch(const DecodeBatch&) = delete;
  DecodeBatch& operator=(const DecodeBatch&) = delete;

  // Returns the sequence id. A sequence whose state does not fit the model's memory
  // budget beside the running ones waits (in order) until they finish; one that does not
  // fit alone fails: here when nothing runs, else later through status(id).
  absl::StatusOr<int64_t> Add(const GenerateRequest& request);
  // Ends a sequence early (its result is marked kCancelled).
  void Cancel(int64_t id);
  // One decode step for all live sequences. Returns ids that got a token this step.
  absl::StatusOr<std::vector<int64_t>> Step();
  bool empty() const { return live_.empty(); }
  size_t size() const { return live_.size(); }
  // The tokens so far; finished(id) once it stopped. Take() removes a finished one.
  const GenerateResult& result(int64_t id) const;
  bool finished(int64_t id) const;
  // Why a finished sequence failed to start (OK otherwise).
  absl::Status status(int64_t id) const;
  GenerateResult Take(int64_t id);
  // Sequences waiting for memory to start.
  size_t waiting() const { return pending_.size(); }

 private:
  struct Live;
  Model* model_;
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  bool Fits(const Live& newcomer) const;
  // RESOURCE_EXHAUSTED for a sequence that does not fit even alone, with the numbers.
  absl::Status TooLarge(const Live& live) const;
  size_t running() const;
  absl::Status Start(Live& live);
  void AdmitPending();

  int64_t next_id_ = 0;
  absl::flat_hash_map<int64_t, std::unique_ptr<Live>> live_;
  std::deque<int64_t> pending_;  // ids waiting to start, in order
};

// Where the first of `stops` (empty ones ignored) begins in `text`; npos when none occurs.
size_t FirstStopString(std::string_view text, absl::Span<const std::string> stops);
// `text` cut before the first stop string, empty ones ignored (lm-eval's generate_until:
// `for term in until: if len(term) > 0: s = s.split(term)[0]`). Every route cuts here.
std::string CutAtStopStrings(std::string text, absl::Span<const std::string> stops);

struct GenerateOptions {
  DecodeOptions decode;
  // Polled before every step and every Forward call within one; true stops the call with
  // CANCELLED.
  std::function<bool()> cancelled;
  // After every step: requests finished so far, and the total.
  std::function<void(int64_t finished, int64_t total)> progress;
};

// Runs every request to completion in one DecodeBatch: how the in-process evaluator and
// the NIAH sweep decode (the server's scheduler and hgeval-engine step a DecodeBatch
// themselves, to add requests between steps or stream tokens).
absl::StatusOr<std::vector<GenerateResult>> Generate(Model& model, const Tokenizer* tokenizer,
                                                     absl::Span<const GenerateRequest> requests,
                                                     const GenerateOptions& options = {});

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_GENERATION_H_
