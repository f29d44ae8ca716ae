#include "engine/cpu/rope.h"

#include <cmath>

namespace hgeval::cpu {

Rope::Rope(int64_t head_dim, double theta) : head_dim_(head_dim), inv_freq_(head_dim / 2) {
  // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), all in fp32.
  const float base = static_cast<float>(theta);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq_[i] = 1.0f / std::pow(base, exponent);
  }
}

void Rope::Tables(int64_t first, int64_t count, std::vector<float>* cos,
                  std::vector<float>* sin) const {
  const int64_t half = head_dim_ / 2;
  cos->resize(count * half);
  sin->resize(count * half);
  for (int64_t r = 0; r < count; ++r) {
    const float pos = static_cast<float>(first + r);
    for (int64_t i = 0; i < half; ++i) {
      // The fp32 angle, then cos/sin evaluated accurately and rounded once.
      const float angle = pos * inv_freq_[i];
      (*cos)[r * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      (*sin)[r * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
}

void Rope::Apply(float* x, int64_t rows, int64_t heads, int64_t stride,
                 const std::vector<float>& cos, const std::vector<float>& sin) const {
  const int64_t half = head_dim_ / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* c = cos.data() + r * half;
    const float* s = sin.data() + r * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* x0 = x + r * stride + h * head_dim_;
      float* x1 = x0 + half;
      for (int64_t i = 0; i < half; ++i) {
        const float a = x0[i];
        const float b = x1[i];
        // q*cos + rotate_half(q)*sin with rotate_half(q) = cat(-x1, x0).
        x0[i] = a * c[i] - b * s[i];
        x1[i] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace hgeval::cpu
