// The super-block quantizers beyond Q4_K and Q6_K: Q2_K, Q3_K and Q5_K as
// ggml's quantize_row_*_ref (what llama-quantize runs for them without an
// importance matrix), IQ4_NL and IQ4_XS as ggml's quantize_iq4_nl and
// quantize_iq4_xs without one (a search over seven scales each side, which
// llama-quantize runs; the _ref functions try none). Every sum in ggml's
// order, so that the same floats give the same bytes.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/half.h"
#include "kernels/quantize_fit.h"

namespace quip::kernels::quant {

namespace {

// Two-bit levels of 256 elements into 64 bytes: per 128 elements, byte l
// holds elements l, l + 32, l + 64 and l + 96 from the low bits up.
void pack_2_bits(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < kSuper; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) |
                                           (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
    }
  }
}

// ggml's make_q3_quants with its least-squares refinement: levels -nmax ..
// nmax - 1 from the inverse scale that maps the element of largest magnitude
// to -nmax, then up to five passes that move single levels where that raises
// (sum w x l)^2 / sum w l^2 (w = x^2). Returns the least-squares scale;
// writes levels + nmax (0 for an all-zero group).
float fit_symmetric_refined(const float* x, int n, int nmax, uint8_t* levels) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  }
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, uint8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  int l[16];
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    l[i] = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l[i]);
    suml2 += w * static_cast<float>(l[i]) * static_cast<float>(l[i]);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto li = static_cast<float>(l[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == l[i]) continue;
      const auto nl = static_cast<float>(new_l);
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        l[i] = new_l, sumlx = slx, suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(l[i] + nmax);
  return suml2 > 0 ? sumlx / suml2 : 0.0f;
}

// ggml's best_index_int8: the index of the grid value nearest v (the lower
// one on a tie), by bisection of the sorted grid.
int nearest_grid_index(float v) {
  constexpr int n = 16;
  if (v <= kIQ4Values[0]) return 0;
  if (v >= kIQ4Values[n - 1]) return n - 1;
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < kIQ4Values[mid] ? hi : lo) = mid;
  }
  return v - kIQ4Values[hi - 1] < kIQ4Values[hi] - v ? hi - 1 : hi;
}

// ggml's quantize_row_iq4_nl_impl without importance weights (w = x^2) and
// with its seven tries each side: for each group of 32, the scale that maps
// the element of largest magnitude to the grid's -127, refit by least
// squares, then the refit of each grid at inverse scales (t - 127) / max for
// t in -7..7 where it fits better. Writes the groups' scales and their
// levels at the first grid.
void fit_iq4_groups(const float* x, int groups, float* scales, uint8_t* levels) {
  constexpr int kTries = 7;
  const auto v0 = static_cast<float>(kIQ4Values[0]);
  for (int g = 0; g < groups; ++g) {
    const float* xb = x + 32 * g;
    uint8_t* lb = levels + 32 * g;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), max = xb[j];
    }
    if (amax < kGroupMaxEps) {
      scales[g] = 0;
      continue;
    }
    // sum w q x and sum w q^2 at inverse scale id, levels written if asked.
    const auto sums = [&](float id, float* sumqx, float* sumq2, bool write) {
      *sumqx = *sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const int l = nearest_grid_index(id * xb[j]);
        if (write) lb[j] = static_cast<uint8_t>(l);
        const auto q = static_cast<float>(kIQ4Values[l]);
        const float w = xb[j] * xb[j];
        *sumqx += w * q * xb[j];
        *sumq2 += w * q * q;
      }
    };
    float sumqx, sumq2;
    sums(1 / (-max / v0), &sumqx, &sumq2, true);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int t = -kTries; t <= kTries; ++t) {
      sums(static_cast<float>(t + kIQ4Values[0]) / max, &sumqx, &sumq2, false);
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[g] = d;
  }
}

// Nibble levels of 32 elements into 16 bytes: elements j and j + 16 share byte j.
void pack_nibbles_32(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(levels[j] | (levels[j + 16] << 4));
}

}  // namespace

