// WordCache returns what `compute` gives for a word, whichever thread asks, after its
// per-thread table fills and empties, and never another cache's entries.
#include "engine/tokenizer/word_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace hgeval {
namespace {

// Ids that name the word and the cache that computed them.
void Compute(int cache, std::string_view word, std::vector<int32_t>* out, std::atomic<int>* calls) {
  calls->fetch_add(1);
  out->push_back(cache);
  for (char c : word) out->push_back(static_cast<unsigned char>(c));
}

std::vector<int32_t> Expected(int cache, const std::string& word) {
  std::vector<int32_t> ids = {cache};
  for (char c : word) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

TEST(WordCacheTest, RepeatsAreServedFromTheCacheAndCachesNeverShareEntries) {
  auto a = std::make_unique<WordCache>();
  auto b = std::make_unique<WordCache>();
  std::atomic<int> calls{0};
  for (int round = 0; round < 3; ++round) {
    for (const char* word : {"the", "cat", "sat"}) {
      std::vector<int32_t> from_a, from_b;
      a->Lookup(
          word, [&](std::string_view w, std::vector<int32_t>* o) { Compute(1, w, o, &calls); },
          &from_a);
      b->Lookup(
          word, [&](std::string_view w, std::vector<int32_t>* o) { Compute(2, w, o, &calls); },
          &from_b);
      EXPECT_EQ(from_a, Expected(1, word));
      EXPECT_EQ(from_b, Expected(2, word));
    }
  }
  EXPECT_EQ(calls.load(), 6);  // each word computed once per cache
  // A cache made where a destroyed one lived starts empty.
  a.reset();
  auto c = std::make_unique<WordCache>();
  std::vector<int32_t> from_c;
  c->Lookup(
      "the", [&](std::string_view w, std::vector<int32_t>* o) { Compute(3, w, o, &calls); },
      &from_c);
  EXPECT_EQ(from_c, Expected(3, "the"));
}

TEST(WordCacheTest, EveryThreadGetsTheComputedIdsPastTheByteBound) {
  WordCache cache;
  // Enough distinct long words to fill a thread's table several times over.
  std::vector<std::string> words;
  for (int i = 0; i < 40000; ++i)
    words.push_back(std::string(200, 'a' + i % 26) + std::to_string(i));
  std::atomic<int> calls{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int pass = 0; pass < 2; ++pass) {
        for (const std::string& w : words) {
          std::vector<int32_t> ids;
          cache.Lookup(
              w, [&](std::string_view x, std::vector<int32_t>* o) { Compute(7, x, o, &calls); },
              &ids);
          if (ids != Expected(7, w)) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // 40,000 words of ~1 KiB of entry each exceed a thread's 4 MiB: the table was emptied and
  // words computed again (a cache that kept everything would compute each word once a thread).
  EXPECT_GT(calls.load(), 4 * 40000);
}

}  // namespace
}  // namespace hgeval
