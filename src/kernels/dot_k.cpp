#include "kernels/dot_k.h"

#include <cmath>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

using gguf::GgmlType;

// One superblock as integers: x[e] = d * sc[e / sub] * q[e] - dmin * m[e / sub].
struct Superblock {
  float d = 0, dmin = 0;
  int sub = 0;  // elements per scale: 16 or 32
  int q[kSuper];
  int sc[16], m[16];
};

// Q4_K / Q5_K's 6-bit scale and min of group j (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Element orders as in dequantize.cpp.
void decode(GgmlType type, const void* w, size_t i, Superblock* s) {
  switch (type) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K: {
      const bool q2 = type == GgmlType::Q2_K;
      const auto b2 = q2 ? load_block<BlockQ2_K>(w, i) : BlockQ2_K{};
      const auto b3 = q2 ? BlockQ3_K{} : load_block<BlockQ3_K>(w, i);
      s->sub = 16;
      if (q2) {
        s->d = f16_to_f32(b2.d), s->dmin = f16_to_f32(b2.dmin);
        for (int j = 0; j < 16; ++j) s->sc[j] = b2.scales[j] & 0x0F, s->m[j] = b2.scales[j] >> 4;
      } else {
        s->d = f16_to_f32(b3.d), s->dmin = 0;
        for (int j = 0; j < 16; ++j) {
          const int low = j < 8 ? b3.scales[j] & 0x0F : b3.scales[j - 8] >> 4;
          const int high = (b3.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
          s->sc[j] = (low | (high << 4)) - 32, s->m[j] = 0;
        }
      }
      const uint8_t* q = q2 ? b2.qs : b3.qs;
      int e = 0;
      uint8_t bit = 1;
      for (int half = 0; half < 2; ++half, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, bit = static_cast<uint8_t>(bit << 1)) {
          for (int k = 0; k < 32; ++k) {
            const int v = (q[k] >> shift) & 3;
            s->q[e++] = q2 ? v : v - ((b3.hmask[k] & bit) ? 0 : 4);
          }
        }
      }
      return;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const bool q5 = type == GgmlType::Q5_K;
      const auto b4 = q5 ? BlockQ4_K{} : load_block<BlockQ4_K>(w, i);
      const auto b5 = q5 ? load_block<BlockQ5_K>(w, i) : BlockQ5_K{};
      const uint8_t* scales = q5 ? b5.scales : b4.scales;
      s->d = f16_to_f32(q5 ? b5.d : b4.d), s->dmin = f16_to_f32(q5 ? b5.dmin : b4.dmin);
      s->sub = 32;
      for (int j = 0; j < 8; ++j) scale_min_k4(j, scales, &s->sc[j], &s->m[j]);
      const uint8_t* q = q5 ? b5.qs : b4.qs;
      for (int g = 0; g < 8; g += 2, q += 32) {
        for (int l = 0; l < 32; ++l) {
          int lo = q[l] & 0x0F, hi = q[l] >> 4;
          if (q5) {
            lo += (b5.qh[l] >> g) & 1 ? 16 : 0;
            hi += (b5.qh[l] >> (g + 1)) & 1 ? 16 : 0;
          }
          s->q[32 * g + l] = lo, s->q[32 * g + 32 + l] = hi;
        }
      }
      return;
    }
    case GgmlType::Q6_K: {
      const auto b = load_block<BlockQ6_K>(w, i);
      s->d = f16_to_f32(b.d), s->dmin = 0, s->sub = 16;
      for (int j = 0; j < 16; ++j) s->sc[j] = b.scales[j], s->m[j] = 0;
      for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b.ql + 64 * half;
        const uint8_t* qh = b.qh + 32 * half;
        int* q = s->q + 128 * half;
        for (int l = 0; l < 32; ++l) {
          q[l] = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
          q[l + 32] = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
          q[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          q[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        }
      }
      return;
    }
    case GgmlType::IQ4_XS: {
      const auto b = load_block<BlockIQ4_XS>(w, i);
      s->d = f16_to_f32(b.d), s->dmin = 0, s->sub = 32;
      for (int g = 0; g < 8; ++g) {
        const int ls =
            ((b.scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | (((b.scales_h >> (2 * g)) & 3) << 4);
        s->sc[g] = ls - 32, s->m[g] = 0;
        for (int j = 0; j < 16; ++j) {
          s->q[32 * g + j] = kIQ4Values[b.qs[16 * g + j] & 0x0F];
          s->q[32 * g + 16 + j] = kIQ4Values[b.qs[16 * g + j] >> 4];
        }
      }
      return;
    }
    default: CHECK(false && "not a K-quant");
  }
}

// _mm256's hsum_float_8 order.
float hsum8(const float* a) {
  return ((a[4] + a[0]) + (a[6] + a[2])) + ((a[5] + a[1]) + (a[7] + a[3]));
}

// The operand's sum over the 16 or 32 elements of sub-block j.
int sub_sum(const BlockQ8_K& y, int sub, int j) {
  return sub == 16 ? y.bsums[j] : y.bsums[2 * j] + y.bsums[2 * j + 1];
}

}  // namespace

float dot_k_by_rows(GgmlType type, size_t n, const void* w, const void* a) {
  float acc[8] = {}, acc_m4[4] = {}, summs = 0;
  Superblock s;
  for (size_t i = 0; i < n / kSuper; ++i) {
    decode(type, w, i, &s);
    const auto y = load_block<BlockQ8_K>(a, i);
    // Q6_K's lanes take q unsigned (0..63) and its offset apart, below.
    const int bias = type == GgmlType::Q6_K ? 32 : 0;
    int lanes[8] = {};
    for (int e = 0; e < kSuper; ++e) {
      lanes[(e % 32) / 4] += s.sc[e / s.sub] * (s.q[e] + bias) * y.qs[e];
    }
    const float d = y.d * s.d, dmin = -y.d * s.dmin;
    switch (type) {
      case GgmlType::Q2_K:  // mins into the lanes first, sub-blocks 2k and 2k+1 in lane k
        for (int k = 0; k < 8; ++k) {
          const int m = s.m[2 * k] * y.bsums[2 * k] + s.m[2 * k + 1] * y.bsums[2 * k + 1];
          acc[k] = std::fma(dmin, static_cast<float>(m), acc[k]);
        }
        break;
      case GgmlType::Q4_K:  // mins in four lanes, groups 2k and 2k+1 in lane k
        for (int k = 0; k < 4; ++k) {
          const int m =
              s.m[2 * k] * sub_sum(y, 32, 2 * k) + s.m[2 * k + 1] * sub_sum(y, 32, 2 * k + 1);
          acc_m4[k] = std::fma(dmin, static_cast<float>(m), acc_m4[k]);
        }
        break;
      case GgmlType::Q5_K: {  // mins in one float
        int m = 0;
        for (int j = 0; j < 8; ++j) m += s.m[j] * sub_sum(y, 32, j);
        summs = std::fma(dmin, static_cast<float>(m), summs);
        break;
      }
      case GgmlType::Q6_K:  // 32 times the sums of sub-blocks 2k and 2k+1 off lane k
        for (int k = 0; k < 8; ++k) {
          lanes[k] -= 32 * (s.sc[2 * k] * y.bsums[2 * k] + s.sc[2 * k + 1] * y.bsums[2 * k + 1]);
        }
        break;
      default: break;
    }
    for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, static_cast<float>(lanes[k]), acc[k]);
  }
  const float m4 = (acc_m4[0] + acc_m4[2]) + (acc_m4[1] + acc_m4[3]);
  return type == GgmlType::Q4_K ? hsum8(acc) + m4 : hsum8(acc) + summs;
}

float dot_k_in_blocks(GgmlType type, size_t n, const void* w, const void* a, int group) {
  CHECK(type == GgmlType::Q4_K || type == GgmlType::Q2_K);
  float acc = 0, acc_min = 0;
  Superblock s;
  for (size_t i = 0; i < n / kSuper; ++i) {
    decode(type, w, i, &s);
    const auto y = load_block<BlockQ8_K>(a, i);
    const float dd = s.d * y.d, dm = s.dmin * y.d;
    for (int g = 0; g < kSuper; g += group) {
      int sum = 0, mins = 0;
      for (int e = g; e < g + group; ++e) sum += s.sc[e / s.sub] * s.q[e] * y.qs[e];
      for (int j = g / s.sub; j < (g + group) / s.sub; ++j) mins += s.m[j] * sub_sum(y, s.sub, j);
      acc = std::fma(static_cast<float>(sum), dd, acc);
      acc_min = std::fma(static_cast<float>(mins), dm, acc_min);
    }
  }
  return acc - acc_min;
}

}  // namespace quip::kernels
