// tasks::LanguageModel over one or more hgeval servers: `hgeval run --server a,b` runs the
// tasks in the client and shards the model requests over all servers (each server keeps
// its results in its own store, so a re-run after a failure recomputes nothing). Calls
// that fail with UNAVAILABLE (a server restarting) are retried.
#ifndef HGEVAL_CLIENT_REMOTE_LANGUAGE_MODEL_H_
#define HGEVAL_CLIENT_REMOTE_LANGUAGE_MODEL_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "client/client.h"
#include "tasks/api/language_model.h"

namespace hgeval::client {

struct RemoteLanguageModelOptions {
  std::string model;
  // Unset: the server's default, lm-eval >= 0.4.9.2's rule (proto/hgeval/v1/bos_mode.h).
  hgeval::v1::BosMode bos_mode = hgeval::v1::BOS_MODE_UNSPECIFIED;
  int64_t max_length = 0;          // 0: the server's lm_eval_max_length for the model
  int64_t chunk_per_server = 256;  // pairs per call (parallel_calls calls in flight)
  absl::Duration retry_for = absl::Minutes(5);
};

class RemoteLanguageModel : public tasks::LanguageModel {
 public:
  // Reads the model's description from the server the channel picks.
  static absl::StatusOr<std::unique_ptr<RemoteLanguageModel>> Create(
      Client* client, RemoteLanguageModelOptions options);

  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Loglikelihood(
      absl::Span<const tasks::LoglikelihoodRequest> requests,
      const tasks::CallOptions& options = {}) override;
  absl::StatusOr<std::vector<tasks::RollingResult>> LoglikelihoodRolling(
      absl::Span<const tasks::RollingRequest> requests,
      const tasks::CallOptions& options = {}) override;
  absl::StatusOr<std::vector<tasks::GenerateUntilResult>> GenerateUntil(
      absl::Span<const tasks::GenerateUntilRequest> requests,
      const tasks::CallOptions& options = {}) override;
  // Token-id Loglikelihood calls with the top-1 token at every position; `logprob` is NaN.
  absl::StatusOr<std::vector<tasks::TokenTargetsResult>> ScoreTokenTargets(
      absl::Span<const tasks::TokenTargetsRequest> requests,
      const tasks::CallOptions& options = {}) override;
  // Classify calls (LRA classifiers), chunk_per_server examples per call.
  absl::StatusOr<std::vector<tasks::ClassifyResult>> Classify(
      absl::Span<const tasks::ClassifyRequest> requests,
      const tasks::CallOptions& options = {}) override;
  tasks::LanguageModelInfo info() const override { return info_; }

  int64_t cached() const { return cached_; }

 private:
  RemoteLanguageModel(Client* client, RemoteLanguageModelOptions options)
      : client_(client), options_(std::move(options)) {}

  Client* client_;
  RemoteLanguageModelOptions options_;
  tasks::LanguageModelInfo info_;
  std::atomic<int64_t> cached_{0};
};

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_REMOTE_LANGUAGE_MODEL_H_
