// SQuAD v1.1-style answer scoring (the official evaluate-v1.1.py, which SCROLLS' f1 and
// exact_match metrics and transformers' squad_metrics.normalize_answer follow):
// normalise = lower-case, delete ASCII punctuation, replace the words a/an/the with a
// space, collapse whitespace; F1 over the multiset of normalised tokens; EM = equal
// normalised strings.
#ifndef HGEVAL_METRICS_SQUAD_H_
#define HGEVAL_METRICS_SQUAD_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace hgeval::metrics {

// Python's normalize_answer on UTF-8 text. lower() is applied to ASCII, Latin-1,
// Latin Extended-A (with U+0130 -> "i" U+0307), Greek and Cyrillic capitals and the
// Kelvin sign (other scripts pass through unchanged). For the article rule's \b, ASCII
// alphanumerics and "_" are word characters; outside ASCII, whitespace, combining marks,
// and the punctuation, symbol and emoji blocks are not, everything else is (Python asks
// the Unicode database).
std::string SquadNormalize(std::string_view text);

// Token F1 of one prediction against one reference: 0 when no token is shared (so an
// empty prediction or reference scores 0).
double SquadF1(std::string_view prediction, std::string_view reference);
bool SquadExactMatch(std::string_view prediction, std::string_view reference);

// Best over the references; 0 with no reference.
double SquadF1MaxOverReferences(std::string_view prediction,
                                absl::Span<const std::string> references);
double SquadExactMatchMaxOverReferences(std::string_view prediction,
                                        absl::Span<const std::string> references);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_SQUAD_H_
