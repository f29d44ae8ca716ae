#include "engine/cpu/cpu_models.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/model/family_table.h"

namespace hgeval::cpu {
namespace {

struct CpuBuilder {
  std::string_view family_name;  // FamilySpec::name
  absl::StatusOr<std::unique_ptr<Model>> (*build)(const Checkpoint& ckpt, const ModelConfig& c,
                                                  int64_t max_context);
};

// The recurrent families have no positional limit, so only LLaMA reads max_context.
constexpr CpuBuilder kCpuBuilders[] = {
    {"hgrn2",
     [](const Checkpoint& ckpt, const ModelConfig& c, int64_t) { return BuildHgrn2(ckpt, c); }},
    {"hgrn",
     [](const Checkpoint& ckpt, const ModelConfig& c, int64_t) { return BuildHgrn(ckpt, c); }},
    {"gla",
     [](const Checkpoint& ckpt, const ModelConfig& c, int64_t) { return BuildGla(ckpt, c); }},
    {"llama", BuildLlama},
    {"mamba",
     [](const Checkpoint& ckpt, const ModelConfig& c, int64_t) { return BuildMamba(ckpt, c); }},
    {"tnl",
     [](const Checkpoint& ckpt, const ModelConfig& c, int64_t) { return BuildTnl(ckpt, c); }},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildCpuModel(const Checkpoint& ckpt, const ModelConfig& c,
                                                     int64_t max_context) {
  const CpuBuilder* builder = FindBackendEntry<CpuBuilder>(kCpuBuilders, c.family);
  if (builder == nullptr) {
    return absl::InternalError(
        absl::StrCat("no CPU builder for model family ", std::string(ModelFamilyName(c.family))));
  }
  return builder->build(ckpt, c, max_context);
}

}  // namespace hgeval::cpu
