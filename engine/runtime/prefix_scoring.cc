#include "engine/runtime/prefix_scoring.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/util/memory_budget.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

// A shared prefix fed once: tokens after the parent's state (-1: the empty state).
struct PrefixNode {
  int parent = -1;
  int level = 0;
  int64_t end = 0;   // position after the node's tokens
  size_t bytes = 0;  // StateBytes(end)
  std::vector<int32_t> tokens;
  std::unique_ptr<SequenceState> state;  // while held
  bool computed_before = false;
  // share_continuations: the node's positions from `first_scored` on (-1: none) are
  // scored, with targets from request `member`'s tokens (its members agree on them).
  int64_t begin = 0;  // position of the node's first token
  size_t member = 0;
  int64_t first_scored = -1;
  int top_k = 0;
  ForwardOutput scored;  // per node token, from the node's last computation
};

// A request scored from a node's state (node -1: from its own start or an empty state):
// fed = context[depth:] ++ continuation[:-1].
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
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Builds the prefix tree of `members` (indices into requests, sorted by context), all of
// which share context[0:depth] and whose state at `depth` is node `parent`.
void BuildPrefixTree(absl::Span<const ScoreRequest> requests, std::vector<size_t> members,
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
    node.end = static_cast<int64_t>(end);
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

// share_continuations: the prefix tree over the fed tokens F (a request's `sequences`
// entry without its last token) of `members`, sorted by F, which all share F[0..depth]
// (both ends included) and whose state at `depth` is node `parent`. A node stops one
// token short of where its members part, so that each branch feeds the token whose
// prediction is its first own target.
void BuildSharedTree(absl::Span<const ScoreRequest> requests,
                     const std::vector<std::vector<int32_t>>& sequences,
                     absl::Span<const size_t> members, size_t depth, int parent,
                     std::vector<PrefixNode>* nodes, std::vector<Leaf>* leaves) {
  if (members.size() == 1) {
    leaves->push_back({members[0], parent, depth});
    return;
  }
  auto fed_size = [&](size_t m) { return sequences[m].size() - 1; };
  const std::vector<int32_t>& front = sequences[members.front()];
  const std::vector<int32_t>& back = sequences[members.back()];
  const size_t n = std::min(fed_size(members.front()), fed_size(members.back()));
  size_t common = 0;
  while (common < n && front[common] == back[common]) ++common;
  const size_t end = common - 1;  // >= depth
  int under = parent;
  if (end > depth) {
    PrefixNode node;
    node.parent = parent;
    node.level = parent < 0 ? 0 : (*nodes)[parent].level + 1;
    node.begin = static_cast<int64_t>(depth);
    node.end = static_cast<int64_t>(end);
    node.tokens.assign(front.begin() + depth, front.begin() + end);
    node.member = members.front();
    node.top_k = requests[members.front()].top_k;
    size_t first = end;
    for (size_t m : members) first = std::min(first, requests[m].context.size() - 1);
    node.first_scored = first < end ? static_cast<int64_t>(first) : -1;
    nodes->push_back(std::move(node));
    under = static_cast<int>(nodes->size()) - 1;
  }
  // The members share F[0..end] and part at end + 1 (those whose F ends there sort first).
  size_t i = 0;
  while (i < members.size()) {
    const size_t m = members[i];
    if (fed_size(m) == end + 1) {
      leaves->push_back({m, under, end});
      ++i;
      continue;
    }
    const int32_t token = sequences[m][end + 1];
    size_t j = i + 1;
    while (j < members.size() && sequences[members[j]][end + 1] == token) ++j;
    BuildSharedTree(requests, sequences, members.subspan(i, j - i), end, under, nodes, leaves);
    i = j;
  }
}

// Runs run(first, last); when it fails for lack of memory over more than one item, runs
// each half instead (an item's results do not depend on its batch).
absl::Status RunShrinking(size_t first, size_t last,
                          const std::function<absl::Status(size_t, size_t)>& run, int64_t* splits) {
  absl::Status status = run(first, last);
  if (status.ok() || !absl::IsResourceExhausted(status) || last - first < 2) return status;
  ++*splits;
  const size_t mid = first + (last - first) / 2;
  HG_RETURN_IF_ERROR(RunShrinking(first, mid, run, splits));
  return RunShrinking(mid, last, run, splits);
}

// The byte bound of one call: what the budget can give now (cached blocks included),
// with a tenth kept for the forward passes' own scratch.
size_t StateBytesBound(const Model& model, size_t requested) {
  if (requested > 0) return requested;
  size_t obtainable = 0;
  if (const MemoryBudget* budget = model.memory_budget();
      budget != nullptr && budget->limit() > 0) {
    obtainable = budget->obtainable();
  } else {
    obtainable = HostAvailableBytes() / 2;
    if (obtainable == 0) obtainable = size_t{8} << 30;
  }
  return obtainable / 10 * 9;
}

}  // namespace

