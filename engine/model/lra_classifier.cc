#include "engine/model/lra_classifier.h"

#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace hgeval {
namespace {

using json = nlohmann::json;

// Reads an optional field of the JSON type of *out; InvalidArgument naming it otherwise.
template <typename T>
absl::Status Field(const json& config, const char* key, T* out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  try {
    if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) throw json::type_error::create(302, "not a boolean", nullptr);
    } else if constexpr (std::is_integral_v<T>) {
      if (!it->is_number_integer()) throw json::type_error::create(302, "not an integer", nullptr);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!it->is_number()) throw json::type_error::create(302, "not a number", nullptr);
    }
    *out = it->get<T>();
  } catch (const json::exception&) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: '", key, "' has the wrong type (", it->dump(), ")"));
  }
  return absl::OkStatus();
}

absl::Status Positive(const char* key, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: '", key, "' must be positive, got ", value));
}

absl::Status OneOf(const char* key, const std::string& value,
                   std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return absl::OkStatus();
  }
  std::string list;
  for (const char* a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: '", key, "' must be one of ", list, ", got '", value, "'"));
}

}  // namespace

bool IsLraClassifierConfig(const json& config) {
  return config.is_object() && config.value("model_type", json()).is_string() &&
         config["model_type"].get<std::string>() == kLraClassifierModelType;
}

absl::StatusOr<LraClassifierConfig> ParseLraClassifierConfig(const json& config) {
  if (!IsLraClassifierConfig(config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: model_type must be '", kLraClassifierModelType, "'"));
  }
  LraClassifierConfig c;
  std::string mixer = "hgrn2", encoder = "embedding", norm = "layer", scan = "1d", head = "linear";
  int64_t glu_expand_ratio = 1;
  absl::Status s;
  for (absl::Status field : {Field(config, "mixer", &mixer),
                             Field(config, "encoder", &encoder),
                             Field(config, "norm", &norm),
                             Field(config, "scan", &scan),
                             Field(config, "head", &head),
                             Field(config, "vocab_size", &c.vocab_size),
                             Field(config, "input_channels", &c.input_channels),
                             Field(config, "hidden_size", &c.hidden_size),
                             Field(config, "num_layers", &c.num_layers),
                             Field(config, "expand_ratio", &c.expand_ratio),
                             Field(config, "glu_expand_ratio", &glu_expand_ratio),
                             Field(config, "norm_eps", &c.norm_eps),
                             Field(config, "mixer_norm", &c.mixer_norm),
                             Field(config, "use_lower_bound", &c.use_lower_bound),
                             Field(config, "positional", &c.positional),
                             Field(config, "image_height", &c.image_height),
                             Field(config, "image_width", &c.image_width),
                             Field(config, "num_classes", &c.num_classes),
                             Field(config, "input_mean", &c.input_mean),
                             Field(config, "input_std", &c.input_std)}) {
    if (!field.ok()) return field;
  }
  for (absl::Status check :
       {OneOf("mixer", mixer, {"hgrn2", "hgrn1"}),
        OneOf("encoder", encoder, {"embedding", "linear"}), OneOf("norm", norm, {"layer", "batch"}),
        OneOf("scan", scan, {"1d", "2d"}), OneOf("head", head, {"linear", "retrieval"}),
        Positive("hidden_size", c.hidden_size), Positive("num_layers", c.num_layers),
        Positive("glu_expand_ratio", glu_expand_ratio), Positive("num_classes", c.num_classes)}) {
    if (!check.ok()) return check;
  }
  c.mixer = mixer == "hgrn2" ? LraMixer::kHgrn2 : LraMixer::kHgrn1;
  c.embedding_encoder = encoder == "embedding";
  c.norm = norm == "layer" ? LraNorm::kLayer : LraNorm::kBatch;
  c.two_d = scan == "2d";
  c.head = head == "linear" ? LraHead::kLinear : LraHead::kRetrieval;
  c.glu_size = c.hidden_size * glu_expand_ratio;
  if (c.hidden_size > (1 << 16) || c.num_layers > 1024 || c.glu_size > (1 << 18) ||
      c.num_classes > (1 << 16)) {
    return absl::InvalidArgumentError(
        "config.json: hidden_size, num_layers, glu_expand_ratio or num_classes is implausibly "
        "large");
  }
  if (!(c.norm_eps > 0.0) || !std::isfinite(c.norm_eps)) {
    return absl::InvalidArgumentError("config.json: 'norm_eps' must be a positive number");
  }
  if (c.embedding_encoder) {
    if (absl::Status p = Positive("vocab_size", c.vocab_size); !p.ok()) return p;
    if (c.vocab_size > (1 << 24)) {
      return absl::InvalidArgumentError("config.json: 'vocab_size' is implausibly large");
    }
  } else {
    if (absl::Status p = Positive("input_channels", c.input_channels); !p.ok()) return p;
    if (c.input_channels > 64) {
      return absl::InvalidArgumentError("config.json: 'input_channels' must be at most 64");
    }
    if (c.input_mean.empty()) c.input_mean.assign(c.input_channels, 0.0f);
    if (c.input_std.empty()) c.input_std.assign(c.input_channels, 1.0f);
    if (static_cast<int64_t>(c.input_mean.size()) != c.input_channels ||
        static_cast<int64_t>(c.input_std.size()) != c.input_channels) {
      return absl::InvalidArgumentError(
          "config.json: 'input_mean' and 'input_std' need one value per input channel");
    }
    for (float v : c.input_std) {
      if (!(v > 0.0f) || !std::isfinite(v)) {
        return absl::InvalidArgumentError("config.json: 'input_std' values must be positive");
      }
    }
  }
  if (c.mixer == LraMixer::kHgrn2) {
    if (absl::Status p = Positive("expand_ratio", c.expand_ratio); !p.ok()) return p;
    if (c.hidden_size % c.expand_ratio != 0) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: hidden_size ", c.hidden_size,
                                                     " is not a multiple of expand_ratio ",
                                                     c.expand_ratio));
    }
  }
  if (c.two_d) {
    for (absl::Status p :
         {Positive("image_height", c.image_height), Positive("image_width", c.image_width)}) {
      if (!p.ok()) return p;
    }
    if (c.image_height > (1 << 12) || c.image_width > (1 << 12)) {
      return absl::InvalidArgumentError("config.json: image sides must be at most 4096");
    }
  }
  return c;
}

