// The Porter stemmer as NLTK's PorterStemmer() runs it by default (mode NLTK_EXTENSIONS),
// which is what rouge_score uses when use_stemmer=True.
#ifndef HGEVAL_METRICS_ROUGE_STEMMER_H_
#define HGEVAL_METRICS_ROUGE_STEMMER_H_

#include <string>
#include <string_view>

namespace hgeval::metrics {

// Stems one lower-case ASCII word. Words of one or two letters come back unchanged, and a
// short table of irregular forms (sky/skies, dying, lying, tying, news, innings, ...) is
// looked up first, as NLTK does.
std::string PorterStem(std::string_view word);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_ROUGE_STEMMER_H_
