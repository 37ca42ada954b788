#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/dot.h"
#include "kernels/half.h"
#include "kernels/quantize_fit.h"

namespace quip::kernels {

namespace quant {

// ggml's nearest_int: adding 1.5 * 2^23 leaves round-half-even(v) in the low
// mantissa bits. Kept as the bit trick rather than std::nearbyint because the
// K-quant searches can feed it values beyond 2^22 (and inf or NaN when a fitted
// min meets the max) and must get ggml's answer for those too before clamping.
int nearest_int(float v) {
  const uint32_t bits = bits_from_f32(v + 12582912.0f);
  return static_cast<int>(bits & 0x007FFFFF) - 0x00400000;
}

// ggml's make_qkx2_quants: starting from the grid that spans [min, max],
// tries the inverse scales (nmax + rmin + rdelta * step) / (max - min) and
// keeps the least-squares fit of least weighted error.
float fit_scale_min(const float* x, const float* w, int n, int nmax, uint8_t* levels,
                    float* the_min, ScaleMinSearch search) {
  CHECK(n > 0 && n <= 32);
  const auto error_of = [&search](float diff) {
    return search.absolute_error ? std::fabs(diff) : diff * diff;
  };
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(levels, levels + n, uint8_t{0});
    *the_min = -min;
    return 0.0f;
  }
  const auto clamp_l = [nmax](int l) { return static_cast<uint8_t>(std::clamp(l, 0, nmax)); };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    levels[i] = clamp_l(nearest_int(iscale * (x[i] - min)));
    const float diff = scale * static_cast<float>(levels[i]) + min - x[i];
    best_error += w[i] * error_of(diff);
  }
  uint8_t trial[32];
  for (int step = 0; step <= search.steps; ++step) {
    iscale = (search.rmin + search.rdelta * static_cast<float>(step) + static_cast<float>(nmax)) /
             (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      trial[i] = clamp_l(nearest_int(iscale * (x[i] - min)));
      const float l = trial[i];
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
      error += w[i] * error_of(diff);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, levels);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// Group j's 6-bit scale and min; the high two bits of groups 4..7 go to the
// top of bytes 0..7.
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
    scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls >> 4) << 6));
    scales[j] = static_cast<uint8_t>(scales[j] | ((lm >> 4) << 6));
  }
}

void fit_super_scale_min(const float* x, int nmax, ScaleMinSearch search, uint8_t* levels,
                         uint16_t* d, uint16_t* dmin, uint8_t* packed) {
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* g = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += g[l] * g[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(g[l]);
    scales[j] = fit_scale_min(g, weights, 32, nmax, levels + 32 * j, &mins[j], search);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j) {
    // Truncated to uint8_t before the clamp to 63, as ggml does (it only
    // matters for a negative fit, which wraps).
    const auto ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    const auto lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    pack_scale_min_k4(j, std::min<uint8_t>(63, ls), std::min<uint8_t>(63, lm), packed);
  }
  *d = f32_to_f16(max_scale / 63.0f);
  *dmin = f32_to_f16(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, packed, &sc, &m);
    const float dj = f16_to_f32(*d) * static_cast<float>(sc);
    if (dj == 0) continue;  // keep the fit's levels, as ggml does
    const float dm = f16_to_f32(*dmin) * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      levels[32 * j + l] =
          static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / dj), 0, nmax));
    }
  }
}

}  // namespace quant

namespace {

using gguf::GgmlType;
using quant::fit_scale_min;
using quant::kGroupMaxEps;
using quant::nearest_int;
using quant::pack_scale_min_k4;

void f32(const float* x, void* dst, size_t n) {
  std::memcpy(dst, x, n * sizeof(float));
}

void f16(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(static_cast<char*>(dst) + 2 * i, &h, 2);
  }
}

// d = amax / 127, q = round(x / d) (ggml's quantize_row_q8_0_ref).
void q8_0(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ8_0 b{};
    b.d = f32_to_f16(d);
    for (int j = 0; j < kBlock; ++j) b.qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
    store_block(dst, i, b);
  }
}

