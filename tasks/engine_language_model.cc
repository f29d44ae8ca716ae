#include "tasks/engine_language_model.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/packed_forward.h"
#include "engine/util/parallel_for.h"
#include "engine/util/status_macros.h"
#include "metrics/text_counts.h"

namespace hgeval::tasks {
namespace {

bool IsPrefixOf(absl::Span<const int32_t> prefix, absl::Span<const int32_t> tokens) {
  return prefix.size() <= tokens.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}

// A shared prefix run once: tokens fed after the parent's state.
struct PrefixNode {
  int parent = -1;  // -1: the empty state
  int level = 0;
  std::vector<int32_t> tokens;
  std::unique_ptr<SequenceState> state;
};

// A request scored from a node's state (or from scratch): fed = context[depth:] ++
// continuation[:-1].
struct Leaf {
  size_t request = 0;
  int node = -1;
  size_t depth = 0;
};

// Adds the wall time of its scope to `*seconds`.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double* seconds)
      : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~ScopedSeconds() {
    *seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double* seconds_;
  std::chrono::steady_clock::time_point start_;
};

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Builds the prefix tree of `members` (indices into requests, sorted by context), all of
// which share context[0:depth] and whose state at `depth` is node `parent`.
void BuildPrefixTree(absl::Span<const TokenizedRequest> requests, std::vector<size_t> members,
                     size_t depth, int parent, std::vector<PrefixNode>* nodes,
                     std::vector<Leaf>* leaves) {
  std::vector<size_t> rest;
  for (size_t m : members) {
    if (requests[m].context.size() - 1 == depth) {
      leaves->push_back({m, parent, depth});
    } else {
      rest.push_back(m);
    }
  }
  if (rest.empty()) return;
  if (rest.size() == 1) {
    leaves->push_back({rest[0], parent, depth});
    return;
  }
  // Sorted lexicographically, so the common prefix of the range is that of its ends.
  size_t end = CommonPrefix(requests[rest.front()].context, requests[rest.back()].context);
  for (size_t m : rest) end = std::min(end, requests[m].context.size() - 1);
  if (end > depth) {
    PrefixNode node;
    node.parent = parent;
    node.level = parent < 0 ? 0 : (*nodes)[parent].level + 1;
    const auto& ctx = requests[rest.front()].context;
    node.tokens.assign(ctx.begin() + depth, ctx.begin() + end);
    nodes->push_back(std::move(node));
    BuildPrefixTree(requests, std::move(rest), end, static_cast<int>(nodes->size()) - 1, nodes,
                    leaves);
    return;
  }
  // Diverging at `depth`: one subtree per next token.
  size_t i = 0;
  while (i < rest.size()) {
    size_t j = i + 1;
    const int32_t token = requests[rest[i]].context[depth];
    while (j < rest.size() && requests[rest[j]].context[depth] == token) ++j;
    if (j - i == 1) {
      leaves->push_back({rest[i], parent, depth});
    } else {
      BuildPrefixTree(requests, std::vector<size_t>(rest.begin() + i, rest.begin() + j), depth,
                      parent, nodes, leaves);
    }
    i = j;
  }
}

}  // namespace

std::string_view BosRegimeName(BosRegime regime) {
  return regime == BosRegime::kNone ? "none" : "tokenizer";
}

absl::StatusOr<BosRegime> ParseBosRegime(std::string_view name) {
  if (name == "none") return BosRegime::kNone;
  if (name == "tokenizer") return BosRegime::kTokenizer;
  return absl::InvalidArgumentError(absl::StrCat(
      "BOS regime must be \"none\" or \"tokenizer\", got \"", std::string(name), "\""));
}

EngineLanguageModel::EngineLanguageModel(Model* model, const Tokenizer* tokenizer,
                                         EngineLanguageModelOptions options)
    : model_(model), tokenizer_(tokenizer), options_(std::move(options)) {
  if (options_.max_length > 0) {
    max_length_ = options_.max_length;
  } else if (model_->config().max_position_embeddings > 0) {
    max_length_ = model_->config().max_position_embeddings;
  } else if (model_->info().max_context > 0) {
    max_length_ = model_->info().max_context;
  } else {
    max_length_ = 2048;
  }
  if (options_.prefix_token_id >= 0) {
    prefix_token_id_ = options_.prefix_token_id;
  } else if (tokenizer_->bos_id() >= 0) {
    prefix_token_id_ = tokenizer_->bos_id();
  } else {
    prefix_token_id_ = tokenizer_->eos_id();
  }
}

LanguageModelInfo EngineLanguageModel::info() const {
  LanguageModelInfo info;
  info.model = options_.model_name;
  info.model_hash = options_.model_hash;
  info.family = std::string(ModelFamilyName(model_->config().family));
  info.tokenizer = options_.tokenizer_name;
  info.tokenizer_hash = tokenizer_->ContentHash();
  info.bos_regime = std::string(BosRegimeName(options_.bos_regime));
  info.max_length = max_length_;
  info.prefix_token_id = prefix_token_id_;
  info.dtype = model_->info().dtype;
  info.backend = model_->info().backend;
  info.context_reuse = options_.context_reuse;
  info.rolling_mode = options_.windowless_rolling ? "windowless" : "windows";
  return info;
}

absl::StatusOr<std::vector<int32_t>> EngineLanguageModel::Encode(std::string_view text) const {
  return EncodeLmEvalText(*tokenizer_, text, options_.bos_regime == BosRegime::kTokenizer);
}

absl::StatusOr<TokenizedRequest> EngineLanguageModel::Tokenize(const LoglikelihoodRequest& request,
                                                               bool* truncated) const {
  if (truncated != nullptr) *truncated = false;
  HG_ASSIGN_OR_RETURN(
      TokenizedRequest out,
      EncodeLmEvalPair(*tokenizer_, request.context, request.continuation,
                       options_.bos_regime == BosRegime::kTokenizer, prefix_token_id_));
  if (static_cast<int64_t>(out.continuation.size()) > max_length_ &&
      options_.truncate_long_continuations) {
    const size_t excess = out.continuation.size() - static_cast<size_t>(max_length_);
    out.context.insert(out.context.end(), out.continuation.begin(),
                       out.continuation.begin() + excess);
    out.continuation.erase(out.continuation.begin(), out.continuation.begin() + excess);
    if (truncated != nullptr) *truncated = true;
  }
  if (static_cast<int64_t>(out.continuation.size()) > max_length_) {
    return absl::InvalidArgumentError(
        absl::StrCat("continuation of ", out.continuation.size(),
                     " tokens is longer than max_length ", max_length_,
                     " (lm-eval asserts here too; hgeval-eval --truncate_long_continuations "
                     "scores its last max_length tokens)"));
  }
  TruncateLmEvalPair(max_length_, &out);
  return out;
}

namespace {

// The evaluator's packing: ForwardInPacks at the model's token budget, cancellable.
absl::Status ForwardPacked(Model& model, absl::Span<const ForwardItem> items,
                           absl::Span<ForwardOutput> outputs, int64_t max_batch_tokens,
                           const CallOptions& call,
                           const std::function<void(size_t, size_t)>& after_batch) {
  return ForwardInPacks(model, items, outputs, BatchTokens(model, max_batch_tokens), call.cancelled,
                        after_batch);
}

}  // namespace

absl::StatusOr<std::vector<LoglikelihoodResult>> EngineLanguageModel::ScoreTokens(
    absl::Span<const TokenizedRequest> requests, const CallOptions& call,
    const RequestsFinished& finished) {
  std::vector<LoglikelihoodResult> results(requests.size());
  for (const auto& r : requests) {
    if (r.context.empty() || r.continuation.empty()) {
      return absl::InvalidArgumentError("token request with an empty context or continuation");
    }
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  // With reuse, requests are sorted by tokens (so shared prefixes are adjacent) and
  // identical ones are scored once (lm-eval's logits cache does the same).
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<size_t> unique;
  std::vector<size_t> alias(requests.size());
  if (options_.context_reuse) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (requests[a].context != requests[b].context) {
        return requests[a].context < requests[b].context;
      }
      return requests[a].continuation < requests[b].continuation;
    });
    for (size_t i : order) {
      if (!unique.empty() && requests[unique.back()].context == requests[i].context &&
          requests[unique.back()].continuation == requests[i].continuation) {
        alias[i] = unique.back();
      } else {
        unique.push_back(i);
        alias[i] = i;
      }
    }
  } else {
    unique = order;
    alias = order;
  }
  std::vector<int64_t> copies(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) ++copies[alias[i]];

  int64_t done = 0;
  const int64_t total = static_cast<int64_t>(requests.size());
  auto fed_tokens = [&](size_t i) {
    return static_cast<int64_t>(requests[i].context.size() + requests[i].continuation.size() - 1);
  };

  // Rounds bound the states held at once; a round ends only between different contexts,
  // so requests sharing a whole context stay together.
  size_t begin = 0;
  while (begin < unique.size()) {
    size_t end = begin;
    int64_t round_tokens = 0;
    while (end < unique.size()) {
      if (end > begin && round_tokens >= options_.round_tokens &&
          requests[unique[end]].context != requests[unique[end - 1]].context) {
        break;
      }
      round_tokens += fed_tokens(unique[end]);
      ++end;
    }
    std::vector<size_t> members(unique.begin() + begin, unique.begin() + end);
    begin = end;

    std::vector<PrefixNode> nodes;
    std::vector<Leaf> leaves;
    if (options_.context_reuse) {
      BuildPrefixTree(requests, std::move(members), 0, -1, &nodes, &leaves);
    } else {
      for (size_t m : members) leaves.push_back({m, -1, 0});
    }

    // Shared prefixes, level by level (a node's parent is always on the level before).
    int max_level = -1;
    for (const auto& node : nodes) max_level = std::max(max_level, node.level);
    for (int level = 0; level <= max_level; ++level) {
      std::vector<int> level_nodes;
      std::vector<ForwardItem> items;
      for (size_t k = 0; k < nodes.size(); ++k) {
        if (nodes[k].level != level) continue;
        PrefixNode& node = nodes[k];
        stats_.tokens_fed += static_cast<int64_t>(node.tokens.size());
        if (options_.count_only) continue;
        {
          ScopedSeconds timer(&stats_.state_seconds);
          HG_ASSIGN_OR_RETURN(
              node.state,
              StartState(*model_, node.parent < 0 ? nullptr : nodes[node.parent].state.get()));
        }
        ForwardItem item;
        item.tokens = node.tokens;
        item.state = node.state.get();
        items.push_back(item);
        level_nodes.push_back(static_cast<int>(k));
      }
      std::vector<ForwardOutput> outputs(items.size());
      HG_RETURN_IF_ERROR(ForwardPacked(*model_, items, absl::MakeSpan(outputs),
                                       options_.max_batch_tokens, call, nullptr));
    }

    // Leaves: fed = context[depth:] ++ continuation[:-1]; the continuation is scored.
    // A batch of leaves fills one Forward call's token budget (at most kMaxLeaves states
    // held at once).
    constexpr size_t kMaxLeaves = 1024;
    const int64_t leaf_budget = BatchTokens(*model_, options_.max_batch_tokens);
    for (size_t lb = 0, le = 0; lb < leaves.size(); lb = le) {
      int64_t leaf_tokens = 0;
      le = lb;
      while (le < leaves.size() && le - lb < kMaxLeaves) {
        const TokenizedRequest& r = requests[leaves[le].request];
        const int64_t n =
            static_cast<int64_t>(r.context.size() - leaves[le].depth + r.continuation.size() - 1);
        if (le > lb && leaf_tokens + n > leaf_budget) break;
        leaf_tokens += n;
        ++le;
      }
      std::vector<std::vector<int32_t>> fed(le - lb), targets(le - lb);
      std::vector<std::unique_ptr<SequenceState>> states(le - lb);
      std::vector<ForwardItem> items(le - lb);
      for (size_t k = lb; k < le; ++k) {
        const Leaf& leaf = leaves[k];
        const TokenizedRequest& r = requests[leaf.request];
        if (options_.count_only) {
          stats_.tokens_fed +=
              static_cast<int64_t>(r.context.size() - leaf.depth + r.continuation.size() - 1);
          stats_.tokens_scored += static_cast<int64_t>(r.continuation.size());
          results[leaf.request].n_tokens = static_cast<int64_t>(r.continuation.size());
          done += copies[leaf.request];
          continue;
        }
        auto& f = fed[k - lb];
        auto& t = targets[k - lb];
        f.assign(r.context.begin() + leaf.depth, r.context.end());
        f.insert(f.end(), r.continuation.begin(), r.continuation.end() - 1);
        t.assign(f.size(), -1);
        std::copy(r.continuation.begin(), r.continuation.end(), t.end() - r.continuation.size());
        items[k - lb].tokens = f;
        items[k - lb].targets = t;
        if (leaf.node < 0) {
          ScopedSeconds timer(&stats_.state_seconds);
          HG_ASSIGN_OR_RETURN(states[k - lb], StartState(*model_, nullptr));
          items[k - lb].state = states[k - lb].get();
        } else {
          // A fork of the shared prefix: read its state, copy nothing, keep nothing.
          items[k - lb].start = nodes[leaf.node].state.get();
        }
        stats_.tokens_fed += static_cast<int64_t>(f.size());
        stats_.tokens_scored += static_cast<int64_t>(r.continuation.size());
      }
      if (options_.count_only) {
        if (call.progress) call.progress(done, total);
        continue;
      }
      std::vector<ForwardOutput> outputs(items.size());
      std::vector<size_t> batch_finished;
      auto after = [&](size_t first, size_t last) {
        for (size_t k = first; k < last; ++k) {
          const Leaf& leaf = leaves[lb + k];
          batch_finished.push_back(leaf.request);
          const size_t n_cont = requests[leaf.request].continuation.size();
          const ForwardOutput& out = outputs[k];
          LoglikelihoodResult& result = results[leaf.request];
          result.logprob = 0.0;
          result.is_greedy = true;
          result.n_tokens = static_cast<int64_t>(n_cont);
          result.token_logprobs.assign(out.logprob.end() - n_cont, out.logprob.end());
          for (size_t p = fed[k].size() - n_cont; p < fed[k].size(); ++p) {
            result.logprob += static_cast<double>(out.logprob[p]);
            if (!out.is_greedy[p]) result.is_greedy = false;
          }
          states[k].reset();
          done += copies[leaf.request];
        }
        if (call.progress) call.progress(done, total);
      };
      HG_RETURN_IF_ERROR(ForwardPacked(*model_, items, absl::MakeSpan(outputs),
                                       options_.max_batch_tokens, call, after));
      if (finished) HG_RETURN_IF_ERROR(finished(batch_finished, results));
    }
    ScopedSeconds timer(&stats_.state_seconds);
    nodes.clear();  // the round's shared-prefix states
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (alias[i] != i) results[i] = results[alias[i]];
  }
  return results;
}

