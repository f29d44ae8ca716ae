// Byte-pair merging over a sequence of symbol ids with a linked list and a priority queue:
// repeatedly merges the adjacent pair with the lowest priority value (ties: leftmost), as
// HF tokenizers' BPE, tiktoken and llama2.c's greedy loop all do, in O(n log n).
#ifndef HGEVAL_ENGINE_TOKENIZER_BPE_MERGE_H_
#define HGEVAL_ENGINE_TOKENIZER_BPE_MERGE_H_

#include <cstdint>
#include <queue>
#include <vector>

namespace hgeval::bpe {

// lookup(left, right, &priority, &merged) -> bool: whether (left, right) merges, and if so
// into which id with which priority (lower merges first).
template <typename Priority, typename Lookup>
void MergePairs(std::vector<int32_t>* symbols, Lookup&& lookup) {
  std::vector<int32_t>& ids = *symbols;
  const int n = static_cast<int>(ids.size());
  if (n < 2) return;
  struct Candidate {
    Priority priority;
    int pos;  // index of the left node; nodes keep their index, so order is left to right
    int32_t left;
    int32_t right;
    int32_t merged;
  };
  struct Later {
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.priority != b.priority) return b.priority < a.priority;
      return b.pos < a.pos;
    }
  };
  std::vector<int> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<Candidate> storage;
  storage.reserve(n);
  std::priority_queue<Candidate, std::vector<Candidate>, Later> queue(Later{}, std::move(storage));
  auto consider = [&](int pos) {
    if (pos < 0) return;
    const int right = next[pos];
    if (right < 0) return;
    Priority priority;
    int32_t merged;
    if (lookup(ids[pos], ids[right], &priority, &merged)) {
      queue.push(Candidate{priority, pos, ids[pos], ids[right], merged});
    }
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const int pos = top.pos;
    if (!alive[pos] || ids[pos] != top.left) continue;
    const int right = next[pos];
    // Stale entries (a side was merged since) no longer match the current ids; a pair
    // that still matches merges as recorded (lookup is a function of the pair).
    if (right < 0 || ids[right] != top.right) continue;
    ids[pos] = top.merged;
    alive[right] = 0;
    next[pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = pos;
    consider(prev[pos]);
    consider(pos);
  }
  int out = 0;
  for (int i = 0; i < n; ++i) {
    if (alive[i]) ids[out++] = ids[i];
  }
  ids.resize(out);
}

}  // namespace hgeval::bpe

#endif  // HGEVAL_ENGINE_TOKENIZER_BPE_MERGE_H_
