#include "engine/cpu/fla_block.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cpu/ops.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {

absl::StatusOr<HostTensor> ReadTensor(const Checkpoint& checkpoint, const std::string& name,
                                      std::vector<int64_t> shape) {
  return checkpoint.ReadFloat(name, shape);
}

absl::StatusOr<ShortConv> ShortConv::Read(const Checkpoint& checkpoint, const std::string& prefix,
                                          int64_t channels, int64_t kernel, bool silu) {
  if (kernel < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: conv_size must be positive, got ", kernel));
  }
  ShortConv conv;
  conv.channels_ = channels;
  conv.kernel_ = kernel;
  conv.silu_ = silu;
  HG_ASSIGN_OR_RETURN(HostTensor weight,
                      ReadTensor(checkpoint, prefix + ".weight", {channels, 1, kernel}));
  conv.weight_ = std::move(weight.data);
  if (checkpoint.Has(prefix + ".bias")) {
    HG_ASSIGN_OR_RETURN(HostTensor bias, ReadTensor(checkpoint, prefix + ".bias", {channels}));
    conv.bias_ = std::move(bias.data);
  }
  return conv;
}

ShortConv::ShortConv(HostTensor weight, HostTensor bias, bool silu)
    : channels_(weight.shape[0]),
      kernel_(weight.shape[2]),
      silu_(silu),
      weight_(std::move(weight.data)),
      bias_(std::move(bias.data)) {}

int64_t ShortConv::num_parameters() const {
  return static_cast<int64_t>(weight_.size() + bias_.size());
}

std::vector<float> ShortConv::NewWindow() const {
  return std::vector<float>(static_cast<size_t>((kernel_ - 1) * channels_), 0.0f);
}

MixerState NewMixerState(int64_t recurrent_floats, const std::vector<ShortConv>& convs) {
  MixerState state;
  state.recurrent.assign(static_cast<size_t>(recurrent_floats), 0.0f);
  for (const ShortConv& conv : convs) state.conv.push_back(conv.NewWindow());
  return state;
}

int64_t ShortConvParameters(const std::vector<ShortConv>& convs) {
  int64_t n = 0;
  for (const ShortConv& conv : convs) n += conv.num_parameters();
  return n;
}

void ShortConv::Apply(float* x, int64_t t_len, std::vector<float>* window) const {
  const int64_t c_len = channels_;
  const int64_t past = kernel_ - 1;
  // Inputs in time order: the window's K-1 rows, then x's T rows.
  std::vector<float> in(static_cast<size_t>((past + t_len) * c_len));
  std::copy(window->begin(), window->end(), in.begin());
  std::copy_n(x, t_len * c_len, in.begin() + past * c_len);
  for (int64_t t = 0; t < t_len; ++t) {
    float* y = x + t * c_len;
    for (int64_t c = 0; c < c_len; ++c) {
      // Cross-correlation as torch's conv1d: y[t] = sum_j w[j] * in[t + j] (in is offset by
      // K-1, so in[t + K-1] is the current token).
      float acc = bias_.empty() ? 0.0f : bias_[c];
      const float* w = weight_.data() + c * kernel_;
      for (int64_t j = 0; j < kernel_; ++j) acc += w[j] * in[(t + j) * c_len + c];
      y[c] = silu_ ? Silu(acc) : acc;
    }
  }
  std::copy_n(in.begin() + t_len * c_len, past * c_len, window->begin());
}

}  // namespace hgeval::cpu
