// SCROLLS data: the records SCROLLS ships ({id, pid, input, output}, one per JSON line,
// `{subset}/validation.jsonl` or `.jsonl.gz`), readers that build the same records from
// the raw upstream releases of ContractNLI (dev.json) and QMSum (val.jsonl), and lm-eval's
// document preparation (lm_eval/tasks/scrolls/task.py): duplicate ids merged into one doc
// with a list of outputs, the question split off the input, QuALITY's choices extracted.
#ifndef HGEVAL_TASKS_SCROLLS_SCROLLS_DATA_H_
#define HGEVAL_TASKS_SCROLLS_SCROLLS_DATA_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tasks/api/task.h"

namespace hgeval::tasks {

struct ScrollsRecord {
  std::string id;
  std::string pid;
  std::string input;
  std::string output;
};

// SCROLLS JSON lines; every record needs string id, input and output (pid may be absent).
absl::StatusOr<std::vector<ScrollsRecord>> ParseScrollsRecords(const std::string& jsonl,
                                                               const std::string& name);

// ContractNLI's dev.json: one record per (document, hypothesis) annotation, in file order;
// id "{document id}_{hypothesis key}", pid id + "_0", input hypothesis + "\n\n" +
// document text, output "Entailment", "Contradiction" or "Not mentioned".
absl::StatusOr<std::vector<ScrollsRecord>> ContractNliRecordsFromRaw(const std::string& dev_json,
                                                                     const std::string& name);

// QMSum's per-meeting JSON lines: one record per query (the general queries, then the
// specific ones); id "qmsum_{split}_{meeting}_{query}", pid id + "_0", input query +
// "\n\n" + the transcript as "speaker: content" lines, output the query's answer.
absl::StatusOr<std::vector<ScrollsRecord>> QmsumRecordsFromRaw(const std::string& jsonl,
                                                               const std::string& split,
                                                               const std::string& name);

// The validation records of a SCROLLS subset ("qmsum", "contract_nli", ...) under
// data_dir/scrolls/{subset}/: validation.jsonl(.gz) when present, else the raw upstream
// file where a reader exists (contract_nli: dev.json(.gz); qmsum: val.jsonl(.gz)).
absl::StatusOr<std::vector<ScrollsRecord>> LoadScrollsValidation(const std::string& data_dir,
                                                                 const std::string& subset);

// lm-eval's _drop_duplicates_in_input: one doc per id, in order of first appearance, with
// that record's id, pid and input and "outputs" = every output of the id, in order.
std::vector<Doc> MergeDuplicateIds(const std::vector<ScrollsRecord>& records);

// lm-eval's _process_doc_prepended_question: s = input.find("\n\n"), question =
// input[:s], text = input[s + 2:]. Without a blank line Python's find gives -1, so the
// question is the input less its last character and the text the input less its first.
struct QuestionAndText {
  std::string question;
  std::string text;
};
QuestionAndText SplitQuestion(std::string_view input);

// QuALITY (lm-eval QuALITY._process_doc) on a doc holding "text" and "outputs": the
// choice block ends at the first blank line after "(D)"; choices are the pieces of
// re.split(r" *\([A-D]\) *", block)[1:] with whitespace runs collapsed; "text" becomes the
// rest, stripped; "gold" the index of the first output among the choices.
absl::Status ExtractQualityChoices(Doc& doc);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_SCROLLS_SCROLLS_DATA_H_
