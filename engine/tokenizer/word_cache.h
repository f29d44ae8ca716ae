// A bounded, thread-safe cache from pre-token (word) text to its token ids: BPE on a word
// is the costly step and natural text repeats words constantly.
#ifndef HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_
#define HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace hgeval {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;  // longer words are not cached
  static constexpr size_t kMaxEntriesPerShard = 1 << 14;

  // Appends the ids of `word` to *out, computing them with `compute` on a miss.
  void Lookup(std::string_view word,
              const std::function<void(std::string_view, std::vector<int32_t>*)>& compute,
              std::vector<int32_t>* out) const {
    if (word.size() > kMaxWordBytes) {
      compute(word, out);
      return;
    }
    // Debian's Abseil has its own absl::string_view (not std::string_view).
    const absl::string_view key(word.data(), word.size());
    Shard& shard = shards_[absl::Hash<absl::string_view>{}(key) % kShards];
    {
      absl::MutexLock lock(&shard.mutex);
      if (const auto it = shard.map.find(key); it != shard.map.end()) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int32_t> ids;
    compute(word, &ids);
    out->insert(out->end(), ids.begin(), ids.end());
    absl::MutexLock lock(&shard.mutex);
    if (shard.map.size() >= kMaxEntriesPerShard) shard.map.clear();
    shard.map.emplace(std::string(word), std::move(ids));
  }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    absl::Mutex mutex;
    absl::flat_hash_map<std::string, std::vector<int32_t>> map;
  };
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_
