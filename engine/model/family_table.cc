#include "engine/model/family_table.h"

#include <cstdlib>
#include <string>

namespace hgeval {
namespace families {

// Each family's entry, defined in engine/model/families/<family>.cc.
const FamilySpec& Hgrn2();
const FamilySpec& Hgrn1();
const FamilySpec& Gla();
const FamilySpec& Llama();
const FamilySpec& Mamba();
const FamilySpec& Tnl();

}  // namespace families

absl::Span<const FamilySpec* const> AllFamilies() {
  // HGRN2 before HGRN: "HGRN2..." architectures also start with "HGRN".
  static const FamilySpec* const kFamilies[] = {&families::Hgrn2(), &families::Hgrn1(),
                                                &families::Gla(),   &families::Llama(),
                                                &families::Mamba(), &families::Tnl()};
  return kFamilies;
}

const FamilySpec& FamilySpecOf(ModelFamily family) {
  for (const FamilySpec* spec : AllFamilies()) {
    if (spec->family == family) return *spec;
  }
  std::abort();  // every ModelFamily value has an entry (family_table_test)
}

const FamilySpec* FindFamilyByModelType(std::string_view model_type) {
  for (const FamilySpec* spec : AllFamilies()) {
    for (std::string_view type : spec->model_types) {
      if (type == model_type) return spec;
    }
  }
  return nullptr;
}

const FamilySpec* FindFamilyByName(std::string_view name) {
  for (const FamilySpec* spec : AllFamilies()) {
    if (spec->name == name) return spec;
  }
  return nullptr;
}

int64_t StateValuesPerSequence(const ModelConfig& c) {
  const FamilySpec& spec = FamilySpecOf(c.family);
  return spec.state_values_per_sequence == nullptr ? 0 : spec.state_values_per_sequence(c);
}

int64_t StateValuesPerToken(const ModelConfig& c) {
  const FamilySpec& spec = FamilySpecOf(c.family);
  return spec.state_values_per_token == nullptr ? 0 : spec.state_values_per_token(c);
}

std::string SupportedModelTypes() {
  std::string types;
  for (const FamilySpec* spec : AllFamilies()) {
    for (std::string_view type : spec->model_types) {
      if (!types.empty()) types += ", ";
      types += type;
    }
  }
  return types;
}

}  // namespace hgeval
