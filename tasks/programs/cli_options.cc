#include "tasks/programs/cli_options.h"

#include <sys/stat.h>

#include <cstdlib>

#include "absl/status/status.h"
#include "engine/model/load_model.h"
#include "engine/model/model_location.h"
#include "engine/util/status_macros.h"

namespace hgeval::tasks {

namespace {
bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

std::string DefaultDataDir() {
  if (const char* env = std::getenv("HGEVAL_DATA_DIR"); env != nullptr && *env) return env;
#ifdef HGEVAL_SOURCE_DIR
  std::string compiled = std::string(HGEVAL_SOURCE_DIR) + "/data";
  if (IsDirectory(compiled)) return compiled;
#endif
  return "data";
}

absl::StatusOr<OpenedModel> OpenModelAndTokenizer(const std::string& model_path,
                                                  const std::string& tokenizer_path,
                                                  const LoadOptions& options, bool load_tokenizer) {
  OpenedModel out;
  // The server's loading rule (engine/model/model_location.h).
  HG_ASSIGN_OR_RETURN(const std::string checkpoint_path, CheckpointPath(model_path));
  HG_ASSIGN_OR_RETURN(out.checkpoint, OpenModelCheckpoint(checkpoint_path));
  HG_ASSIGN_OR_RETURN(out.model, BuildModel(*out.checkpoint, options));
  if (!load_tokenizer) return out;
  const std::string tok =
      tokenizer_path.empty() ? DefaultTokenizerPath(model_path) : tokenizer_path;
  HG_ASSIGN_OR_RETURN(out.tokenizer, LoadTokenizer(tok));
  return out;
}

}  // namespace hgeval::tasks