// The element of largest magnitude maps to -8: d = max / -8,
// q = min(15, trunc(x / d + 8.5)) (ggml's quantize_row_q4_0_ref).
void q4_0(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    }
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ4_0 b{};
    b.d = f32_to_f16(d);
    for (int j = 0; j < kBlock / 2; ++j) {
      const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j] * id + 8.5f)));
      const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j + 16] * id + 8.5f)));
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

// MXFP4 as ggml's quantize_row_mxfp4_ref (which llama-quantize runs): the
// exponent e = floor(log2(amax)) - 2 + 127 (0 for a block of zeros), which
// puts amax in the grid's top octave, and each element the grid's value
// nearest to x / (half the scale), the first of equals.
void mxfp4(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    BlockMXFP4 b{};
    if (amax > 0) {
      const float e = std::floor(std::log2(amax)) - 2 + 127;
      b.e = static_cast<uint8_t>(std::clamp(e, 0.0f, 254.0f));
    }
    const float d = e8m0_half(b.e);
    const auto nearest = [d](float v) {
      int best = 0;
      float best_err = std::fabs(kMXFP4Values[0] * d - v);
      for (int k = 1; k < 16; ++k) {
        const float err = std::fabs(kMXFP4Values[k] * d - v);
        if (err < best_err) best = k, best_err = err;
      }
      return best;
    };
    for (int j = 0; j < kBlock / 2; ++j) {
      b.qs[j] = static_cast<uint8_t>(nearest(x[j]) | nearest(x[j + 16]) << 4);
    }
    store_block(dst, i, b);
  }
}

// As Q4_0 with a fifth bit: the element of largest magnitude maps to -16,
// d = max / -16, q = min(31, trunc(x / d + 16.5)); bit 4 of q goes to bit j
// of qh for element j (ggml's quantize_row_q5_0_ref).
void q5_0(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    }
    const float d = max / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ5_0 b{};
    b.d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kBlock / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
      b.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; ++k) b.qh[k] = static_cast<uint8_t>(qh >> (8 * k));
    store_block(dst, i, b);
  }
}

// Round to nearest even, quieting NaNs (ggml's GGML_FP32_TO_BF16): the
// operand conversion does exactly that.
void bf16(const float* x, void* dst, size_t n) {
  to_operand(GgmlType::BF16, x, dst, n);
}

