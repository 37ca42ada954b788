// Attention of one query head over the cached keys and values of n
// positions, computed as ggml's CPU flash attention does with llama.cpp's
// default half-precision cache (ggml_compute_forward_flash_attn_ext_f16): an
// online softmax (Milakov & Gimelshein 2018) over the scores
// scale * q.k_p, whose running weighted sum of value rows is kept in half
// precision, rescaled whenever a new maximum appears. The tiny random test
// models are sensitive enough that a float accumulator misses llama.cpp's
// outputs, so the rounding is part of the contract.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/dot.h"

namespace quip::kernels {

// x . y as ggml_vec_dot_f16 computes it when built for AVX-512 (the build
// llama.cpp's reference outputs came from; GGML_F16_STEP 64, EPR 16): the
// first n & ~63 elements in four accumulators of 16 float lanes, sum[j][l]
// = fma(x, y, sum[j][l]) over steps of 64; then v = (sum0 + sum2) + (sum1 +
// sum3) and _mm512_reduce_add_ps's halving order (v[l] += v[l + 8], + 4,
// + 2, + 1) in float; the rest as float products summed in double. The
// attention scores (Q against the F16 cache) and F16 weights use it.
inline float ggml_dot_f16(const float* x, const float* y, size_t n) {
  const size_t np = n & ~size_t{63};
  double sumf = 0;
  if (np > 0) {
    float sum[4][16] = {};
    for (size_t i = 0; i < np; i += 64) {
      for (size_t j = 0; j < 4; ++j) {
        for (size_t l = 0; l < 16; ++l) {
          const size_t e = i + j * 16 + l;
          sum[j][l] = std::fma(x[e], y[e], sum[j][l]);
        }
      }
    }
    float v[16];
    for (size_t l = 0; l < 16; ++l) v[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
    for (size_t w = 8; w >= 1; w /= 2) {
      for (size_t l = 0; l < w; ++l) v[l] = v[l] + v[l + w];
    }
    sumf = v[0];
  }
  for (size_t e = np; e < n; ++e) sumf += static_cast<double>(x[e] * y[e]);
  return static_cast<float>(sumf);
}

// out = attention of each of n_heads query heads over positions 0..n-1,
// whose key and value rows (head_dim halves each) start at k + p * stride
// and v + p * stride; q and out hold the heads one after another, head_dim
// floats each (the query heads of one grouped-query group).
// PRECONDITIONS: n >= 1; q holds half-representable values (the query as
// ggml converts it to the cache's type).
using AttendFn = void (*)(size_t head_dim, size_t n_heads, size_t n, const float* q,
                          const uint16_t* k, const uint16_t* v, size_t stride, float scale,
                          float* out);

// The attention kernel of `isa` for heads of head_dim (the reference where
// that instruction set has none for this size).
AttendFn attend_function(Isa isa, size_t head_dim);

}  // namespace quip::kernels
