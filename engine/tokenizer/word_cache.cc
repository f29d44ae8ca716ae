#include "engine/tokenizer/word_cache.h"

#include <atomic>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace hgeval {
namespace {

std::atomic<uint64_t> next_cache_id{1};

struct Entries {
  absl::flat_hash_map<std::string, std::vector<int32_t>> map;
  size_t bytes = 0;  // counted as EntryBytes
};

// An entry's bytes: the word, its ids and the map's and vector's own share.
size_t EntryBytes(std::string_view word, size_t ids) {
  return word.size() + ids * sizeof(int32_t) + sizeof(std::string) + 2 * sizeof(void*) + 32;
}

// One thread's entries of the few caches (tokenizers) it used last, most recent first.
struct ThreadTable {
  uint64_t cache_id;
  std::unique_ptr<Entries> entries;
};

Entries& ThisThreadsEntries(uint64_t cache_id) {
  thread_local std::vector<ThreadTable> tables;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].cache_id != cache_id) continue;
    if (i > 0) std::swap(tables[i], tables[0]);
    return *tables[0].entries;
  }
  if (tables.size() == WordCache::kCachesPerThread) tables.pop_back();
  tables.insert(tables.begin(), ThreadTable{cache_id, std::make_unique<Entries>()});
  return *tables[0].entries;
}

}  // namespace

WordCache::WordCache() : id_(next_cache_id.fetch_add(1, std::memory_order_relaxed)) {}

void WordCache::Lookup(std::string_view word,
                       const std::function<void(std::string_view, std::vector<int32_t>*)>& compute,
                       std::vector<int32_t>* out) const {
  if (word.size() > kMaxWordBytes) {
    compute(word, out);
    return;
  }
  Entries& entries = ThisThreadsEntries(id_);
  // Debian's Abseil has its own absl::string_view (not std::string_view).
  const absl::string_view key(word.data(), word.size());
  if (const auto it = entries.map.find(key); it != entries.map.end()) {
    out->insert(out->end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<int32_t> ids;
  compute(word, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
  const size_t bytes = EntryBytes(word, ids.size());
  if (entries.bytes + bytes > kMaxBytesPerThread) {
    entries.map.clear();
    entries.bytes = 0;
  }
  entries.bytes += bytes;
  entries.map.emplace(std::string(word), std::move(ids));
}

}  // namespace hgeval
