// Command-line parsing shared by hgeval-eval and the tasks benchmark: --key=value or
// --key value, boolean --flag, --help.
#ifndef HGEVAL_TASKS_CLI_OPTIONS_H_
#define HGEVAL_TASKS_CLI_OPTIONS_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval::tasks {

struct ParsedArgs {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  bool help = false;

  std::string Get(const std::string& key, const std::string& fallback = "") const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  bool Has(const std::string& key) const { return flags.count(key) > 0; }
};

// `value_keys` take a value; `flag_keys` do not. Unknown options are errors.
absl::StatusOr<ParsedArgs> ParseArgs(int argc, char** argv, const std::set<std::string>& value_keys,
                                     const std::set<std::string>& flag_keys);

// The repository's data/ folder: $HGEVAL_DATA_DIR, else the compiled-in source folder's
// data/ when it exists, else "data".
std::string DefaultDataDir();

// A model with the checkpoint it came from (for its content hash).
struct OpenedModel {
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Opens a Hugging Face folder or a llama2.c .bin, builds it on `device`, and loads the
// tokenizer (`tokenizer_path`, or the model folder's own when empty) unless
// `load_tokenizer` is false (then `tokenizer` stays null).
absl::StatusOr<OpenedModel> OpenModelAndTokenizer(const std::string& model_path,
                                                  const std::string& tokenizer_path,
                                                  const std::string& device,
                                                  const std::string& dtype, int threads,
                                                  bool load_tokenizer = true);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_CLI_OPTIONS_H_