absl::StatusOr<std::vector<LoglikelihoodResult>> EngineLanguageModel::Loglikelihood(
    absl::Span<const LoglikelihoodRequest> requests, const CallOptions& call) {
  // Tokenizing is pure per request (tokenizers are thread-safe), and on a GPU it is a
  // large share of a suite's host time: spread it over the cores, in fixed slices so
  // the result does not depend on scheduling.
  const size_t n = requests.size();
  std::vector<absl::StatusOr<TokenizedRequest>> tokenized(n, absl::UnknownError("unset"));
  std::vector<char> truncated(n, 0);
  ParallelFor(n, [&](size_t i) {
    bool cut = false;
    tokenized[i] = Tokenize(requests[i], &cut);
    truncated[i] = cut ? 1 : 0;
  });
  std::vector<TokenizedRequest> ready;
  ready.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!tokenized[i].ok()) return tokenized[i].status();
    stats_.truncated_requests += truncated[i];
    ready.push_back(*std::move(tokenized[i]));
  }
  return ScoreTokens(ready, call);
}

absl::StatusOr<std::vector<RollingResult>> EngineLanguageModel::LoglikelihoodRolling(
    absl::Span<const RollingRequest> requests, const CallOptions& call) {
  std::vector<TokenizedRequest> windows;
  std::vector<size_t> owner;
  std::vector<RollingResult> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    HG_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, Encode(requests[i].text));
    results[i].n_tokens = static_cast<int64_t>(tokens.size());
    if (tokens.empty()) continue;
    if (options_.windowless_rolling || requests[i].windowless) {
      if (model_->info().max_context > 0 &&
          static_cast<int64_t>(tokens.size()) > model_->info().max_context) {
        return absl::InvalidArgumentError(absl::StrCat("windowless rolling needs ", tokens.size(),
                                                       " positions; the model accepts ",
                                                       model_->info().max_context));
      }
      windows.push_back({{prefix_token_id_}, std::move(tokens)});
      owner.push_back(i);
      continue;
    }
    for (auto& w : MakeRollingWindows(tokens, prefix_token_id_, max_length_)) {
      windows.push_back({std::move(w.context), std::move(w.continuation)});
      owner.push_back(i);
    }
  }
  CallOptions window_call = call;
  if (call.progress) {
    // Report texts finished rather than windows.
    window_call.progress = [&call, &requests](int64_t done, int64_t total) {
      call.progress(total == 0 ? 0 : done * static_cast<int64_t>(requests.size()) / total,
                    static_cast<int64_t>(requests.size()));
    };
  }
  HG_ASSIGN_OR_RETURN(auto window_results, ScoreTokens(windows, window_call));
  // Python sums the windows of a text in order.
  for (size_t w = 0; w < windows.size(); ++w)
    results[owner[w]].logprob += window_results[w].logprob;
  return results;
}

