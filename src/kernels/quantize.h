// Reference quantization: floats to the blocks of a tensor type, with the
// rounding rules of ggml's reference quantizers (quantize_row_*_ref), so that
// quantizing what a llama.cpp file dequantizes to gives back its blocks.
// Used by tools (quip-synth) and tests; pure, no allocation.
#pragma once

#include <cstddef>

#include "gguf/types.h"

namespace quip::kernels {

// Whether quantize_row handles `type`.
bool can_quantize(gguf::GgmlType type);

// Writes the n values of src as n / block size blocks of `type` to dst.
// PRECONDITIONS: can_quantize(type); n a multiple of the block size; dst
// has room for the blocks (any alignment).
void quantize_row(gguf::GgmlType type, const float* src, void* dst, size_t n);

}  // namespace quip::kernels
