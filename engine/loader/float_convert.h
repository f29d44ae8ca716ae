// Conversions between float32 and the 16-bit float formats stored in checkpoints.
// All exact where the value is representable; float32 -> 16-bit rounds to nearest even.
#ifndef HGEVAL_ENGINE_LOADER_FLOAT_CONVERT_H_
#define HGEVAL_ENGINE_LOADER_FLOAT_CONVERT_H_

#include <bit>
#include <cstdint>

namespace hgeval {

inline float Bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t FloatToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign, force a quiet NaN
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float F16ToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) {  // inf (mantissa 0) or NaN (payload kept)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t FloatToF16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (magnitude == 0x7f800000u) return sign | 0x7c00u;  // inf
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent > 15) return sign | 0x7c00u;  // overflows to inf
  if (exponent >= -14) {
    // Normal half: drop 13 mantissa bits with round-to-nearest-even; a carry out of the
    // mantissa correctly bumps the exponent (up to inf).
    const uint32_t shifted =
        ((static_cast<uint32_t>(exponent + 15) << 23) | (magnitude & 0x7fffffu)) >> 13;
    const uint32_t remainder = magnitude & 0x1fffu;
    uint32_t half = shifted;
    if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal half (unit 2^-24): value = m * 2^(exponent - 23) with the implicit bit,
  // so the half mantissa is m >> (-exponent - 1), rounded to nearest even.
  const int shift = -exponent - 1;  // 14 .. for exponent <= -15
  if (shift > 24) return sign;      // below half of the smallest subnormal
  const uint32_t m = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t q = m >> shift;
  const uint32_t remainder = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_FLOAT_CONVERT_H_
