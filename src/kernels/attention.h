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
#include "kernels/dot_float.h"

namespace quip::kernels {

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
