#include "tasks/cli_options.h"

#include <sys/stat.h>

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/load_model.h"
#include "engine/util/status_macros.h"

namespace hgeval::tasks {

absl::StatusOr<ParsedArgs> ParseArgs(int argc, char** argv, const std::set<std::string>& value_keys,
                                     const std::set<std::string>& flag_keys) {
  ParsedArgs out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", arg, "\""));
    }
    std::string key = arg.substr(2), value;
    const size_t eq = key.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (flag_keys.count(key)) {
      if (has_value && value != "true" && value != "1") {
        if (value == "false" || value == "0") continue;
        return absl::InvalidArgumentError(absl::StrCat("--", key, " takes no value"));
      }
      out.flags.insert(key);
    } else if (value_keys.count(key)) {
      if (!has_value) {
        if (i + 1 >= argc)
          return absl::InvalidArgumentError(absl::StrCat("--", key, " needs a value"));
        value = argv[++i];
      }
      out.values[key] = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option --", key, " (see --help)"));
    }
  }
  return out;
}

namespace {
bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

std::string DefaultDataDir() {
  if (const char* env = std::getenv("HGEVAL_DATA_DIR"); env != nullptr && *env) return env;
#ifdef HGEVAL_SOURCE_DIR
  const std::string compiled = std::string(HGEVAL_SOURCE_DIR) + "/data";
  if (IsDirectory(compiled)) return compiled;
#endif
  return "data";
}

absl::StatusOr<OpenedModel> OpenModelAndTokenizer(const std::string& model_path,
                                                  const std::string& tokenizer_path,
                                                  const std::string& device,
                                                  const std::string& dtype, int threads,
                                                  bool load_tokenizer) {
  OpenedModel out;
  HG_ASSIGN_OR_RETURN(out.checkpoint, OpenModelCheckpoint(model_path));
  LoadOptions options;
  options.device = device;
  options.dtype = dtype;
  options.threads = threads;
  HG_ASSIGN_OR_RETURN(out.model, BuildModel(*out.checkpoint, options));
  if (!load_tokenizer) return out;
  std::string tok = tokenizer_path;
  if (tok.empty()) {
    if (!IsDirectory(model_path)) {  // a llama2.c .bin file
      return absl::InvalidArgumentError("--tokenizer is required for a llama2.c .bin model");
    }
    tok = model_path;
  }
  HG_ASSIGN_OR_RETURN(out.tokenizer, LoadTokenizer(tok));
  return out;
}

}  // namespace hgeval::tasks
