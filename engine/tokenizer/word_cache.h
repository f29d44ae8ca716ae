// A bounded cache from pre-token (word) text to its token ids: BPE on a word is the costly
// step and natural text repeats words constantly. Each thread keeps its own entries, so a
// lookup takes no lock: tasks tokenize their documents on every core at once, and a cache
// shared behind mutexes made sixteen threads wait on each other for every word.
#ifndef HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_
#define HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hgeval {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;  // longer words are not cached
  // What one thread keeps for one cache (words, ids and a per-entry overhead), emptied
  // when full; a thread keeps its tables for the last kCachesPerThread caches it used.
  static constexpr size_t kMaxBytesPerThread = size_t{4} << 20;
  static constexpr size_t kCachesPerThread = 4;

  WordCache();
  WordCache(const WordCache&) = delete;
  WordCache& operator=(const WordCache&) = delete;

  // Appends the ids of `word` to *out, computing them with `compute` on a miss.
  void Lookup(std::string_view word,
              const std::function<void(std::string_view, std::vector<int32_t>*)>& compute,
              std::vector<int32_t>* out) const;

 private:
  // Names this cache in the threads' tables; never reused, so a cache created where a
  // destroyed one lived never sees its entries.
  const uint64_t id_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_WORD_CACHE_H_
