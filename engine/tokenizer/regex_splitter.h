// Pre-tokenizer regexes of GPT-2 and cl100k_base, run with RE2.
//
// RE2 has neither look-ahead nor possessive quantifiers. The possessive forms in
// cl100k_base's pattern never change a match here (each possessive atom is followed by
// something it cannot give back to), so they become greedy ones. The look-ahead
// alternative `\s+(?!\S)` is matched as `\s+` and fixed up in code: a whitespace run that
// stops before a non-space char gives its last char back (when it has more than one),
// which is exactly what backtracking into `\s+(?!\S)` yields; a single whitespace char
// before a non-space char is what the following `\s` / `\s+` alternative matches anyway.
// `\s` is Unicode White_Space, as in Oniguruma / fancy-regex (RE2's \s is ASCII only).
#ifndef HGEVAL_ENGINE_TOKENIZER_REGEX_SPLITTER_H_
#define HGEVAL_ENGINE_TOKENIZER_REGEX_SPLITTER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace hgeval {

class RegexSplitter {
 public:
  enum class Pattern {
    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    kGpt2,
    // '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
    //  ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
    kCl100k,
  };

  static absl::StatusOr<std::unique_ptr<RegexSplitter>> Create(Pattern pattern);
  ~RegexSplitter();

  // Splits valid UTF-8 text into consecutive pieces (their concatenation is the text).
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  RegexSplitter(Pattern pattern, std::unique_ptr<re2::RE2> regex);

  Pattern pattern_;
  std::unique_ptr<re2::RE2> regex_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_REGEX_SPLITTER_H_
