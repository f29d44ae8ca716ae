// Device arrays for the CUDA kernel tests: a cudaMalloc'd copy of a host vector, poisoned
// with NaN bytes when made empty (so unwritten outputs show), read back whole.
#ifndef HGEVAL_TESTS_CUDA_DEV_ARRAY_H_
#define HGEVAL_TESTS_CUDA_DEV_ARRAY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
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

}  // namespace hgeval::cuda

#endif  // HGEVAL_TESTS_CUDA_DEV_ARRAY_H_
