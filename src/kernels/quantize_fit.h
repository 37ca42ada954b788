// The searches ggml's reference quantizers share (ggml-quants.c), used by
// quantize.cpp and quantize_k.cpp. Internal to the quantizers: every sum
// runs in ggml's order, so that the same floats give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace quip::kernels::quant {

// ggml's GROUP_MAX_EPS: groups whose largest magnitude is below it are zeros.
inline constexpr float kGroupMaxEps = 1e-15f;

// ggml's nearest_int: round half to even through the float's mantissa bits.
int nearest_int(float v);

// The candidate grids of make_qkx2_quants and how it scores them: inverse
// scales (nmax + rmin + rdelta * step) / (max - min) for step 0..steps,
// weighted squared or absolute error.
struct ScaleMinSearch {
  float rmin, rdelta;
  int steps;
  bool absolute_error;
};
inline constexpr ScaleMinSearch kQ4KSearch{-1.0f, 0.1f, 20, false};
inline constexpr ScaleMinSearch kQ5KSearch{-0.5f, 0.1f, 15, false};
inline constexpr ScaleMinSearch kQ2KSearch{-0.5f, 0.1f, 15, true};

// ggml's make_qkx2_quants: fits x ~ scale * level - min (levels 0..nmax,
// min >= 0) by weighted least squares over `search`'s grids. Returns scale;
// writes the n levels and min. PRECONDITIONS: 0 < n <= 32.
float fit_scale_min(const float* x, const float* w, int n, int nmax, uint8_t* levels,
                    float* the_min, ScaleMinSearch search);

// Bytes of a Q4_K or Q5_K block's 12 scale bytes for group j (0..7): the
// inverse of scale_min_k4 in blocks.h. Groups 4..7 OR into bytes 0..7, so
// those must start at zero.
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales);

// The scales and levels of a Q4_K or Q5_K super-block of 256 values, as
// ggml's quantize_row_q4_K_ref and _q5_K_ref share them: each group of 32
// fitted by fit_scale_min (levels 0..nmax, weights rms(group) + |x|); the 8
// scales and 8 mins quantized to 6 bits against the largest of each (d and
// dmin, half precision, and the 12 `scales` bytes, which must start at
// zero); then every element requantized against what the block stores.
void fit_super_scale_min(const float* x, int nmax, ScaleMinSearch search, uint8_t* levels,
                         uint16_t* d, uint16_t* dmin, uint8_t* scales);

// The quantizers of quantize_k.cpp (quantize_row's contract): Q2_K, Q3_K
// and Q5_K as ggml's quantize_row_*_ref, IQ4_NL and IQ4_XS as ggml's
// quantize_iq4_nl and quantize_iq4_xs without an importance matrix.
void q2_k(const float* x, void* dst, size_t n);
void q3_k(const float* x, void* dst, size_t n);
void q5_k(const float* x, void* dst, size_t n);
void iq4_nl(const float* x, void* dst, size_t n);
void iq4_xs(const float* x, void* dst, size_t n);

}  // namespace quip::kernels::quant
