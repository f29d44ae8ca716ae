// Test helpers for kernel tests: a poisoned device array and the relative error of a
// GPU result against a float64 reference.
#ifndef HGEVAL_TESTS_CUDA_DEVICE_VECTOR_H_
#define HGEVAL_TESTS_CUDA_DEVICE_VECTOR_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::cuda {

template <typename T>
class Dev {
 public:
  explicit Dev(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T) + 1), cudaSuccess);
    // Poison: NaN bytes for floats, so unwritten outputs show.
    EXPECT_EQ(cudaMemset(p_, 0xff, n * sizeof(T)), cudaSuccess);
  }
  explicit Dev(const std::vector<T>& host) : Dev(host.size()) { Put(host); }
  Dev(const Dev&) = delete;  // one owner of the allocation
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p_); }
  void Put(const std::vector<T>& host) {
    EXPECT_EQ(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> Get() const {
    std::vector<T> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  T* get() { return p_; }

 private:
  T* p_ = nullptr;
  size_t n_;
};

inline double RelErr(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The bf16 bits of each value rounded to nearest even (the device's __float2bfloat16_rn
// for finite values).
inline std::vector<uint16_t> RoundedBf16Bits(const std::vector<float>& x) {
  std::vector<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], sizeof(u));
    bits[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  return bits;
}

// bf16 bits widened to fp32 (exact).
inline std::vector<float> WidenedBf16(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(&out[i], &u, sizeof(u));
  }
  return out;
}

// Each value rounded to the nearest bf16, held as fp32 (exactly what a kernel widening
// those bf16 bits reads).
inline std::vector<float> RoundedToBf16(const std::vector<float>& x) {
  return WidenedBf16(RoundedBf16Bits(x));
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_TESTS_CUDA_DEVICE_VECTOR_H_
