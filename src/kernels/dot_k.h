// The K-quant dot products in llama.cpp's float order (internal to
// kernels/). A K-quant superblock of 256 weights is integers, x = d * sc * q
// - dmin * m with a scale sc and a min m per sub-block, so against a Q8_K
// operand everything is exact but the few float steps that scale and sum
// the integer parts; their order is what these functions fix, as ggml's
// x86 kernels (built for AVX-512) take them:
//
// - By rows (ggml_vec_dot_*_q8_K, AVX2 code): the integer products summed
//   in eight int32 lanes, lane k holding the elements e with e % 32 in
//   [4k, 4k + 4); per superblock, lanes = fma(d * d8, lane, lanes); the
//   result is hsum_float_8 of the lanes. Q2_K adds its mins' terms into the
//   same lanes first, Q5_K sums them in a separate float.
// - In 8-row blocks (the repacked Q4_K and Q2_K of ggml's CPU_REPACK
//   buffer, ggml_gemv/gemm_*_8x8_q8_K): per group of elements, one exact
//   integer sum I and one of the mins' terms M, then acc = fma(I, d * d8,
//   acc) and acc_min = fma(M, dmin * d8, acc_min); the result is acc -
//   acc_min. A column taken alone (gemv) has one group per superblock; a
//   column of four taken together (gemm) one per 64 (Q4_K) or 128 (Q2_K)
//   elements.
#pragma once

#include <cstddef>

#include "gguf/types.h"

namespace quip::kernels {

// The sum of 8 float lanes in ggml's hsum_float_8 order, the last step of
// its x86 dot products.
inline float hsum_float_8(const float* a) {
  return ((a[4] + a[0]) + (a[6] + a[2])) + ((a[5] + a[1]) + (a[7] + a[3]));
}

// The dot product of n weights of `type` (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K or
// IQ4_XS) with a Q8_K operand row, by rows.
float dot_k_by_rows(gguf::GgmlType type, size_t n, const void* w, const void* a);

// The same in 8-row blocks with groups of `group` elements (Q4_K, Q2_K).
float dot_k_in_blocks(gguf::GgmlType type, size_t n, const void* w, const void* a, int group);

}  // namespace quip::kernels
