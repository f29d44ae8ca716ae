// Requests and checks shared by the bounded-memory tests of both backends: documents whose
// contexts share prefixes several levels deep, and a bitwise comparison of scores.
#ifndef HGEVAL_TESTS_SUPPORT_SCORE_CHECKS_H_
#define HGEVAL_TESTS_SUPPORT_SCORE_CHECKS_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"

namespace hgeval::testing {

inline std::vector<int32_t> RandomTokenIds(std::mt19937& rng, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return ids;
}

// `documents` preambles (of `preamble` + 17 * doc tokens), 3 questions each, `choices`
// continuations per question.
inline std::vector<ScoreRequest> SharedPrefixRequests(int64_t vocab, uint32_t seed, int documents,
                                                      int preamble, int choices) {
  std::mt19937 rng(seed);
  std::vector<ScoreRequest> requests;
  for (int doc = 0; doc < documents; ++doc) {
    const std::vector<int32_t> head = RandomTokenIds(rng, preamble + 17 * doc, vocab);
    for (int question = 0; question < 3; ++question) {
      std::vector<int32_t> context = head;
      const std::vector<int32_t> tail = RandomTokenIds(rng, 3 + 5 * question, vocab);
      context.insert(context.end(), tail.begin(), tail.end());
      for (int choice = 0; choice < choices; ++choice) {
        ScoreRequest r;
        r.context = context;
        r.continuation = RandomTokenIds(rng, 1 + choice, vocab);
        requests.push_back(r);
      }
    }
  }
  return requests;
}

inline void ExpectSameBits(const std::vector<ScoreResult>& a, const std::vector<ScoreResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(std::memcmp(&a[i].logprob, &b[i].logprob, sizeof(double)), 0)
        << a[i].logprob << " vs " << b[i].logprob;
    EXPECT_EQ(a[i].is_greedy, b[i].is_greedy);
    ASSERT_EQ(a[i].token_logprobs.size(), b[i].token_logprobs.size());
    EXPECT_EQ(std::memcmp(a[i].token_logprobs.data(), b[i].token_logprobs.data(),
                          a[i].token_logprobs.size() * sizeof(float)),
              0);
    EXPECT_EQ(a[i].greedy_tokens, b[i].greedy_tokens);
  }
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_SCORE_CHECKS_H_