int32_t PredictedClass(absl::Span<const float> logits) {
  int32_t best = logits.empty() ? -1 : 0;
  for (size_t k = 1; k < logits.size(); ++k) {
    if (logits[k] > logits[best]) best = static_cast<int32_t>(k);
  }
  return best;
}

std::string LraFamilyName(const LraClassifierConfig& config) {
  return config.mixer == LraMixer::kHgrn2 ? "lra_hgrn2" : "lra_hgrn1";
}

float LraSinusoid(int64_t position, int64_t channel, int64_t hidden_size) {
  const int64_t pair = channel / 2 * 2;
  const double frequency = std::exp(static_cast<double>(pair) * (-std::log(10000.0) / hidden_size));
  const double angle = static_cast<double>(position) * frequency;
  return static_cast<float>(channel % 2 == 0 ? std::sin(angle) : std::cos(angle));
}

int64_t LraPositions(const LraClassifierConfig& config, const LraDocument& doc) {
  return config.embedding_encoder ? static_cast<int64_t>(doc.tokens.size())
                                  : static_cast<int64_t>(doc.pixels.size()) / config.input_channels;
}

std::vector<float> NormalisedLraPixels(const LraClassifierConfig& config,
                                       absl::Span<const float> pixels) {
  const int64_t channels = config.input_channels;
  std::vector<float> normalised(pixels.size());
  for (size_t i = 0; i < normalised.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) % channels;
    normalised[i] = (pixels[i] / 255.0f - config.input_mean[c]) / config.input_std[c];
  }
  return normalised;
}

namespace {

absl::Status ValidateDocument(const LraClassifierConfig& config, const LraDocument& doc, size_t i) {
  const std::string where = absl::StrCat("input ", i, ": ");
  if (config.embedding_encoder) {
    if (!doc.pixels.empty())
      return absl::InvalidArgumentError(where + "the model takes tokens, not pixels");
    for (int32_t token : doc.tokens) {
      if (token < 0 || token >= config.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "token id ", token, " outside the vocabulary of ", config.vocab_size));
      }
    }
  } else {
    if (!doc.tokens.empty())
      return absl::InvalidArgumentError(where + "the model takes pixels, not tokens");
    if (doc.pixels.size() % config.input_channels != 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, doc.pixels.size(),
                                                     " pixel values are not a multiple of ",
                                                     config.input_channels, " channels"));
    }
    for (float p : doc.pixels) {
      if (!std::isfinite(p))
        return absl::InvalidArgumentError(where + "a pixel value is not finite");
    }
  }
  const int64_t positions = LraPositions(config, doc);
  if (positions == 0) return absl::InvalidArgumentError(where + "empty input");
  if (config.two_d && positions != config.image_height * config.image_width) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, positions, " positions, but the model scans ", config.image_height, "x",
                     config.image_width, " images"));
  }
  if (doc.pool_length < 0 || doc.pool_length > positions) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "pool_length ", doc.pool_length, " outside [0, ", positions, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateLraInputs(const LraClassifierConfig& config,
                               absl::Span<const LraInput> inputs) {
  const size_t documents = config.head == LraHead::kRetrieval ? 2 : 1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].documents.size() != documents) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, ": the model takes ", documents,
                                                     " document(s) per example, got ",
                                                     inputs[i].documents.size()));
    }
    for (const LraDocument& doc : inputs[i].documents) {
      if (absl::Status s = ValidateDocument(config, doc, i); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace hgeval
