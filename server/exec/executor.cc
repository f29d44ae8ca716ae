#include "server/exec/executor.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/util/sha256.h"
#include "server/store/background_store_writer.h"
#include "server/store/stored_results.h"

namespace hgeval::server {

absl::Status WaitDone(absl::Mutex& mu, const bool& done, const CallControl& control) {
  absl::MutexLock lock(&mu);
  for (;;) {
    if (mu.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(10))) {
      return absl::OkStatus();
    }
    if (control.server_stopping != nullptr && control.server_stopping->load()) {
      return absl::UnavailableError(
          "the server is shutting down and its grace period ran out; retry on another server");
    }
    if (control.cancelled && control.cancelled()) {
      return absl::CancelledError("cancelled by the client");
    }
    if (absl::Now() > control.deadline) {
      return absl::DeadlineExceededError("deadline exceeded");
    }
  }
}

namespace {

// The scheduler's work for `pairs`.
std::shared_ptr<ScoreWork> MakeScoreWork(const std::vector<TokenPair>& pairs, int top_k,
                                         const CallControl& control) {
  auto work = std::make_shared<ScoreWork>();
  work->deadline = control.deadline;
  work->requests.reserve(pairs.size());
  for (const TokenPair& pair : pairs) {
    ScoreRequest r;
    r.context = pair.context;
    r.continuation = pair.continuation;
    r.top_k = top_k;
    work->requests.push_back(std::move(r));
  }
  return work;
}

// The scheduler's scorer: one ScoreWork, packed with every other caller's work.
absl::Status ScoreOnScheduler(LoadedModel& model, const std::vector<TokenPair>& pairs, int top_k,
                              const CallControl& control, std::vector<ScoreResult>* results) {
  std::shared_ptr<ScoreWork> work = MakeScoreWork(pairs, top_k, control);
  if (absl::Status s = SubmitAndWait(*model.scheduler, work, control); !s.ok()) return s;
  absl::MutexLock lock(&work->mu);
  if (!work->status.ok()) return work->status;
  *results = std::move(work->results);
  return absl::OkStatus();
}

}  // namespace

absl::Status ScoreWithReuseOnScheduler(LoadedModel& model, const std::vector<TokenPair>& pairs,
                                       const CallControl& control,
                                       std::vector<ScoreResult>* results,
                                       const FinishedPairs& finished, int64_t* tokens_fed) {
  std::shared_ptr<ScoreWork> work = MakeScoreWork(pairs, /*top_k=*/0, control);
  work->context_reuse = true;
  results->resize(pairs.size());
  work->finished = [results, &finished](absl::Span<const size_t> done,
                                        absl::Span<const ScoreResult> scored) -> absl::Status {
    for (size_t k : done) (*results)[k] = scored[k];
    return finished ? finished(done) : absl::OkStatus();
  };
  absl::Status waited = SubmitAndWait(*model.scheduler, work, control);
  if (!waited.ok()) {
    // The scheduler may be inside `finished`, which refers to this call's variables: wait
    // until it has let the cancelled work go (at most one batch).
    WaitDone(work->mu, work->done, CallControl{}).IgnoreError();
    return waited;
  }
  absl::MutexLock lock(&work->mu);
  if (tokens_fed != nullptr) *tokens_fed = work->stats.tokens_fed;
  if (!work->status.ok()) return work->status;
  *results = std::move(work->results);
  return absl::OkStatus();
}

namespace {

PairScore ToPairScore(const TokenPair& pair, ScoreResult r) {
  PairScore out;
  out.score = std::move(r);
  out.score.greedy_tokens.clear();  // not part of a pair's result
  out.context_tokens = static_cast<int32_t>(pair.context.size());
  out.continuation_tokens = static_cast<int32_t>(pair.continuation.size());
  return out;
}

}  // namespace

