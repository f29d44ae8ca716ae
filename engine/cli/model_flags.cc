#include "engine/cli/model_flags.h"

#include "absl/flags/flag.h"
#include "absl/status/status.h"

ABSL_FLAG(std::string, model, "",
          "Model: a Hugging Face checkpoint folder, a llama2.c .bin file, or a folder holding "
          "one llama2.c model .bin (as the server loads it).");
ABSL_FLAG(std::string, tokenizer, "",
          "Tokenizer file or folder (tokenizer.json, tokenizer.model, *.tiktoken, tok*.bin); "
          "default: the one in the model's folder.");

namespace hgeval::cli {

absl::StatusOr<std::string> ModelPathFromFlags() {
  std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return absl::InvalidArgumentError("--model is required");
  return model;
}

}  // namespace hgeval::cli
