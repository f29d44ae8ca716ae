// The one tensor-core instruction the hand-written bf16 kernels use (chunkwise GLA,
// the decode GEMM), with PTX's fragment layout.
#ifndef HGEVAL_ENGINE_CUDA_MMA_CUH_
#define HGEVAL_ENGINE_CUDA_MMA_CUH_

#include <cstdint>

namespace hgeval::cuda {

// d += a b: a 16x16 row-major (registers as PTX's m16n8k16 A fragment), b 16x8 (B
// fragment), d 16x8 fp32 (C fragment). lane = 4 * group + tig: a0,a1 = (group, 2 tig + 0/1),
// a2,a3 = (group + 8, ..), a4..a7 the same at columns + 8; b0,b1 = (2 tig + 0/1, group),
// b2,b3 at rows + 8; c0,c1 = (group, 2 tig + 0/1), c2,c3 = (group + 8, ..).
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_MMA_CUH_
