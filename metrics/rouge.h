// ROUGE as google-research's rouge_score computes it (rouge_scorer.py, tokenize.py):
// lower-case, every run of characters outside [a-z0-9] becomes a space, split on
// whitespace, optionally Porter-stem the tokens longer than 3 characters (NLTK's
// stemmer), drop empty tokens.
#ifndef HGEVAL_METRICS_ROUGE_H_
#define HGEVAL_METRICS_ROUGE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace hgeval::metrics {

struct RougeScore {
  double precision = 0.0;
  double recall = 0.0;
  double fmeasure = 0.0;
};

// rouge_score's tokenizer. Non-ASCII characters are separators, except the two whose
// Python lower() holds an ASCII letter (U+0130, U+212A); ASCII upper case is folded.
std::vector<std::string> RougeTokenize(std::string_view text, bool use_stemmer);

// rougeN between a reference (target) and a prediction, on token lists: overlap =
// sum over n-grams of min(count in target, count in prediction); P = overlap / #pred
// n-grams, R = overlap / #target n-grams (each 0 when there are none), F = 2PR/(P+R)
// or 0.
RougeScore RougeNOnTokens(const std::vector<std::string>& target,
                          const std::vector<std::string>& prediction, int n);
// rougeL: longest common subsequence over the whole token lists.
RougeScore RougeLOnTokens(const std::vector<std::string>& target,
                          const std::vector<std::string>& prediction);

// rougeLsum on tokenized sentences: summary-level LCS. For each target sentence, the
// union of the token positions its LCS with every prediction sentence covers; a token
// counts as a hit only while both sides still hold an unmatched copy of it (ROUGE 1.5.5's
// guard against double counting). P = hits / prediction tokens, R = hits / target tokens.
RougeScore RougeLsumOnSentences(const std::vector<std::vector<std::string>>& target,
                                const std::vector<std::vector<std::string>>& prediction);

// Text entry points (tokenize both sides, then score).
RougeScore RougeN(std::string_view target, std::string_view prediction, int n, bool use_stemmer);
RougeScore RougeL(std::string_view target, std::string_view prediction, bool use_stemmer);
// Sentences are the non-empty pieces of the text split on "\n" (rouge_score's default,
// split_summaries=False).
RougeScore RougeLsum(std::string_view target, std::string_view prediction, bool use_stemmer);

enum class RougeType { kRouge1, kRouge2, kRougeL, kRougeLsum };
// "rouge1", "rouge2", "rougeL", "rougeLsum".
const char* RougeTypeName(RougeType type);
RougeScore Rouge(RougeType type, std::string_view target, std::string_view prediction,
                 bool use_stemmer);

// The best F-measure of the prediction against any reference (0 with no reference).
double RougeFMaxOverReferences(RougeType type, std::string_view prediction,
                               absl::Span<const std::string> references, bool use_stemmer);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_ROUGE_H_
