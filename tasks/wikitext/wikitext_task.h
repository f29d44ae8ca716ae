// wikitext (lm-eval tasks/wikitext, wikitext-2-raw-v1 document level): the raw test file
// split into articles as EleutherAI/wikitext_document_level does.
#ifndef HGEVAL_TASKS_WIKITEXT_WIKITEXT_TASK_H_
#define HGEVAL_TASKS_WIKITEXT_WIKITEXT_TASK_H_

#include <string>
#include <vector>

#include "tasks/api/task.h"

namespace hgeval::tasks {

// The wikitext_document_level generator: lines = raw.split("\n"); a line whose
// heading-normalised strip() starts with "= " and ends with " =" starts a new page;
// pages are "\n".join(lines), empty (whitespace-only) pages are skipped except the last.
std::vector<std::string> SplitWikitextPages(const std::string& raw);

// The metrics of a rolling-loglikelihood text task (wikitext, pd_english_heldout):
// word_perplexity, byte_perplexity and bits_per_byte, and one document's samples of them:
// its loglikelihood weighted by its Python-split words and its UTF-8 bytes.
std::vector<MetricSpec> TextPerplexityMetricSpecs();
DocMetrics TextPerplexityMetrics(const std::string& text, double loglikelihood);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_WIKITEXT_WIKITEXT_TASK_H_
