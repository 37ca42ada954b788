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

// 16 groups of 16: x = d * (scale & 15) * q - dmin * (scale >> 4), q two bits.
// Byte l of each 32-byte half of qs holds elements l, l+32, l+64, l+96 of
// the half's 128 (two bits each, lowest first).
void q2_k(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b.scales[is++];
          const float dl = d * static_cast<float>(sc & 0x0F),
                      ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// 16 groups of 16: x = d * (scale - 32) * (q - (high bit clear ? 4 : 0)),
// scales 6 bits: low nibbles in bytes 0..7, high pairs in bytes 8..11.
void q3_k(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = f16_to_f32(b.d);
    int scales[16];
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? b.scales[j] & 0x0F : b.scales[j - 8] >> 4;
      const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (low | (high << 4)) - 32;
    }
    const uint8_t* q = b.qs;
    int is = 0;
    uint8_t m = 1;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(scales[is++]);
          for (int l = 0; l < 16; ++l) {
            const int k = l + 16 * part;
            const int v = ((q[k] >> shift) & 3) - ((b.hmask[k + 0] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

// The 6-bit scale and min of group j (0..7) of a Q4_K / Q5_K block.
void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The scale and min of groups g and g + 1 (a pair that shares 32 bytes of
// qs, low nibbles then high) of a Q4_K / Q5_K block, times d and dmin.
struct GroupPair {
  float d1, m1, d2, m2;
};
GroupPair group_pair(int g, const uint8_t* scales, float d, float dmin) {
  uint8_t sc1, mn1, sc2, mn2;
  scale_min_k4(g, scales, &sc1, &mn1);
  scale_min_k4(g + 1, scales, &sc2, &mn2);
  return {d * sc1, dmin * mn1, d * sc2, dmin * mn2};
}

// 8 groups of 32: x = d * scale * q - dmin * min.
void q4_k(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    for (int g = 0; g < 8; g += 2, q += 32) {
      const GroupPair p = group_pair(g, b.scales, d, dmin);
      for (int l = 0; l < 32; ++l) *y++ = p.d1 * static_cast<float>(q[l] & 0x0F) - p.m1;
      for (int l = 0; l < 32; ++l) *y++ = p.d2 * static_cast<float>(q[l] >> 4) - p.m2;
    }
  }
}

// As Q4_K with a fifth bit from qh (bit g of byte l for group g).
void q5_k(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    for (int g = 0; g < 8; g += 2, q += 32) {
      const GroupPair p = group_pair(g, b.scales, d, dmin);
      const uint8_t u1 = static_cast<uint8_t>(1 << g), u2 = static_cast<uint8_t>(2 << g);
      for (int l = 0; l < 32; ++l) {
        *y++ = p.d1 * static_cast<float>((q[l] & 0x0F) + ((b.qh[l] & u1) ? 16 : 0)) - p.m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = p.d2 * static_cast<float>((q[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - p.m2;
      }
    }
  }
}

// 16 groups of 16: x = d * scale * (q - 32), q six bits (four in ql, two in qh).
void q6_k(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = f16_to_f32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

// 8 groups of 32: x = d * (scale - 32) * grid[q], scales six bits.
void iq4_xs(const void* src, float* y, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i) {
    const auto b = load_block<BlockIQ4_XS>(src, i);
    const float d = f16_to_f32(b.d);
    const uint8_t* q = b.qs;
    for (int g = 0; g < 8; ++g, y += 32, q += 16) {
      const int ls =
          ((b.scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | (((b.scales_h >> (2 * g)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIQ4Values[q[j] & 0x0F];
        y[j + 16] = dl * kIQ4Values[q[j] >> 4];
      }
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
    case GgmlType::Q2_K: return q2_k;
    case GgmlType::Q3_K: return q3_k;
    case GgmlType::Q4_K: return q4_k;
    case GgmlType::Q5_K: return q5_k;
    case GgmlType::Q6_K: return q6_k;
    case GgmlType::IQ4_XS: return iq4_xs;
    default: return nullptr;
  }
}

}  // namespace

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
