// Text transformations of lm-evaluation-harness tasks, reproduced with Python's
// semantics (str.replace, str.strip, str.capitalize, and the tasks' regexes).
#ifndef HGEVAL_TASKS_API_TEXT_PREPROCESS_H_
#define HGEVAL_TASKS_API_TEXT_PREPROCESS_H_

#include <string>
#include <string_view>

namespace hgeval::tasks {

// Python str.replace(from, to): every non-overlapping occurrence, left to right.
std::string PyReplace(std::string_view text, std::string_view from, std::string_view to);
// Python str.strip() / rstrip() (Unicode whitespace).
std::string PyStrip(std::string_view text);
std::string PyRstrip(std::string_view text);
// Python str.capitalize() for ASCII letters (first upper, rest lower); other characters
// are left as they are.
std::string PyCapitalizeAscii(std::string_view text);

// lm-eval tasks/hellaswag/utils.py preprocess(): strip; " [title]" -> ". "; delete
// \[.*?\] (no newlines inside); one pass of "  " -> " ".
std::string HellaswagPreprocess(std::string_view text);

// The lm-eval query of a HellaSwag doc whose source has lost the ctx_a / ctx_b split
// (the data/hellaswag jsonl: query = activity_label + ": " + ctx_a + " " + ctx_b,
// already cleaned, ctx_b not capitalised). ctx_b is taken to be the text after the last
// ". " when it starts with a lower-case letter (ActivityNet docs, whose ctx_b is the
// lower-cased start of the last sentence); it is capitalised as lm-eval does, and the
// result goes through HellaswagPreprocess. Docs whose ctx_b cannot be found this way
// keep their text.
std::string HellaswagQueryFromJoined(std::string_view joined_query);

// lm-eval tasks/wikitext/preprocess_wikitext.py wikitext_detokenizer(page).
std::string WikitextDetokenize(std::string_view page);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_API_TEXT_PREPROCESS_H_
