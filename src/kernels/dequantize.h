// Reference dequantization: a row of any supported tensor type to floats.
//
// Scalar code written for clarity, straight from the block layouts of
// ggml-common.h and the reference functions of ggml-quants.c
// (dequantize_row_*); SIMD kernels are tested against it. Pure: pointers and
// sizes in, no allocation, no threads.
#pragma once

#include <cstddef>

#include "gguf/types.h"

namespace quip::kernels {

// Whether dequantize_row handles `type`.
bool can_dequantize(gguf::GgmlType type);

// Writes the n values of `src` (n / block size blocks of `type`) to dst.
// PRECONDITIONS: can_dequantize(type); n is a multiple of the type's block
// size; src holds the blocks (any alignment); dst has room for n floats.
void dequantize_row(gguf::GgmlType type, const void* src, float* dst, size_t n);

// K-quant superblock i of a row (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) as
// integers: x[e] = d * sc[e / sub] * q[e] - dmin * m[e / sub] for its 256
// elements in order (dmin and m zero for the types without mins; Q3_K and
// Q6_K's q and sc signed, IQ4_XS's q its grid value).
struct KSuperblock {
  float d = 0, dmin = 0;
  int sub = 0;  // elements per scale: 16 or 32
  int q[256];
  int sc[16], m[16];
};
void decode_k(gguf::GgmlType type, const void* row, size_t i, KSuperblock* s);

}  // namespace quip::kernels