// Super-blocks of 16 groups of 16 with x = d * sc * q - dmin * m, q in
// 0..3, sc and m 4-bit: each group fitted with weights |x| and absolute
// error; the scales and mins quantized against the largest of each; then
// every element requantized against what the block stores.
void q2_k(const float* x, void* dst, size_t n) {
  constexpr float kQ4Scale = 15.0f;
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    uint8_t levels[kSuper];
    float scales[16], mins[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      float weights[16];
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = fit_scale_min(x + 16 * j, weights, 16, 3, levels + 16 * j, &mins[j], kQ2KSearch);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    BlockQ2_K b{};
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j)
        b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b.d = f32_to_f16(max_scale / kQ4Scale);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      b.dmin = f32_to_f16(max_min / kQ4Scale);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * static_cast<float>(b.scales[j] & 0x0F);
      if (d == 0) continue;  // keep the fit's levels, as ggml does
      const float dm = f16_to_f32(b.dmin) * static_cast<float>(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        levels[16 * j + l] =
            static_cast<uint8_t>(std::clamp(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack_2_bits(levels, b.qs);
    store_block(dst, i, b);
  }
}

// Super-blocks of 16 groups of 16 with x = d * sc * (q - 4), q in 0..7 (two
// bits in qs, the third in hmask), sc 6-bit signed: each group fitted by
// make_q3_quants, the scales quantized so the largest in magnitude maps to
// -32, then every element requantized against what the block stores.
void q3_k(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    uint8_t levels[kSuper];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_refined(x + 16 * j, 16, 4, levels + 16 * j);
      if (std::fabs(scales[j]) > amax) amax = std::fabs(scales[j]), max_scale = scales[j];
    }
    BlockQ3_K b{};
    if (max_scale != 0) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // Truncated to int8_t before the clamp, as ggml does.
        const auto l8 = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        const int l = std::clamp<int>(l8, -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = static_cast<uint8_t>(l & 0x0F);
        } else {
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0x0F) << 4));
        }
        b.scales[8 + j % 4] =
            static_cast<uint8_t>(b.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      b.d = f32_to_f16(1 / iscale);
    }
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? b.scales[j] & 0x0F : b.scales[j - 8] >> 4;
      const int sc = (low | (((b.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = f16_to_f32(b.d) * static_cast<float>(sc);
      if (d == 0) continue;  // keep the fit's levels, as ggml does
      for (int l = 0; l < 16; ++l) {
        levels[16 * j + l] =
            static_cast<uint8_t>(std::clamp(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    // The third bit of element j goes to bit j / 32 of hmask[j % 32].
    for (int j = 0; j < kSuper; ++j) {
      if (levels[j] > 3) {
        b.hmask[j % 32] = static_cast<uint8_t>(b.hmask[j % 32] | (1 << (j / 32)));
        levels[j] = static_cast<uint8_t>(levels[j] - 4);
      }
    }
    pack_2_bits(levels, b.qs);
    store_block(dst, i, b);
  }
}

// Super-blocks of 8 groups of 32 with x = d * sc * q - dmin * m, q in
// 0..31 (four bits in qs, the fifth in qh): as Q4_K with 32 levels and
// make_qkx2_quants's shorter search.
void q5_k(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    uint8_t levels[kSuper];
    BlockQ5_K b{};
    fit_super_scale_min(x, 31, kQ5KSearch, levels, &b.d, &b.dmin, b.scales);
    // Per 64 elements: the low nibbles of elements l and l + 32 share
    // qs[l]; their fifth bits are bits 2k and 2k + 1 of qh[l] for the k-th 64.
    for (int k = 0; k < 4; ++k) {
      const uint8_t* q = levels + 64 * k;
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * k + l] = static_cast<uint8_t>((q[l] & 0x0F) | ((q[l + 32] & 0x0F) << 4));
        b.qh[l] = static_cast<uint8_t>(b.qh[l] | ((q[l] >> 4) << (2 * k)) |
                                       ((q[l + 32] >> 4) << (2 * k + 1)));
      }
    }
    store_block(dst, i, b);
  }
}

// Blocks of 32 on the non-linear grid with one half-precision scale: the
// group's fitted scale, every element at its nearest grid value.
void iq4_nl(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float scale;
    uint8_t levels[kBlock];
    fit_iq4_groups(x, 1, &scale, levels);
    BlockIQ4_NL b{};
    b.d = f32_to_f16(scale);
    const float id = scale != 0 ? 1 / scale : 0.0f;
    for (int j = 0; j < kBlock; ++j)
      levels[j] = static_cast<uint8_t>(nearest_grid_index(id * x[j]));
    pack_nibbles_32(levels, b.qs);
    store_block(dst, i, b);
  }
}

// Super-blocks of 8 groups of 32 on the non-linear grid: each group's fitted
// scale stored in 6 bits (signed, offset 32) against d = -max / 32, where
// max is the scale of largest magnitude; every element at the grid value
// nearest to it over the scale it really has (d * l, with d unrounded).
void iq4_xs(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    float scales[8];
    uint8_t levels[kSuper];
    fit_iq4_groups(x, 8, scales, levels);
    float max_scale = 0, amax_scale = 0;
    for (float s : scales) {
      if (std::fabs(s) > amax_scale) amax_scale = std::fabs(s), max_scale = s;
    }
    BlockIQ4_XS b{};
    const float d = -max_scale / 32;
    b.d = f32_to_f16(d);
    const float id = d != 0 ? 1 / d : 0.0f;
    for (int g = 0; g < 8; ++g) {
      const int l = std::clamp(nearest_int(id * scales[g]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.0f;
      for (int j = 0; j < 32; ++j) {
        levels[32 * g + j] = static_cast<uint8_t>(nearest_grid_index(idl * x[32 * g + j]));
      }
      const int stored = l + 32;
      b.scales_l[g / 2] =
          static_cast<uint8_t>(b.scales_l[g / 2] | ((stored & 0x0F) << (4 * (g % 2))));
      b.scales_h = static_cast<uint16_t>(b.scales_h | ((stored >> 4) << (2 * g)));
    }
    for (int g = 0; g < 8; ++g) pack_nibbles_32(levels + 32 * g, b.qs + 16 * g);
    store_block(dst, i, b);
  }
}

}  // namespace quip::kernels::quant
