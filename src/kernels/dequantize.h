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

}  // namespace quip::kernels