class PrefixScorer::Impl {
 public:
  Impl(Model& model, absl::Span<const ScoreRequest> requests, PrefixScoreOptions options)
      : model_(model), requests_(requests), options_(std::move(options)) {}

  absl::Status Start();
  absl::StatusOr<bool> Step();
  std::vector<ScoreResult> TakeResults() { return std::move(results_); }
  const PrefixScoreStats& stats() const { return stats_; }

 private:
  int64_t FedTokens(const Leaf& leaf) const {
    const ScoreRequest& r = requests_[leaf.request];
    return static_cast<int64_t>(r.context.size() - leaf.depth + r.continuation.size() - 1);
  }
  int64_t StartPosition(const Leaf& leaf) const {
    if (leaf.node >= 0) return nodes_[leaf.node].end;
    const SequenceState* start = requests_[leaf.request].start;
    return start == nullptr ? 0 : start->position();
  }
  // Token t of request i's context ++ continuation.
  int32_t Token(size_t i, size_t t) const {
    const ScoreRequest& r = requests_[i];
    return t < r.context.size() ? r.context[t] : r.continuation[t - r.context.size()];
  }
  void BuildSharedTrees(const std::vector<size_t>& members);
  size_t HeldBytes() const;
  bool Cancelled() const { return options_.cancelled && options_.cancelled(); }

  // The leaves [first, end) of the next wave: its prefix states (closed under parents)
  // fit half of the bound, or it holds one leaf. Fills wave_ and in_wave_.
  size_t PlanWave(size_t first);
  // Makes the states of wave_ present, dropping the others.
  absl::Status PrepareWave();
  absl::Status ComputeNodes(const std::vector<int>& level_nodes);
  // The next batch of leaves from `first`: one Forward call's tokens whose states fit.
  size_t LeafBatchEnd(size_t first) const;
  absl::Status ScoreLeafBatch(size_t first, size_t last);
  void Finish();

  Model& model_;
  absl::Span<const ScoreRequest> requests_;
  const PrefixScoreOptions options_;
  PrefixScoreStats stats_;

  std::vector<PrefixNode> nodes_;
  std::vector<Leaf> leaves_;
  std::vector<size_t> alias_;    // per request: the distinct request answering it
  std::vector<int64_t> copies_;  // per distinct request: how many requests it answers
  std::vector<ScoreResult> results_;
  size_t bound_ = 0;
  size_t leaf_bound_ = 0;
  int64_t batch_tokens_ = 0;
  int64_t done_ = 0;
  int64_t total_ = 0;
  // The wave in progress: leaves [cursor_, wave_end_) are still to score.
  std::vector<int> wave_;
  std::vector<char> in_wave_;
  size_t cursor_ = 0;
  size_t wave_end_ = 0;
  bool finished_ = false;
};

size_t PrefixScorer::Impl::HeldBytes() const {
  size_t held = 0;
  for (const PrefixNode& node : nodes_) {
    if (node.state != nullptr) held += node.bytes;
  }
  return held;
}

