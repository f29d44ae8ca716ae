// Judge-free NIAH cell scores in [0, 10].
//  - ROUGE-1: 10 x rouge_score's rouge1 F-measure between the expected answer and the
//    generated text (the LLM-free scorer of FranxYao/Long-Context-Data-Engineering, which
//    uses use_stemmer=True). A deviation from the GPT judge of the original papers.
//  - Key phrase: 10 x the fraction of key phrases found in the generated text, both sides
//    normalised by the ROUGE tokenizer (no stemming) and matched on whole tokens.
#ifndef HGEVAL_METRICS_NIAH_SCORING_H_
#define HGEVAL_METRICS_NIAH_SCORING_H_

#include <string>
#include <string_view>
#include <vector>

namespace hgeval::metrics {

double NiahRouge1Score(std::string_view expected_answer, std::string_view generated,
                       bool use_stemmer = true);

// 0 when `key_phrases` is empty.
double NiahKeyPhraseScore(const std::vector<std::string>& key_phrases, std::string_view generated);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_NIAH_SCORING_H_
