// Eight-lane float vectors for the CPU kernels (GCC vector extensions). Every helper is
// plain IEEE arithmetic in a fixed order, so a kernel gives the same bits whichever
// instruction set its caller was compiled for (default, AVX2 or AVX-512 clones): the
// engine is built with -ffp-contract=off, so no multiply-add is ever fused.
// Callers that want a wider instruction set are marked with HGEVAL_CPU_CLONES and inline
// these helpers into each clone.
#ifndef HGEVAL_ENGINE_CPU_VEC8_H_
#define HGEVAL_ENGINE_CPU_VEC8_H_

#include <cstdint>
#include <cstring>

namespace hgeval::cpu {

typedef float V8 __attribute__((vector_size(32)));
typedef int32_t V8i __attribute__((vector_size(32)));

// One function body per instruction set, picked once at load time by the CPU's features
// (GCC function multi-versioning): AVX-512, AVX2, or the generic x86-64 build. Clang
// refuses 32-byte vectors passed between a clone and these (untargeted) helpers, so a
// Clang build (the fuzzing one) keeps the generic body alone: same bits, slower.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HGEVAL_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define HGEVAL_CPU_CLONES
#endif

#define HGEVAL_VEC8_INLINE __attribute__((always_inline)) inline

HGEVAL_VEC8_INLINE V8 Splat8(float v) { return V8{v, v, v, v, v, v, v, v}; }

HGEVAL_VEC8_INLINE V8 Load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof(V8));
  return v;
}

// The first n (< 8) floats at p, the other lanes zero.
HGEVAL_VEC8_INLINE V8 LoadPartial8(const float* p, int64_t n) {
  V8 v = Splat8(0.0f);
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(float));
  return v;
}

HGEVAL_VEC8_INLINE void Store8(float* p, V8 v) { std::memcpy(p, &v, sizeof(V8)); }

// Lane-wise sums of neighbours within each 128-bit half, as x86's haddps:
// [a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7].
HGEVAL_VEC8_INLINE V8 PairSums(V8 a, V8 b) {
  return __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14) +
         __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
}

// The horizontal sum of each of eight vectors, element i from acc[i], every one reduced as
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) (HorizontalSum8's order).
HGEVAL_VEC8_INLINE V8 TransposedSums8(const V8 acc[8]) {
  const V8 q0123 = PairSums(PairSums(acc[0], acc[1]), PairSums(acc[2], acc[3]));
  const V8 q4567 = PairSums(PairSums(acc[4], acc[5]), PairSums(acc[6], acc[7]));
  // q0123 = [s0lo, s1lo, s2lo, s3lo, s0hi, s1hi, s2hi, s3hi]; add the halves.
  return __builtin_shufflevector(q0123, q4567, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(q0123, q4567, 4, 5, 6, 7, 12, 13, 14, 15);
}

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
HGEVAL_VEC8_INLINE float HorizontalSum8(V8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

HGEVAL_VEC8_INLINE float HorizontalMax8(V8 v) {
  float m = v[0];
  for (int i = 1; i < 8; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

HGEVAL_VEC8_INLINE V8 Max8(V8 a, V8 b) { return a > b ? a : b; }

// exp(x) per lane (Cephes' expf: range reduction by ln 2 in two parts, degree-5
// polynomial; within 2 ulp of exp). Lanes below -87.3 (where exp underflows to denormals)
// and -inf give 0; the softmax that uses it never sees larger inputs than 0.
HGEVAL_VEC8_INLINE V8 Exp8(V8 x) {
  const V8i underflow = x < Splat8(-87.3f);
  x = Max8(x, Splat8(-87.3f));
  x = x > Splat8(88.3f) ? Splat8(88.3f) : x;
  // n = floor(x / ln 2 + 0.5)
  const V8 t = x * Splat8(1.44269504088896341f) + Splat8(0.5f);
  V8 n = __builtin_convertvector(__builtin_convertvector(t, V8i), V8);
  n = n > t ? n - Splat8(1.0f) : n;
  const V8 r = (x - n * Splat8(0.693359375f)) - n * Splat8(-2.12194440e-4f);
  V8 p = Splat8(1.9875691500e-4f);
  p = p * r + Splat8(1.3981999507e-3f);
  p = p * r + Splat8(8.3334519073e-3f);
  p = p * r + Splat8(4.1665795894e-2f);
  p = p * r + Splat8(1.6666665459e-1f);
  p = p * r + Splat8(5.0000001201e-1f);
  p = (p * (r * r) + r) + Splat8(1.0f);
  // 2^n through the exponent bits.
  const V8i bits = (__builtin_convertvector(n, V8i) + 127) << 23;
  V8 scale;
  std::memcpy(&scale, &bits, sizeof(V8));
  const V8 result = p * scale;
  return underflow ? Splat8(0.0f) : result;
}

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_VEC8_H_
