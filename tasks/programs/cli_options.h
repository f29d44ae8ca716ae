// What the in-process task tools (hgeval-eval, the tasks benchmark) share besides their
// flags (engine/cli): the default data folder and opening a model with its tokenizer.
#ifndef HGEVAL_TASKS_PROGRAMS_CLI_OPTIONS_H_
#define HGEVAL_TASKS_PROGRAMS_CLI_OPTIONS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval::tasks {

// The repository's data/ folder: $HGEVAL_DATA_DIR, else the compiled-in source folder's
// data/ when it exists, else "data".
std::string DefaultDataDir();

// A model with the checkpoint it came from (for its content hash).
struct OpenedModel {
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Opens the model at `model_path` as the server does (engine/model/model_location.h: a
// Hugging Face folder, a llama2.c .bin, or a folder holding one), builds it with
// `options`, and loads the tokenizer (`tokenizer_path`, or the model folder's own when
// empty) unless `load_tokenizer` is false (then `tokenizer` stays null).
absl::StatusOr<OpenedModel> OpenModelAndTokenizer(const std::string& model_path,
                                                  const std::string& tokenizer_path,
                                                  const LoadOptions& options,
                                                  bool load_tokenizer = true);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_PROGRAMS_CLI_OPTIONS_H_
