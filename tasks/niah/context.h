// NIAH prompt construction at the token level, after Kamradt's harness
// (llm_needle_haystack_tester.py: encode_and_trim, insert_needle) and the FoX base-model
// prompt (eval/niah/prompt.py, config-prompt-{easy,standard}.yaml).
//
// For a context length L and depth D (percent), with H the haystack tokens:
//   n   = min(L, |H|);  if n + |needle| > L - buffer:  n = L - buffer - |needle|
//   ctx = H[0:n]
//   ip  = n when D == 100, else int(n * (D / 100)) backed off to just after the
//         previous sentence-end token (0 when there is none before it)
//   prompt = [BOS] + ctx[0:ip] + needle + ctx[ip:n] + suffix
// where needle and suffix (the quiz text ending in the retrieval question) are encoded on
// their own without special tokens, and BOS is prepended when the tokenizer adds one.
//
// Sentence-end rule (per tokenizer): a token is a sentence end when its text, decoded on
// its own with leading ASCII whitespace removed, is exactly ".". Kamradt compares with the
// ids of encode("."); for tiktoken that is the "." token, for SentencePiece it is "▁.",
// which never follows a word, so his rule would send every needle to depth 0 there. The
// rule above counts "." and " ."/"▁." for every tokenizer; merged tokens such as ".\n" or
// ".)" do not count (as in Kamradt's).
//
// Deviation from the upstream harnesses, which decode the token list to text and let the
// model's tokenizer encode the whole prompt again: hgeval keeps the token list, so every
// cell's prompt shares the haystack tokens before its insertion point with every other
// cell (what makes prefix reuse exact), and the token counts are exactly as above.
#ifndef HGEVAL_TASKS_NIAH_CONTEXT_H_
#define HGEVAL_TASKS_NIAH_CONTEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval::niah {

enum class NiahMode { kEasy, kStandard };

absl::StatusOr<NiahMode> ParseNiahMode(std::string_view name);  // "easy", "standard"
std::string_view NiahModeName(NiahMode mode);

// The strings of one mode (FoX's configs; Kamradt's needle and question).
struct NiahTexts {
  std::string needle;
  std::string retrieval_question;
  // Appended after the context: the FoX quiz sentence followed by retrieval_question.
  std::string prompt_suffix;
  // What a correct completion of the prompt says (the prompt ends with "... San Francisco
  // is"), the ROUGE reference.
  std::string expected_answer;
  std::vector<std::string> key_phrases;
};

// easy: the needle holds the question and its answer; standard: only the answer.
NiahTexts DefaultNiahTexts(NiahMode mode);

// "\n\nThere is an important piece of information hidden inside the above document. Now
// that you've read the document, I will quiz you about it. Answer the following
// question: " + question.
std::string FoxPromptSuffix(std::string_view retrieval_question);

// Where the needle goes in one cell.
struct NiahCellLayout {
  int64_t length = 0;            // L
  double depth = 0;              // D
  int64_t context_tokens = 0;    // n: haystack tokens in the prompt
  int64_t target_insertion = 0;  // int(n * D / 100) before the back-off (n at D = 100)
  int64_t insertion_point = 0;   // ip: haystack tokens before the needle
};

class NiahContextBuilder {
 public:
  // `haystack` must outlive the builder.
  static absl::StatusOr<NiahContextBuilder> Create(const Tokenizer& tokenizer,
                                                   absl::Span<const int32_t> haystack,
                                                   const NiahTexts& texts,
                                                   int64_t buffer_tokens = 200);

  // InvalidArgument when L - buffer leaves no room for the needle.
  absl::StatusOr<NiahCellLayout> Layout(int64_t length, double depth) const;

  bool IsSentenceEnd(int32_t token) const;

  // [BOS] + haystack[0:ip]: the shared prefix of every cell with this insertion point.
  std::vector<int32_t> PrefixTokens(int64_t insertion_point) const;
  // needle + haystack[ip:n] + suffix: what follows the prefix.
  std::vector<int32_t> RestTokens(const NiahCellLayout& layout) const;
  // PrefixTokens(ip) + RestTokens(layout).
  std::vector<int32_t> PromptTokens(const NiahCellLayout& layout) const;

  // [BOS] + haystack: PrefixTokens(ip) is its first prefix_offset() + ip tokens.
  const std::vector<int32_t>& bos_and_haystack() const { return bos_and_haystack_; }
  int64_t prefix_offset() const { return bos_.size(); }
  const std::vector<int32_t>& needle_tokens() const { return needle_; }
  const std::vector<int32_t>& suffix_tokens() const { return suffix_; }
  int64_t haystack_size() const {
    return static_cast<int64_t>(bos_and_haystack_.size()) - prefix_offset();
  }

 private:
  NiahContextBuilder() = default;

  std::vector<int32_t> bos_;
  std::vector<int32_t> bos_and_haystack_;
  std::vector<int32_t> needle_;
  std::vector<int32_t> suffix_;
  int64_t buffer_tokens_ = 200;
  absl::flat_hash_map<int32_t, bool> sentence_end_;  // every distinct haystack token
};

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_CONTEXT_H_