absl::Status PrefixScorer::Impl::Start() {
  const size_t n = requests_.size();
  for (size_t i = 0; i < n; ++i) {
    if (requests_[i].context.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("score request ", i,
                       ": the context must hold at least one token (use BOS or the "
                       "last token of a forked prefix)"));
    }
    if (requests_[i].continuation.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("score request ", i, ": the continuation is empty"));
    }
  }
  results_.assign(n, ScoreResult{});
  total_ = static_cast<int64_t>(n);
  batch_tokens_ = BatchTokens(model_, options_.max_batch_tokens);
  // With reuse, requests are sorted by tokens (shared prefixes adjacent) and identical
  // ones are scored once (lm-eval's logits cache does the same).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  alias_.resize(n);
  std::iota(alias_.begin(), alias_.end(), 0);
  std::vector<size_t> unique;
  if (options_.context_reuse) {
    auto key_less = [&](size_t a, size_t b) {
      const ScoreRequest& x = requests_[a];
      const ScoreRequest& y = requests_[b];
      if (x.start != y.start) return std::less<const SequenceState*>()(x.start, y.start);
      if (x.context != y.context) return x.context < y.context;
      if (x.continuation != y.continuation) return x.continuation < y.continuation;
      return x.top_k < y.top_k;
    };
    std::stable_sort(order.begin(), order.end(), key_less);
    for (size_t i : order) {
      if (!unique.empty() && !key_less(unique.back(), i) && !key_less(i, unique.back())) {
        alias_[i] = unique.back();
      } else {
        unique.push_back(i);
      }
    }
  } else {
    unique = order;
  }
  copies_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) ++copies_[alias_[i]];

  // One tree over the whole call, so a request's tree does not depend on the budget.
  if (options_.context_reuse && options_.share_continuations) {
    BuildSharedTrees(unique);
  } else if (options_.context_reuse) {
    std::vector<size_t> tree_members;
    for (size_t i : unique) {
      if (requests_[i].start == nullptr) tree_members.push_back(i);
    }
    BuildPrefixTree(requests_, std::move(tree_members), 0, -1, &nodes_, &leaves_);
    for (size_t i : unique) {
      if (requests_[i].start != nullptr) leaves_.push_back({i, -1, 0});
    }
  } else {
    for (size_t i : unique) leaves_.push_back({i, -1, 0});
  }

  if (options_.count_only) {
    for (const PrefixNode& node : nodes_) {
      stats_.tokens_fed += static_cast<int64_t>(node.tokens.size());
    }
    for (const Leaf& leaf : leaves_) {
      const ScoreRequest& r = requests_[leaf.request];
      stats_.tokens_fed += FedTokens(leaf);
      stats_.tokens_scored += static_cast<int64_t>(r.continuation.size());
      results_[leaf.request].token_logprobs.assign(r.continuation.size(), 0.0f);
      done_ += copies_[leaf.request];
    }
    if (options_.progress) options_.progress(done_, total_);
    cursor_ = wave_end_ = leaves_.size();
    return absl::OkStatus();
  }
  for (PrefixNode& node : nodes_) node.bytes = model_.StateBytes(node.end);
  bound_ = StateBytesBound(model_, options_.state_bytes);
  stats_.state_bytes_bound = bound_;
  in_wave_.assign(nodes_.size(), 0);
  return absl::OkStatus();
}

void PrefixScorer::Impl::BuildSharedTrees(const std::vector<size_t>& unique) {
  std::vector<std::vector<int32_t>> sequences(requests_.size());
  std::vector<size_t> members;
  for (size_t i : unique) {
    const ScoreRequest& r = requests_[i];
    if (r.start != nullptr) continue;
    sequences[i] = r.context;
    sequences[i].insert(sequences[i].end(), r.continuation.begin(), r.continuation.end());
    members.push_back(i);
  }
  // By top_k (a node scores for all its members at once), then by fed tokens.
  std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
    if (requests_[a].top_k != requests_[b].top_k) return requests_[a].top_k < requests_[b].top_k;
    return std::lexicographical_compare(sequences[a].begin(), sequences[a].end() - 1,
                                        sequences[b].begin(), sequences[b].end() - 1);
  });
  size_t i = 0;
  while (i < members.size()) {
    const size_t m = members[i];
    size_t j = i + 1;
    while (j < members.size() && requests_[members[j]].top_k == requests_[m].top_k &&
           sequences[members[j]][0] == sequences[m][0]) {
      ++j;
    }
    BuildSharedTree(requests_, sequences, absl::MakeConstSpan(members).subspan(i, j - i), 0, -1,
                    &nodes_, &leaves_);
    i = j;
  }
  for (size_t k : unique) {
    if (requests_[k].start != nullptr) leaves_.push_back({k, -1, 0});
  }
}

