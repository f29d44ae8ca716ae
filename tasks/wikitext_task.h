// wikitext (lm-eval tasks/wikitext, wikitext-2-raw-v1 document level): the raw test file
// split into articles as EleutherAI/wikitext_document_level does.
#ifndef HGEVAL_TASKS_WIKITEXT_TASK_H_
#define HGEVAL_TASKS_WIKITEXT_TASK_H_

#include <string>
#include <vector>

namespace hgeval::tasks {

// The wikitext_document_level generator: lines = raw.split("\n"); a line whose
// heading-normalised strip() starts with "= " and ends with " =" starts a new page;
// pages are "\n".join(lines), empty (whitespace-only) pages are skipped except the last.
std::vector<std::string> SplitWikitextPages(const std::string& raw);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_WIKITEXT_TASK_H_