// x = d * q + m with q in 0..2^bits - 1 spanning the block's range: m = min,
// d = (max - min) / (2^bits - 1), q = trunc((x - min) / d + 0.5), at most 15
// for Q4_1 (ggml's quantize_row_q4_1_ref and _q5_1_ref); Q5_1's fifth bits go
// to qh as Q5_0's do.
template <class Block>
void with_offset(const float* x, void* dst, size_t n) {
  constexpr bool kFive = std::is_same_v<Block, BlockQ5_1>;
  constexpr int kLevels = kFive ? 31 : 15;
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float min = std::numeric_limits<float>::max(), max = -min;
    for (int j = 0; j < kBlock; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / kLevels;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    Block b{};
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kBlock / 2; ++j) {
      int q0 = static_cast<int>((x[j] - min) * id + 0.5f);
      int q1 = static_cast<int>((x[j + 16] - min) * id + 0.5f);
      if constexpr (!kFive) q0 = std::min(15, q0), q1 = std::min(15, q1);
      b.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    if constexpr (kFive) std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

// Super-blocks of 8 groups of 32 with x = d * sc * q - dmin * m, q in 0..15,
// sc and m 6-bit (ggml's quantize_row_q4_K_ref): fit each group's scale and
// min, weighting each element by rms(group) + |x|; quantize the 8 scales and
// 8 mins against the largest of each; then requantize every element against
// the scale and min the block really stores.
void q4_k(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    uint8_t levels[kSuper];
    BlockQ4_K b{};
    quant::fit_super_scale_min(x, 15, quant::kQ4KSearch, levels, &b.d, &b.dmin, b.scales);
    // Each 64 elements share 32 bytes: the first 32 in low nibbles, the next 32 in high.
    for (int j = 0; j < kSuper; j += 64) {
      for (int l = 0; l < 32; ++l) {
        b.qs[j / 2 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
      }
    }
    store_block(dst, i, b);
  }
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights, for
// symmetric grids: x ~ scale * (level - nmax) with levels 0..2 nmax - 1,
// weights x^2. Starts from the inverse scale that maps the element of largest
// magnitude to -nmax, then tries -(nmax + 0.1 * is) / max for is in -9..9
// and keeps the least-squares scale of the best fit. Returns scale; writes
// the n levels.
float fit_symmetric_scale(const float* x, int n, int nmax, uint8_t* levels) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  }
  if (amax < kGroupMaxEps) {  // an all-zero group
    std::fill(levels, levels + n, uint8_t{0});
    return 0.0f;
  }
  const auto level = [nmax](float iscale, float v) {
    return std::clamp(nearest_int(iscale * v), -nmax, nmax - 1);
  };
  // sum(w x l) and sum(w l^2) with w = x^2, in ggml's order.
  const auto sums = [&](float iscale, float* lx, float* l2) {
    *lx = *l2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(level(iscale, x[i]));
      const float w = x[i] * x[i];
      *lx += w * x[i] * l;
      *l2 += w * l * l;
    }
  };
  const auto set_levels = [&](float iscale) {
    for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(level(iscale, x[i]) + nmax);
  };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx, suml2;
  sums(iscale, &sumlx, &suml2);
  set_levels(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sums(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      set_levels(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Super-blocks of 16 groups of 16 with x = d * sc * (q - 32), q 6-bit, sc
// int8 (ggml's quantize_row_q6_K_ref): fit each group's scale, quantize the
// 16 scales so the largest in magnitude maps to -128, then requantize every
// element against the scale the block really stores.
void q6_k(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    uint8_t levels[kSuper];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_scale(x + 16 * j, 16, 32, levels + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ6_K b{};
    if (max_abs_scale < kGroupMaxEps) {  // the block is all zeros
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    b.d = f32_to_f16(1 / iscale);
    for (int j = 0; j < 16; ++j) {
      b.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0) continue;  // keep the fit's levels, as ggml does
      for (int l = 0; l < 16; ++l) {
        const int q = std::clamp(nearest_int(x[16 * j + l] / d), -32, 31);
        levels[16 * j + l] = static_cast<uint8_t>(q + 32);
      }
    }
    // Per 128 elements: low nibbles of elements l and l + 64 share ql[l], of
    // l + 32 and l + 96 share ql[l + 32]; qh[l] holds the top two bits of all four.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = levels + 128 * h;
      uint8_t* ql = b.ql + 64 * h;
      uint8_t* qh = b.qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                     ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

using Fn = void (*)(const float*, void*, size_t);

Fn function_for(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return f32;
    case GgmlType::F16: return f16;
    case GgmlType::Q8_0: return q8_0;
    case GgmlType::Q4_0: return q4_0;
    case GgmlType::BF16: return bf16;
    case GgmlType::Q4_1: return with_offset<BlockQ4_1>;
    case GgmlType::Q5_0: return q5_0;
    case GgmlType::Q5_1: return with_offset<BlockQ5_1>;
    case GgmlType::IQ4_NL: return quant::iq4_nl;
    case GgmlType::MXFP4: return mxfp4;
    case GgmlType::Q2_K: return quant::q2_k;
    case GgmlType::Q3_K: return quant::q3_k;
    case GgmlType::Q4_K: return q4_k;
    case GgmlType::Q5_K: return quant::q5_k;
    case GgmlType::Q6_K: return q6_k;
    case GgmlType::IQ4_XS: return quant::iq4_xs;
    default: return nullptr;
  }
}

}  // namespace

bool can_quantize(GgmlType type) {
  return function_for(type) != nullptr;
}

void quantize_row(GgmlType type, const float* src, void* dst, size_t n) {
  const Fn fn = function_for(type);
  CHECK(fn != nullptr);
  CHECK(n % gguf::traits(type).block_size == 0);
  fn(src, dst, n);
}

}  // namespace quip::kernels