size_t PrefixScorer::Impl::PlanWave(size_t first) {
  for (int v : wave_) in_wave_[v] = 0;
  wave_.clear();
  // Prefix states may take half of the bound; the leaves' batches use what is left.
  const size_t node_bound = bound_ / 2;
  size_t wave_bytes = 0;
  size_t k = first;
  for (; k < leaves_.size(); ++k) {
    size_t add = 0;
    std::vector<int> chain;
    for (int v = leaves_[k].node; v >= 0 && !in_wave_[v]; v = nodes_[v].parent) {
      chain.push_back(v);
      add += nodes_[v].bytes;
    }
    if (k > first && wave_bytes + add > node_bound) break;
    for (int v : chain) {
      in_wave_[v] = 1;
      wave_.push_back(v);
    }
    wave_bytes += add;
  }
  return k;
}

absl::StatusOr<bool> PrefixScorer::Impl::Step() {
  if (finished_) return true;
  if (cursor_ == wave_end_) {
    if (wave_end_ == leaves_.size()) {
      Finish();
      return true;
    }
    wave_end_ = PlanWave(cursor_);
    ++stats_.waves;
    HG_RETURN_IF_ERROR(PrepareWave());
    const size_t held = HeldBytes();
    leaf_bound_ = bound_ > held ? bound_ - held : 0;
    return false;
  }
  const size_t end = LeafBatchEnd(cursor_);
  HG_RETURN_IF_ERROR(RunShrinking(
      cursor_, end, [this](size_t a, size_t b) { return ScoreLeafBatch(a, b); },
      &stats_.split_batches));
  cursor_ = end;
  if (cursor_ == leaves_.size()) {
    Finish();
    return true;
  }
  return false;
}

void PrefixScorer::Impl::Finish() {
  {
    ScopedSeconds timer(&stats_.state_seconds);
    for (PrefixNode& node : nodes_) node.state.reset();
  }
  for (size_t i = 0; i < alias_.size(); ++i) {
    if (alias_[i] != i) results_[i] = results_[alias_[i]];
  }
  finished_ = true;
}

absl::Status PrefixScorer::Impl::PrepareWave() {
  const std::vector<int>& wave = wave_;
  const std::vector<char>& in_wave = in_wave_;
  {
    ScopedSeconds timer(&stats_.state_seconds);
    for (size_t v = 0; v < nodes_.size(); ++v) {
      if (in_wave[v] || nodes_[v].state == nullptr) continue;
      nodes_[v].state.reset();
      ++stats_.dropped_states;
    }
  }
  // Missing states, parents first (a node's parent is on the level before).
  std::vector<int> missing;
  for (int v : wave) {
    if (nodes_[v].state == nullptr) missing.push_back(v);
  }
  std::sort(missing.begin(), missing.end(), [&](int a, int b) {
    return nodes_[a].level != nodes_[b].level ? nodes_[a].level < nodes_[b].level : a < b;
  });
  for (size_t i = 0; i < missing.size();) {
    size_t j = i;
    while (j < missing.size() && nodes_[missing[j]].level == nodes_[missing[i]].level) ++j;
    HG_RETURN_IF_ERROR(ComputeNodes(std::vector<int>(missing.begin() + i, missing.begin() + j)));
    i = j;
  }
  return absl::OkStatus();
}

