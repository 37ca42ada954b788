// The steps of a Gated DeltaNet layer (Yang et al. 2024, "Gated Delta
// Networks") beyond its matrix products, in the arithmetic of llama.cpp's
// CPU backend: the causal depthwise convolution (ggml_ssm_conv), SiLU over
// a row (ggml_vec_silu_f32) and the gated delta rule (ggml_gated_delta_net,
// the fused kernel). The scalar functions here are the reference; the
// *_function(isa) ones give the SIMD versions, which compute the same
// values.
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/activation.h"
#include "kernels/dot.h"
#include "kernels/dot_float.h"

namespace quip::kernels {

// The state S (d x d) is stored by columns: s + j * d is column j. With q
// and k L2-normed:
//   S *= decay;  delta_j = (v_j - S[:, j] . k) * beta;  S[:, j] += k * delta_j;
//   out_j = (S[:, j] . q) / sqrt(d)
// The dot products as ggml_vec_dot_f32, the updates fused
// (ggml_vec_mad_f32). `delta`: d floats of scratch.
inline void delta_rule_reference(float* s, size_t d, const float* q, const float* k, const float* v,
                                 float decay, float beta, float* out, float* delta) {
  for (size_t i = 0; i < d * d; ++i) s[i] *= decay;
  for (size_t j = 0; j < d; ++j) delta[j] = (v[j] - ggml_dot_f32(s + j * d, k, d)) * beta;
  for (size_t j = 0; j < d; ++j) {
    float* column = s + j * d;
    for (size_t i = 0; i < d; ++i) column[i] = std::fma(k[i], delta[j], column[i]);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (size_t j = 0; j < d; ++j) out[j] = ggml_dot_f32(s + j * d, q, d) * scale;
}

using DeltaRuleFn = void (*)(float* s, size_t d, const float* q, const float* k, const float* v,
                             float decay, float beta, float* out, float* delta);

DeltaRuleFn delta_rule_function(Isa isa);

// The convolution of n positions over c channels: x holds taps - 1 + n
// rows of c (the earlier inputs, then the n new ones), w the taps, tap by
// tap (taps rows of c); out[t][ch] = sum over i of x[t + i][ch] * w[i][ch],
// in order in float, each product fused into its sum (GCC's build of
// ggml_ssm_conv).
inline void causal_conv_reference(const float* x, const float* w, size_t taps, size_t n, size_t c,
                                  float* out) {
  for (size_t t = 0; t < n; ++t) {
    for (size_t ch = 0; ch < c; ++ch) {
      float sum = 0.0f;
      for (size_t i = 0; i < taps; ++i) sum = std::fma(x[(t + i) * c + ch], w[i * c + ch], sum);
      out[t * c + ch] = sum;
    }
  }
}

using CausalConvFn = void (*)(const float* x, const float* w, size_t taps, size_t n, size_t c,
                              float* out);

CausalConvFn causal_conv_function(Isa isa);

// SiLU over a row of n, as ggml_vec_silu_f32 on AVX-512: the first n & ~15
// as ggml_v_silu (ggml_silu), the rest x / (1 + expf(-x)) with libm's
// expf. out may be x.
inline void silu_row_reference(const float* x, float* out, size_t n) {
  const size_t vectored = n & ~size_t{15};
  for (size_t i = 0; i < vectored; ++i) out[i] = ggml_silu(x[i]);
  for (size_t i = vectored; i < n; ++i) out[i] = x[i] / (1.0f + std::exp(-x[i]));
}

using SiluRowFn = void (*)(const float* x, float* out, size_t n);

SiluRowFn silu_row_function(Isa isa);

}  // namespace quip::kernels
