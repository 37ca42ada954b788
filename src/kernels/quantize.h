// Reference quantization: floats to the blocks of a tensor type, by the
// algorithms of ggml's reference quantizers (quantize_row_*_ref, which
// llama.cpp's quantizer runs when it has no importance matrix; for IQ4_NL
// and IQ4_XS the scale search llama-quantize runs, quantize_iq4_nl and
// quantize_iq4_xs), bit for bit: the same floats give the same bytes. Every
// type quip multiplies: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS. For the formats with one
// scale per block (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) quantizing what a
// llama.cpp file dequantizes to gives back its blocks; for the K-quants and
// the non-linear grids, whose scales come from a search, it gives back most
// of them.
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