absl::Status PrefixScorer::Impl::ComputeNodes(const std::vector<int>& level_nodes) {
  auto run = [&](size_t first, size_t last) -> absl::Status {
    std::vector<ForwardItem> items;
    std::vector<int> ran;
    std::vector<std::vector<int32_t>> targets;
    size_t k = first;
    while (k < last) {
      // One Forward call's worth of tokens (a longer node runs alone).
      int64_t tokens = 0;
      items.clear();
      ran.clear();
      targets.clear();
      targets.reserve(last - k);
      for (; k < last; ++k) {
        PrefixNode& node = nodes_[level_nodes[k]];
        const int64_t t = static_cast<int64_t>(node.tokens.size());
        if (!items.empty() && tokens + t > batch_tokens_) break;
        if (Cancelled()) return absl::CancelledError("scoring cancelled");
        {
          ScopedSeconds timer(&stats_.state_seconds);
          absl::StatusOr<std::unique_ptr<SequenceState>> state =
              StartStateFor(model_, node.parent < 0 ? nullptr : nodes_[node.parent].state.get(), t);
          if (!state.ok()) {
            for (int v : ran) nodes_[v].state.reset();
            return state.status();
          }
          node.state = *std::move(state);
        }
        ForwardItem item;
        item.tokens = node.tokens;
        item.state = node.state.get();
        if (node.first_scored >= 0) {
          std::vector<int32_t>& t = targets.emplace_back(node.tokens.size(), -1);
          for (int64_t p = std::max(node.begin, node.first_scored); p < node.end; ++p) {
            t[p - node.begin] = Token(node.member, static_cast<size_t>(p + 1));
          }
          item.targets = t;
          item.top_k = node.top_k;
        }
        items.push_back(item);
        ran.push_back(level_nodes[k]);
        tokens += t;
      }
      std::vector<ForwardOutput> outputs(items.size());
      if (absl::Status s = model_.Forward(items, absl::MakeSpan(outputs)); !s.ok()) {
        ScopedSeconds timer(&stats_.state_seconds);
        for (int v : ran) nodes_[v].state.reset();
        return s;
      }
      for (size_t r = 0; r < ran.size(); ++r) {
        PrefixNode& node = nodes_[ran[r]];
        if (node.first_scored >= 0) node.scored = std::move(outputs[r]);
        stats_.tokens_fed += static_cast<int64_t>(node.tokens.size());
        if (node.computed_before) ++stats_.recomputed_states;
        node.computed_before = true;
      }
    }
    return absl::OkStatus();
  };
  return RunShrinking(0, level_nodes.size(), run, &stats_.split_batches);
}

size_t PrefixScorer::Impl::LeafBatchEnd(size_t first) const {
  // A batch fills one Forward call's tokens while what its leaves hold (a fork of a prefix
  // state reads it, or copies it where the model must; a fresh start holds a state of its
  // own) fits beside the held prefix states; at most kMaxLeaves at once.
  constexpr size_t kMaxLeaves = 16384;
  size_t end = first;
  int64_t tokens = 0;
  size_t bytes = 0;
  while (end < wave_end_ && end - first < kMaxLeaves) {
    const Leaf& leaf = leaves_[end];
    const int64_t t = FedTokens(leaf);
    const bool forks = leaf.node >= 0 || requests_[leaf.request].start != nullptr;
    const size_t b =
        forks ? model_.ReadOnlyForkBytes(StartPosition(leaf), t) : model_.StateBytes(t);
    if (end > first && (tokens + t > batch_tokens_ || bytes + b > leaf_bound_)) break;
    tokens += t;
    bytes += b;
    ++end;
  }
  return end;
}

