// Each family's table entry, defined in its own file here (family_table.cc lists them).
#ifndef HGEVAL_ENGINE_MODEL_FAMILIES_FAMILIES_H_
#define HGEVAL_ENGINE_MODEL_FAMILIES_FAMILIES_H_

#include "engine/model/family_table.h"

namespace hgeval::families {

const FamilySpec& Hgrn2();
const FamilySpec& Hgrn1();
const FamilySpec& Gla();
const FamilySpec& Llama();
const FamilySpec& Mamba();
const FamilySpec& Tnl();

}  // namespace hgeval::families

#endif  // HGEVAL_ENGINE_MODEL_FAMILIES_FAMILIES_H_
