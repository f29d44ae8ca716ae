// Where a model's files are: the one rule of every program that loads a model by path
// (hgeval-server's registry, hgeval-eval), so both load the same folders and files alike.
#ifndef HGEVAL_ENGINE_MODEL_MODEL_LOCATION_H_
#define HGEVAL_ENGINE_MODEL_MODEL_LOCATION_H_

#include <string>

#include "absl/status/statusor.h"

namespace hgeval {

// What OpenModelCheckpoint opens for `path`: a file as given (a llama2.c .bin), a folder
// with config.json (Hugging Face), or the one llama2.c model .bin of a folder (a .bin whose
// name does not start with "tok"). NOT_FOUND otherwise.
absl::StatusOr<std::string> CheckpointPath(const std::string& path);

// The tokenizer's default location for the model at `path`: the model's folder (a file's
// parent folder), where LoadTokenizer finds tokenizer.json, tokenizer.model or tok*.bin.
std::string DefaultTokenizerPath(const std::string& path);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_MODEL_LOCATION_H_