absl::Status PrefixScorer::Impl::ScoreLeafBatch(size_t first, size_t last) {
  if (Cancelled()) return absl::CancelledError("scoring cancelled");
  const size_t count = last - first;
  std::vector<std::vector<int32_t>> fed(count), targets(count);
  std::vector<ForwardItem> items(count);
  for (size_t k = 0; k < count; ++k) {
    const Leaf& leaf = leaves_[first + k];
    const ScoreRequest& r = requests_[leaf.request];
    std::vector<int32_t>& f = fed[k];
    std::vector<int32_t>& t = targets[k];
    // Fed: tokens [depth, last) of context ++ continuation; scored from the last context
    // token on (positions before `depth` were scored by the leaf's nodes).
    const size_t fed_end = r.context.size() + r.continuation.size() - 1;
    f.resize(fed_end - leaf.depth);
    t.assign(f.size(), -1);
    for (size_t p = leaf.depth; p < fed_end; ++p) {
      f[p - leaf.depth] = Token(leaf.request, p);
      if (p + 1 >= r.context.size()) t[p - leaf.depth] = Token(leaf.request, p + 1);
    }
    items[k].tokens = f;
    items[k].targets = t;
    items[k].top_k = r.top_k;
    // A fork of a prefix (or of the request's own start): read it, copy nothing, keep
    // nothing. From scratch: a fresh start, nothing kept either.
    const SequenceState* start = leaf.node >= 0 ? nodes_[leaf.node].state.get() : r.start;
    if (start != nullptr) {
      items[k].start = start;
    } else {
      items[k].fresh_start = true;
    }
  }
  std::vector<ForwardOutput> outputs(count);
  HG_RETURN_IF_ERROR(model_.Forward(items, absl::MakeSpan(outputs)));
  std::vector<size_t> finished;
  finished.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    const Leaf& leaf = leaves_[first + k];
    const ScoreRequest& r = requests_[leaf.request];
    const ForwardOutput& out = outputs[k];
    const size_t n_cont = r.continuation.size();
    ScoreResult& result = results_[leaf.request];
    result.token_logprobs.resize(n_cont);
    result.greedy_tokens.resize(n_cont);
    if (r.top_k > 0) result.top_k.resize(n_cont);
    for (size_t j = 0; j < n_cont; ++j) {
      // The prediction of continuation token j is made at position p.
      const size_t p = r.context.size() - 1 + j;
      const ForwardOutput* from = &out;
      size_t at = p - leaf.depth;
      if (p < leaf.depth) {
        int node = leaf.node;
        while (nodes_[node].begin > static_cast<int64_t>(p)) node = nodes_[node].parent;
        from = &nodes_[node].scored;
        at = p - static_cast<size_t>(nodes_[node].begin);
      }
      result.token_logprobs[j] = from->logprob[at];
      result.greedy_tokens[j] = from->argmax[at];
      result.logprob += static_cast<double>(from->logprob[at]);
      result.is_greedy = result.is_greedy && from->is_greedy[at] != 0;
      if (r.top_k > 0) result.top_k[j] = from->top_k[at];
    }
    stats_.tokens_fed += static_cast<int64_t>(fed[k].size());
    stats_.tokens_scored += static_cast<int64_t>(n_cont);
    done_ += copies_[leaf.request];
    finished.push_back(leaf.request);
  }
  if (options_.finished) HG_RETURN_IF_ERROR(options_.finished(finished, results_));
  if (options_.progress) options_.progress(done_, total_);
  return absl::OkStatus();
}

PrefixScorer::PrefixScorer(Model& model, absl::Span<const ScoreRequest> requests,
                           PrefixScoreOptions options)
    : impl_(std::make_unique<Impl>(model, requests, std::move(options))) {}

PrefixScorer::~PrefixScorer() = default;

absl::Status PrefixScorer::Start() { return impl_->Start(); }

absl::StatusOr<bool> PrefixScorer::Step() { return impl_->Step(); }

std::vector<ScoreResult> PrefixScorer::TakeResults() { return impl_->TakeResults(); }

const PrefixScoreStats& PrefixScorer::stats() const { return impl_->stats(); }

absl::StatusOr<std::vector<ScoreResult>> ScoreWithPrefixReuse(
    Model& model, absl::Span<const ScoreRequest> requests, const PrefixScoreOptions& options,
    PrefixScoreStats* stats) {
  PrefixScorer scorer(model, requests, options);
  absl::Status status = scorer.Start();
  while (status.ok()) {
    absl::StatusOr<bool> done = scorer.Step();
    if (!done.ok()) {
      status = done.status();
    } else if (*done) {
      break;
    }
  }
  if (stats != nullptr) *stats = scorer.stats();
  if (!status.ok()) return status;
  return scorer.TakeResults();
}

}  // namespace hgeval
