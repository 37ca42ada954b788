// The gated delta rule (Yang et al. 2024, "Gated Delta Networks"): one
// token's step of one head of a Gated DeltaNet layer, in the arithmetic of
// ggml_gated_delta_net on the CPU (llama.cpp's fused kernel). The scalar
// function here is the reference; delta_rule_function(isa) gives the SIMD
// version, which computes the same values.
#pragma once

#include <cmath>
#include <cstddef>

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

}  // namespace quip::kernels
