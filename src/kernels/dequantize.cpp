#include "kernels/dequantize.h"

#include <cstring>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

using gguf::GgmlType;

void f32(const void* src, float* y, size_t n) {
  std::memcpy(y, src, n * sizeof(float));
}

void f16(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, static_cast<const char*>(src) + 2 * i, 2);
    y[i] = f16_to_f32(h);
  }
}

void bf16(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, static_cast<const char*>(src) + 2 * i, 2);
    y[i] = bf16_to_f32(h);
  }
}

// x = d * (q - 8); nibble j holds element j, its high half element j + 16.
void q4_0(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
      y[j + kBlock / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

// x = d * q + m
void q4_1(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
      y[j + kBlock / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

// The fifth bit of element j is bit j of qh.
inline int q5_high(uint32_t qh, int j) {
  return ((qh >> j) & 1) << 4;
}

// x = d * (q - 16)
void q5_0(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = f16_to_f32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = static_cast<float>(((b.qs[j] & 0x0F) | q5_high(qh, j)) - 16) * d;
      y[j + 16] = static_cast<float>(((b.qs[j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
    }
  }
}

// x = d * q + m
void q5_1(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0x0F) | q5_high(qh, j)) * d + m;
      y[j + 16] = static_cast<float>((b.qs[j] >> 4) | q5_high(qh, j + 16)) * d + m;
    }
  }
}

// x = d * q
void q8_0(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// x = d * grid[q]
void iq4_nl(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockIQ4_NL>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * kIQ4Values[b.qs[j] & 0x0F];
      y[j + 16] = d * kIQ4Values[b.qs[j] >> 4];
    }
  }
}

// x = e8m0_half(e) * grid[q]
void mxfp4(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = e8m0_half(b.e);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = kMXFP4Values[b.qs[j] & 0x0F] * d;
      y[j + 16] = kMXFP4Values[b.qs[j] >> 4] * d;
    }
  }
}

// The K-quants and IQ4_XS from their integers (decode_k):
// x = (d * sc) * q - dmin * m, the steps and roundings of ggml's
// dequantize_row_* (which multiply d by the scale first).
template <GgmlType kType>
void k_quant(const void* src, float* y, size_t n) {
  KSuperblock s;
  for (size_t i = 0; i < n / kSuper; ++i, y += kSuper) {
    decode_k(kType, src, i, &s);
    for (int e = 0; e < kSuper; ++e) {
      const int j = e / s.sub;
      y[e] = s.d * static_cast<float>(s.sc[j]) * static_cast<float>(s.q[e]) -
             s.dmin * static_cast<float>(s.m[j]);
    }
  }
}

using Fn = void (*)(const void*, float*, size_t);

Fn function_for(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return f32;
    case GgmlType::F16: return f16;
    case GgmlType::BF16: return bf16;
    case GgmlType::Q4_0: return q4_0;
    case GgmlType::Q4_1: return q4_1;
    case GgmlType::Q5_0: return q5_0;
    case GgmlType::Q5_1: return q5_1;
    case GgmlType::Q8_0: return q8_0;
    case GgmlType::IQ4_NL: return iq4_nl;
    case GgmlType::MXFP4: return mxfp4;
    case GgmlType::Q2_K: return k_quant<GgmlType::Q2_K>;
    case GgmlType::Q3_K: return k_quant<GgmlType::Q3_K>;
    case GgmlType::Q4_K: return k_quant<GgmlType::Q4_K>;
    case GgmlType::Q5_K: return k_quant<GgmlType::Q5_K>;
    case GgmlType::Q6_K: return k_quant<GgmlType::Q6_K>;
    case GgmlType::IQ4_XS: return k_quant<GgmlType::IQ4_XS>;
    default: return nullptr;
  }
}

}  // namespace

void decode_k(GgmlType type, const void* w, size_t i, KSuperblock* s) {
  switch (type) {
    // 16 groups of 16. Byte k of each 32-byte half of qs holds elements k,
    // k+32, k+64, k+96 of the half's 128 (two bits each, lowest first).
    // Q2_K: scale & 15 and min scale >> 4. Q3_K: a third bit in hmask (clear:
    // q - 4), scales of 6 bits (low nibbles in bytes 0..7, high pairs in
    // bytes 8..11) less 32.
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
    // 8 groups of 32; each 32 bytes of qs hold a pair of groups, low nibbles
    // then high. Q5_K: a fifth bit, bit g of qh byte l for group g.
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const bool q5 = type == GgmlType::Q5_K;
      const auto b4 = q5 ? BlockQ4_K{} : load_block<BlockQ4_K>(w, i);
      const auto b5 = q5 ? load_block<BlockQ5_K>(w, i) : BlockQ5_K{};
      const uint8_t* scales = q5 ? b5.scales : b4.scales;
      s->d = f16_to_f32(q5 ? b5.d : b4.d), s->dmin = f16_to_f32(q5 ? b5.dmin : b4.dmin);
      s->sub = 32;
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, scales, &sc, &m);
        s->sc[j] = sc, s->m[j] = m;
      }
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
    // 16 groups of 16: q of six bits (four in ql, two in qh) less 32.
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
    // 8 groups of 32: the grid value of each nibble, scales of six bits
    // less 32.
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

bool can_dequantize(GgmlType type) {
  return function_for(type) != nullptr;
}

void dequantize_row(GgmlType type, const void* src, float* dst, size_t n) {
  const Fn fn = function_for(type);
  CHECK(fn != nullptr);
  CHECK(n % gguf::traits(type).block_size == 0);
  fn(src, dst, n);
}

}  // namespace quip::kernels
