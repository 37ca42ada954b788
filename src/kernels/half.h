// IEEE 754 half precision and bfloat16 <-> float, bit-exact and portable
// (no reliance on _Float16 or F16C, which the SIMD paths use instead).
#pragma once

#include <cstdint>
#include <cstring>

namespace quip::kernels {

inline float f32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t bits_from_f32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Half -> float, exact for every one of the 65536 patterns (subnormals, inf, NaN).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000 | (mant << 13));  // inf, NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);  // +-0
  // Subnormal: normalize.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400) == 0);
  return f32_from_bits(sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3FF) << 13));
}

// Float -> half, rounding to nearest even; overflow to infinity, NaN kept NaN.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_from_f32(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);   // NaN
  if (abs >= 0x47800000) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65536: inf
  if (abs < 0x38800000) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000) return static_cast<uint16_t>(sign);  // rounds to zero
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t half = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs >> 13) - (112 << 10));
  const uint32_t rest = abs & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into inf: correct
  return static_cast<uint16_t>(sign | half);
}

// v rounded to the nearest half-precision value, as a float.
inline float round_f16(float v) {
  return f16_to_f32(f32_to_f16(v));
}

inline float bf16_to_f32(uint16_t b) {
  return f32_from_bits(static_cast<uint32_t>(b) << 16);
}

}  // namespace quip::kernels