absl::StatusOr<std::vector<GenerateUntilResult>> EngineLanguageModel::GenerateUntil(
    absl::Span<const GenerateUntilRequest> requests, const CallOptions& call) {
  std::vector<GenerateRequest> prepared;
  prepared.reserve(requests.size());
  for (const GenerateUntilRequest& r : requests) {
    HG_ASSIGN_OR_RETURN(GenerateRequest request,
                        MakeLmEvalGenerateRequest(*tokenizer_, r.context, r.until, r.max_gen_toks,
                                                  options_.bos_regime == BosRegime::kTokenizer,
                                                  max_length_, prefix_token_id_));
    prepared.push_back(std::move(request));
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  GenerateOptions generate;
  generate.decode.max_batch_tokens = BatchTokens(*model_, options_.max_batch_tokens);
  generate.cancelled = call.cancelled;
  generate.progress = call.progress;
  HG_ASSIGN_OR_RETURN(std::vector<GenerateResult> generated,
                      Generate(*model_, tokenizer_, prepared, generate));
  std::vector<GenerateUntilResult> results(requests.size());
  for (size_t i = 0; i < generated.size(); ++i) {
    results[i].text = std::move(generated[i].text);
    results[i].n_tokens = static_cast<int64_t>(generated[i].tokens.size());
    stats_.tokens_fed += generated[i].tokens_fed;
    stats_.tokens_generated += results[i].n_tokens;
  }
  return results;
}

}  // namespace hgeval::tasks
