// Block layouts of the quantized ggml tensor types, as stored in GGUF files
// (ggml-common.h). A block covers kBlock elements (32, or 256 for the
// K-quants and IQ4_XS); `d` and `dmin` are IEEE half-precision bit patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace quip::kernels {

inline constexpr int kBlock = 32;   // QK4_0, QK8_0, QK4_NL, ...
inline constexpr int kSuper = 256;  // QK_K

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kBlock / 2];  // low nibbles: elements 0..15, high nibbles: 16..31
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[kBlock / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // the fifth bit of each element, little-endian bit j for element j
  uint8_t qs[kBlock / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kBlock / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kBlock];
};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kBlock / 2];  // indices into kIQ4Values
};
struct BlockMXFP4 {
  uint8_t e;               // the scale 2^(e - 127), an E8M0 exponent
  uint8_t qs[kBlock / 2];  // indices into kMXFP4Values, nibbles as Q4_0's
};
struct BlockQ2_K {
  uint8_t scales[kSuper / 16];  // low nibble scale, high nibble min, per 16 elements
  uint8_t qs[kSuper / 4];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kSuper / 8];  // the third bit
  uint8_t qs[kSuper / 4];     // the low two bits
  uint8_t scales[12];         // sixteen 6-bit scales
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // eight 6-bit scales and eight 6-bit mins
  uint8_t qs[kSuper / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kSuper / 8];
  uint8_t qs[kSuper / 2];
};
struct BlockQ6_K {
  uint8_t ql[kSuper / 2];  // low four bits
  uint8_t qh[kSuper / 4];  // high two bits
  int8_t scales[kSuper / 16];
  uint16_t d;
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;  // high two bits of eight 6-bit scales
  uint8_t scales_l[kSuper / 64];
  uint8_t qs[kSuper / 2];
};

// The activation formats of ggml's integer dot products (its "vec_dot_type"
// of each weight type): 8-bit blocks of 32 with a half-precision scale, plus
// s = d * sum(qs) for the weights with an offset (Q4_1, Q5_1); 8-bit blocks
// of 256 with a float scale and sums per 16 for the K-quants and IQ4_XS.
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[kBlock];
};
struct BlockQ8_K {
  float d;
  int8_t qs[kSuper];
  int16_t bsums[kSuper / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockIQ4_XS) == 136);

// Block i of a row, read and written by memcpy: a tensor in a GGUF file is
// only as aligned as its offset, and a row inside it may start anywhere.
template <class Block>
Block load_block(const void* src, size_t i) {
  Block b;
  std::memcpy(&b, static_cast<const char*>(src) + i * sizeof(Block), sizeof(Block));
  return b;
}

template <class Block>
void store_block(void* dst, size_t i, const Block& b) {
  std::memcpy(static_cast<char*>(dst) + i * sizeof(Block), &b, sizeof(Block));
}

// The 6-bit scale and min of group j (0..7) of a Q4_K or Q5_K block's 12
// scale bytes (ggml's get_scale_min_k4): for j < 4 the low six bits of bytes
// j and j + 4; for j >= 4 the nibbles of byte j + 4 with the top two bits of
// bytes j - 4 and j.
inline void scale_min_k4(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// MXFP4's elements (OCP Microscaling FP4, E2M1) doubled, as ggml's
// kvalues_mxfp4: its scale is halved to match (e8m0_half).
inline constexpr int8_t kMXFP4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// Half an E8M0 scale, 2^(e - 128), as ggml_e8m0_to_fp32_half (e = 255,
// MXFP4's NaN, read as the number its bits make).
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The non-linear 4-bit grid of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace quip::kernels
