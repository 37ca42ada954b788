// SwiGLU's activation, silu(gate) * up, in the arithmetic of ggml's
// ggml_vec_swiglu_f32 on AVX-512: SiLU (Elfwing et al. 2017) as
// x / (1 + exp(-x)) with exp from ggml_v_expf, a polynomial that differs from
// libm's expf in the last bits (which the test models notice). The scalar
// functions here are the reference; swiglu_function(isa) gives the SIMD
// version, which computes the same values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/dot.h"

namespace quip::kernels {

// exp(x) as ggml_v_expf (after ARM's optimized routines): n = round(x /
// ln 2) by the 1.5 * 2^23 shifter, b = x - n ln 2 in two fma steps (ln 2
// split in a high and a low part), a degree-5 polynomial j in b, and j * 2^n
// (AVX-512's scalef); beyond |n| > 192, infinity or zero.
inline float ggml_expf(float x) {
  const float shifter = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shifter);
  const float n = z - shifter;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                    std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::fabs(n) > 192) return n > 0 ? INFINITY : 0.0f;
  return std::ldexp(j, static_cast<int>(n));
}

// SiLU as ggml_v_silu: x / (1 + ggml_expf(0 - x)).
inline float ggml_silu(float x) {
  return x / (1.0f + ggml_expf(0.0f - x));
}

// GELU (Hendrycks & Gimpel 2016) in its tanh form, as ggml_gelu_f32:
// 0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2))), with the inner
// 1 + a x x contracted into an fma as GCC builds ggml's C.
inline float ggml_gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f, kA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kA * x, x, 1.0f)));
}

// GeGLU's activation (Shazeer 2020), gelu(gate) * up, as ggml_vec_geglu_f32
// (built with GGML_GELU_FP16): a gate <= -10 gives 0, >= 10 gives gate * up,
// and otherwise GELU is read from a table of the half-precision inputs, each
// entry rounded to half. out may be gate.
void geglu(const float* gate, const float* up, float* out, size_t n);

// gpt-oss's clamped SwiGLU, as ggml_swiglu_oai (alpha 1.702, limit 7):
// with g = min(gate, 7), g / (1 + expf(1.702 * -g)) * (clamp(up, -7, 7) +
// 1), libm's expf. out may be gate.
inline void swiglu_clamped(const float* gate, const float* up, float* out, size_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (size_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    out[i] = g / (1.0f + std::exp(kAlpha * -g)) * (u + 1.0f);
  }
}

// out[i] = silu(gate[i]) * up[i]. out may be gate.
using SwigluFn = void (*)(const float* gate, const float* up, float* out, size_t n);

SwigluFn swiglu_function(Isa isa);

}  // namespace quip::kernels
