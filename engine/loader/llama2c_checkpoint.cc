// OpenLlama2cCheckpoint: llama2.c's legacy .bin export as a Hugging Face LLaMA checkpoint.
#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

absl::StatusOr<std::unique_ptr<Checkpoint>> OpenLlama2cCheckpoint(const std::string& bin_path) {
  return absl::UnimplementedError(
      absl::StrCat(bin_path, ": llama2.c checkpoints are not supported yet"));
}

}  // namespace hgeval
