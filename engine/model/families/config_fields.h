// config.json field readers shared by the families' parsers (engine/model/families/).
#ifndef HGEVAL_ENGINE_MODEL_FAMILIES_CONFIG_FIELDS_H_
#define HGEVAL_ENGINE_MODEL_FAMILIES_CONFIG_FIELDS_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/config.h"
#include "nlohmann/json.hpp"

namespace hgeval::families {

using nlohmann::json;

// Reads an optional field; null or missing gives the default. Wrong types are errors.
template <typename T>
absl::Status Get(const json& config, const char* key, T* out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a boolean"));
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: '", key, "' must be an integer"));
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a number"));
    }
  } else {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a string"));
    }
  }
  *out = it->get<T>();
  return absl::OkStatus();
}

inline absl::Status RequirePositive(const char* what, int64_t value) {
  if (value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: '", what, "' must be positive, got ", value));
  }
  return absl::OkStatus();
}

// fla configs' shared fields: norm_eps (or rms_norm_eps), hidden_ratio / intermediate_size,
// hidden_act, short convolution; refuses what fla's blocks would add (hybrid attention,
// norms without weights).
absl::Status ReadFlaCommon(const json& config, ModelConfig* c);

}  // namespace hgeval::families

#endif  // HGEVAL_ENGINE_MODEL_FAMILIES_CONFIG_FIELDS_H_
