// Real models and tokenizers for the tasks tests: the golden checkpoints (vocab 512)
// paired with stories260K's tok512 tokenizer, and stories260K itself.
#ifndef HGEVAL_TESTS_TASKS_MODEL_FIXTURES_H_
#define HGEVAL_TESTS_TASKS_MODEL_FIXTURES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/cpu/cpu_models.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/status_macros.h"
#include "tests/support/paths.h"

namespace hgeval::testing {

struct LoadedModel {
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Model> model;
};

// Builds a CPU model straight from a checkpoint ("hgrn2", "llama" golden folders, or
// "stories260K").
inline absl::StatusOr<LoadedModel> LoadFixtureModel(const std::string& which) {
  LoadedModel out;
  if (which == "stories260K") {
    HG_ASSIGN_OR_RETURN(out.checkpoint, OpenLlama2cCheckpoint(
                                            SourcePath("data/models/stories260K/stories260K.bin")));
  } else {
    HG_ASSIGN_OR_RETURN(out.checkpoint, OpenCheckpoint(SourcePath("tests/golden/" + which)));
  }
  HG_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(out.checkpoint->config()));
  switch (config.family) {
    case ModelFamily::kHgrn2: {
      HG_ASSIGN_OR_RETURN(out.model, cpu::BuildHgrn2(*out.checkpoint, config));
      break;
    }
    case ModelFamily::kLlama: {
      HG_ASSIGN_OR_RETURN(out.model, cpu::BuildLlama(*out.checkpoint, config));
      break;
    }
    default:
      return absl::UnimplementedError("fixture family not built here: " + which);
  }
  return out;
}

inline absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTok512() {
  return LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
}

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_TASKS_MODEL_FIXTURES_H_