absl::StatusOr<ScoreOutcome> Executor::ScorePairs(LoadedModel& model,
                                                  const std::vector<TokenPair>& pairs, int top_k,
                                                  bool use_store, const CallControl& control,
                                                  const PairScorer& scorer) {
  ScoreOutcome outcome;
  outcome.results.resize(pairs.size());
  std::vector<StoreKey> keys(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    keys[i] = StoreKey{model.model_hash, model.tokenizer_hash, "loglikelihood",
                       ScoreDigest(pairs[i], top_k)};
  }
  std::vector<bool> have(pairs.size(), false);
  if (use_store && store_ != nullptr) {
    const absl::Time read_start = absl::Now();
    absl::StatusOr<std::vector<bool>> found = LookUpStored(store_, keys, &outcome.results);
    outcome.store_seconds += absl::ToDoubleSeconds(absl::Now() - read_start);
    if (!found.ok()) return found.status();
    have = *std::move(found);
    for (size_t i = 0; i < pairs.size(); ++i) outcome.cached += have[i] ? 1 : 0;
  }
  // Distinct missing pairs, first occurrence computes.
  absl::flat_hash_map<std::string, size_t> first_of;
  std::vector<size_t> compute_index;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (have[i]) continue;
    if (first_of.emplace(keys[i].request_digest, i).second) compute_index.push_back(i);
  }
  if (!compute_index.empty()) {
    std::vector<TokenPair> missing;
    missing.reserve(compute_index.size());
    for (size_t i : compute_index) missing.push_back(pairs[i]);
    std::vector<ScoreResult> computed;
    std::vector<bool> stored(compute_index.size(), false);
    // A scorer's batches are stored while it computes the next ones.
    std::optional<BackgroundStoreWriter> writer;
    if (store_ != nullptr && scorer) {
      writer.emplace(store_, [&control](size_t rows) {
        if (control.pairs_kept) control.pairs_kept(static_cast<int64_t>(rows));
      });
    }
    // Writes the wire form of finished pairs and stores those not stored yet.
    auto finish = [&](absl::Span<const size_t> finished) -> absl::Status {
      BackgroundStoreWriter::Rows to_store;
      to_store.reserve(finished.size());
      int64_t kept = 0;
      for (size_t k : finished) {
        if (k >= computed.size() || stored[k]) continue;
        stored[k] = true;
        ++kept;
        const size_t i = compute_index[k];
        outcome.results[i] = ToPairScore(pairs[i], std::move(computed[k]));
        if (store_ != nullptr) to_store.emplace_back(keys[i], EncodeStored(outcome.results[i]));
      }
      if (store_ == nullptr || to_store.empty()) {
        if (control.pairs_kept && kept > 0) control.pairs_kept(kept);
        return absl::OkStatus();
      }
      if (writer) return writer->Put(std::move(to_store));
      const absl::Time write_start = absl::Now();
      absl::Status written = store_->PutMany(to_store);
      outcome.store_seconds += absl::ToDoubleSeconds(absl::Now() - write_start);
      if (written.ok() && control.pairs_kept) control.pairs_kept(kept);
      return written;
    };
    if (scorer) {
      computed.resize(missing.size());
      if (absl::Status s = scorer(missing, top_k, &computed, finish); !s.ok()) return s;
    } else if (absl::Status s = ScoreOnScheduler(model, missing, top_k, control, &computed);
               !s.ok()) {
      return s;
    }
    if (computed.size() != missing.size()) {
      return absl::InternalError(
          absl::StrCat("scored ", computed.size(), " of ", missing.size(), " pairs"));
    }
    std::vector<size_t> all(compute_index.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    if (absl::Status s = finish(all); !s.ok()) return s;
    if (writer) {
      if (absl::Status s = writer->Finish(); !s.ok()) return s;
      outcome.store_seconds += writer->seconds();
    }
    outcome.computed = static_cast<int64_t>(compute_index.size());
  }
  // Duplicates copy their first occurrence.
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (have[i]) continue;
    const size_t first = first_of.at(keys[i].request_digest);
    if (first != i) outcome.results[i] = outcome.results[first];
  }
  return outcome;
}

namespace {

// SHA-256 of an example's converted inputs: per document its kind, sizes and values.
std::string ClassifyDigest(const LraInput& input) {
  std::string canonical;
  for (const LraDocument& doc : input.documents) {
    absl::StrAppend(&canonical, doc.tokens.empty() ? "p" : "t", doc.tokens.size(), ":",
                    doc.pixels.size(), ":", doc.pool_length, ";");
    canonical.append(reinterpret_cast<const char*>(doc.tokens.data()),
                     doc.tokens.size() * sizeof(int32_t));
    canonical.append(reinterpret_cast<const char*>(doc.pixels.data()),
                     doc.pixels.size() * sizeof(float));
  }
  return Sha256Hex(canonical);
}

}  // namespace

absl::StatusOr<std::vector<Classification>> Executor::Classify(LoadedModel& model,
                                                               const std::vector<LraInput>& inputs,
                                                               bool use_store,
                                                               const CallControl& control,
                                                               int64_t* cached) {
  if (model.classify_scheduler == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", model.spec.name, "' is a language model, not an LRA classifier"));
  }
  std::vector<Classification> results;
  std::vector<StoreKey> keys(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    keys[i] =
        StoreKey{model.model_hash, model.tokenizer_hash, "classify", ClassifyDigest(inputs[i])};
  }
  std::vector<size_t> missing;
  int64_t from_store = 0;
  absl::StatusOr<std::vector<bool>> found =
      LookUpStored(use_store ? store_ : nullptr, keys, &results);
  if (!found.ok()) return found.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if ((*found)[i]) {
      ++from_store;
    } else {
      missing.push_back(i);
    }
  }
  if (cached != nullptr) *cached = from_store;
  if (missing.empty()) return results;
  auto work = std::make_shared<ClassifyWork>();
  work->deadline = control.deadline;
  for (size_t i : missing) work->inputs.push_back(inputs[i]);
  if (absl::Status s = SubmitAndWait(*model.classify_scheduler, work, control); !s.ok()) return s;
  absl::MutexLock lock(&work->mu);
  if (!work->status.ok()) return work->status;
  std::vector<std::pair<StoreKey, std::string>> to_store;
  for (size_t k = 0; k < missing.size(); ++k) {
    Classification& out = results[missing[k]];
    out.logits = work->logits[k];
    out.predicted = PredictedClass(work->logits[k]);
    if (store_ != nullptr) to_store.emplace_back(keys[missing[k]], EncodeStored(out));
  }
  if (store_ != nullptr) {
    if (absl::Status s = store_->PutMany(to_store); !s.ok()) return s;
  }
  return results;
}

}  // namespace hgeval::server
