// The Long Range Arena classifiers of the HGRN2 paper (specs/niah-mqar-lra.md C.2): a
// non-causal sequence classifier, not a language model. Encoder (token embedding, or a
// linear map of pixel values), optional fixed sinusoidal positions, pre-norm blocks of a
// bidirectional HGRN2 or HGRN1 token mixer and a GLU, a final norm, mean pooling and a
// linear head (or the two-tower retrieval head). Checkpoint layout: docs/lra.md.
//
// Backends: CPU (engine/cpu/lra_classifier.h) and CUDA (engine/cuda/lra_classifier.h),
// both fp32.
#ifndef HGEVAL_ENGINE_MODEL_LRA_CLASSIFIER_H_
#define HGEVAL_ENGINE_MODEL_LRA_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "nlohmann/json.hpp"

namespace hgeval {

// config.json's model_type for these checkpoints.
inline constexpr char kLraClassifierModelType[] = "lra_classifier";

enum class LraMixer { kHgrn2, kHgrn1 };
enum class LraNorm { kLayer, kBatch };  // batch: eval-mode running statistics
enum class LraHead { kLinear, kRetrieval };

struct LraClassifierConfig {
  LraMixer mixer = LraMixer::kHgrn2;
  bool embedding_encoder = true;  // false: linear encoder over input_channels values
  int64_t vocab_size = 0;         // embedding encoder
  int64_t input_channels = 0;     // linear encoder (1 gray, 3 RGB)
  int64_t hidden_size = 0;        // d
  int64_t num_layers = 0;
  int64_t expand_ratio = 0;  // HGRN2 head size e (heads = d / e)
  int64_t glu_size = 0;      // GLU hidden width (d * glu expand ratio)
  LraNorm norm = LraNorm::kLayer;
  double norm_eps = 1e-5;
  bool mixer_norm = true;  // HGRN2 use_norm: LayerNorm(d) before out_proj
  bool use_lower_bound = true;
  bool positional = false;  // add the sinusoidal table after the encoder
  bool two_d = false;       // four-direction scans over image_height x image_width
  int64_t image_height = 0;
  int64_t image_width = 0;
  LraHead head = LraHead::kLinear;
  int64_t num_classes = 0;
  // Linear encoder: a pixel p (0-255) of channel c enters as (p / 255 - mean[c]) / std[c].
  std::vector<float> input_mean;
  std::vector<float> input_std;
};

// Whether config.json describes an LRA classifier (model_type "lra_classifier").
bool IsLraClassifierConfig(const nlohmann::json& config);
// Parses and validates config.json; InvalidArgument naming the field.
absl::StatusOr<LraClassifierConfig> ParseLraClassifierConfig(const nlohmann::json& config);

// One document: token ids (embedding encoder) or pixel values (linear encoder,
// [positions, input_channels], 0-255). The model sees every position given (pad the
// input to reproduce a padded training batch); the mean pool averages the first
// `pool_length` positions (0: all), what OL's length-aware pooling does for text.
struct LraDocument {
  std::vector<int32_t> tokens;
  std::vector<float> pixels;
  int64_t pool_length = 0;
};

// One example: one document, or two for the retrieval head.
struct LraInput {
  std::vector<LraDocument> documents;
};

class LraClassifier {
 public:
  virtual ~LraClassifier() = default;
  virtual const LraClassifierConfig& config() const = 0;
  virtual int64_t num_parameters() const = 0;
  // Where it runs: "cpu" or "cuda:N".
  virtual std::string backend() const = 0;
  // logits->at(i) gets num_classes logits for inputs[i]. An example's logits never depend
  // on the other examples. InvalidArgument naming the example for bad inputs (token id
  // out of range, pixel count not a multiple of input_channels, a 2-D input whose length
  // is not height x width, the wrong number of documents, pool_length out of range).
  virtual absl::Status Classify(absl::Span<const LraInput> inputs,
                                std::vector<std::vector<float>>* logits) const = 0;
};

// The checks Classify makes before computing anything (the rules above), the same on every
// backend: InvalidArgument naming the example.
absl::Status ValidateLraInputs(const LraClassifierConfig& config,
                               absl::Span<const LraInput> inputs);
// A document's positions: its tokens, or its pixel values / input_channels.
int64_t LraPositions(const LraClassifierConfig& config, const LraDocument& doc);
// The linear encoder's input: pixel value p of channel c as (p / 255 - mean[c]) / std[c].
std::vector<float> NormalisedLraPixels(const LraClassifierConfig& config,
                                       absl::Span<const float> pixels);

// Builds the classifier from an open checkpoint on options.device: "cpu", or "cuda" /
// "cuda:N" (FailedPrecondition when this build has no CUDA backend or no GPU is visible).
// options.dtype must be fp32 (both backends compute in fp32). Defined in
// lra_classifier_load.cc, which the engine builds with its backends.
absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(const Checkpoint& checkpoint,
                                                                  const LoadOptions& options);
// Opens the checkpoint folder (config.json + model.safetensors) and builds it.
absl::StatusOr<std::unique_ptr<LraClassifier>> LoadLraClassifier(const std::string& dir,
                                                                 const LoadOptions& options);

// The predicted class: the argmax of the logits, the lowest class on ties; -1 when empty.
int32_t PredictedClass(absl::Span<const float> logits);

// "lra_hgrn2" or "lra_hgrn1": the family name reported for these checkpoints.
std::string LraFamilyName(const LraClassifierConfig& config);

// The sinusoidal position table entry (OL's PositionalEncoder: sin at even channels, cos
// at odd, frequency 10000^(-2i/d)), computed in double and rounded to float.
float LraSinusoid(int64_t position, int64_t channel, int64_t hidden_size);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LRA_CLASSIFIER_H_
