// The Q8_0-operand kernels (Q8_0, Q4_0, Q5_0 by rows; Q4_0, IQ4_NL and MXFP4
// repacked; the one-column ones in dot_x86_q0.inc) on every code in every
// position: rows whose quants run through all 256 (Q8_0), 32 (Q5_0) or 16
// codes, shifted by one position per row, against operands at the extremes
// of their range (+-127), on every row count of the eight-row step and its
// tails, every column count, exactly. The repacked orders are held to the
// reference; the by-rows references sum in double, so those are held to a
// plain statement of ggml's vec_dot order here (lane k of eight: elements
// 4k..4k+3 of each block, acc[k] = fma(d_w * d_a, lane, acc[k]), then
// hsum_float_8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/dot.h"
#include "kernels/dot_k.h"
#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

int codes_of(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return 256;
    case GgmlType::Q5_0: return 32;
    default: return 16;
  }
}

// Row r of `rows` rows of n values: element e of block b has code
// (e + 32 b + r) % codes; d varies by block and row.
std::vector<uint8_t> every_code_rows(GgmlType type, size_t n, size_t rows) {
  const size_t row_size = row_bytes(type, n);
  std::vector<uint8_t> w(rows * row_size + 1);  // + 1: rows at odd addresses
  const int codes = codes_of(type);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < n / kBlock; ++b) {
      int code[kBlock];
      for (int e = 0; e < kBlock; ++e) code[e] = static_cast<int>((e + 32 * b + r) % codes);
      const uint16_t d = f32_to_f16(0.01f * static_cast<float>(1 + (b + r) % 7));
      uint8_t* at = w.data() + 1 + r * row_size;
      if (type == GgmlType::Q8_0) {
        BlockQ8_0 x{d, {}};
        for (int j = 0; j < 32; ++j) x.qs[j] = static_cast<int8_t>(code[j] - 128);
        store_block(at, b, x);
      } else if (type == GgmlType::Q5_0) {
        BlockQ5_0 x{d, {}, {}};
        uint32_t qh = 0;
        for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(code[j] >> 4) << j;
        std::memcpy(x.qh, &qh, 4);
        for (int j = 0; j < 16; ++j) {
          x.qs[j] = static_cast<uint8_t>((code[j] & 15) | ((code[j + 16] & 15) << 4));
        }
        store_block(at, b, x);
      } else if (type == GgmlType::MXFP4) {
        BlockMXFP4 x{static_cast<uint8_t>(118 + (b + r) % 7), {}};  // 2^-9 to 2^-3
        for (int j = 0; j < 16; ++j) x.qs[j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
        store_block(at, b, x);
      } else {
        BlockQ4_0 x{d, {}};  // IQ4_NL's layout too
        for (int j = 0; j < 16; ++j) x.qs[j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
        store_block(at, b, x);
      }
    }
  }
  return w;
}

// Operand columns of n values at +-127 (sign by element and column), Q8_0,
// at odd addresses.
std::vector<uint8_t> extreme_columns(size_t n, int ncols, size_t* stride) {
  *stride = row_bytes(GgmlType::Q8_0, n) + 3;
  std::vector<uint8_t> a(static_cast<size_t>(ncols) * *stride + 1);
  std::vector<float> x(n);
  for (int c = 0; c < ncols; ++c) {
    for (size_t i = 0; i < n; ++i) {
      x[i] = ((i * 7 + static_cast<size_t>(c)) % 3 == 0) ? -1.0f : 1.0f;
      if ((i + static_cast<size_t>(c)) % 32 == 5) x[i] *= 0.5f;  // not only +-127
    }
    to_operand(GgmlType::Q8_0, x.data(), a.data() + 1 + static_cast<size_t>(c) * *stride, n);
  }
  return a;
}

// The integer value of element j of a Q8_0, Q4_0 or Q5_0 block.
int value_at(GgmlType type, const uint8_t* block, int j) {
  if (type == GgmlType::Q8_0) return static_cast<int8_t>(block[2 + j]);
  const int off = type == GgmlType::Q5_0 ? 6 : 2;
  const int nibble = j < 16 ? block[off + j] & 15 : block[off + j - 16] >> 4;
  if (type == GgmlType::Q4_0) return nibble - 8;
  uint32_t qh;
  std::memcpy(&qh, block + 2, 4);
  return (nibble | static_cast<int>((qh >> j) & 1) << 4) - 16;
}

// ggml's vec_dot order for a row of n values against a Q8_0 column.
float vec_dot_order(GgmlType type, size_t n, const uint8_t* w, const uint8_t* a) {
  const size_t block_bytes = gguf::traits(type).block_bytes;
  float acc[8] = {};
  for (size_t b = 0; b < n / kBlock; ++b) {
    const uint8_t* x = w + b * block_bytes;
    const uint8_t* y = a + b * sizeof(BlockQ8_0);
    uint16_t dx, dy;
    std::memcpy(&dx, x, 2);
    std::memcpy(&dy, y, 2);
    const float d = f16_to_f32(dx) * f16_to_f32(dy);
    for (int k = 0; k < 8; ++k) {
      int lane = 0;
      for (int j = 4 * k; j < 4 * k + 4; ++j)
        lane += value_at(type, x, j) * static_cast<int8_t>(y[2 + j]);
      acc[k] = std::fma(d, static_cast<float>(lane), acc[k]);
    }
  }
  return hsum_float_8(acc);
}

struct Case {
  GgmlType type;
  Order order;
};

TEST(DotQ0, EveryCodeAtTheOperandsExtremesMatchesTheOrderExactly) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  const Case cases[] = {{GgmlType::Q8_0, Order::kRows},        {GgmlType::Q4_0, Order::kRows},
                        {GgmlType::Q5_0, Order::kRows},        {GgmlType::Q4_0, Order::kBlocks},
                        {GgmlType::Q4_0, Order::kBlocksBy4},   {GgmlType::IQ4_NL, Order::kBlocks},
                        {GgmlType::IQ4_NL, Order::kBlocksBy4}, {GgmlType::MXFP4, Order::kBlocks},
                        {GgmlType::MXFP4, Order::kBlocksBy4}};
  for (const Case& k : cases) {
    const bool by_rows = k.order == Order::kRows;
    for (size_t n : {size_t{32}, size_t{96}, size_t{576}}) {  // one block, an odd count, many
      constexpr size_t kRows = 17;  // two whole eight-row steps and one row
      const size_t row_size = row_bytes(k.type, n);
      const std::vector<uint8_t> w = every_code_rows(k.type, n, kRows);
      size_t stride = 0;
      const std::vector<uint8_t> a = extreme_columns(n, kMaxCols, &stride);
      const DotFn ref = dot_function(k.type, Isa::Reference, k.order);
      float want[kMaxCols * kRows];
      if (by_rows) {
        for (int c = 0; c < kMaxCols; ++c) {
          for (size_t r = 0; r < kRows; ++r) {
            want[c * kRows + r] = vec_dot_order(k.type, n, w.data() + 1 + r * row_size,
                                                a.data() + 1 + static_cast<size_t>(c) * stride);
          }
        }
      } else {
        ref(n, w.data() + 1, row_size, kRows, a.data() + 1, stride, kMaxCols, want, kRows);
      }
      for (Isa isa : isas) {
        const DotFn fast = dot_function(k.type, isa, k.order);
        ASSERT_NE(fast, ref) << isa_name(isa) << " " << gguf::traits(k.type).name;
        for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
          for (size_t nrows = 1; nrows <= kRows; ++nrows) {
            float got[kMaxCols * kRows];
            fast(n, w.data() + 1, row_size, nrows, a.data() + 1, stride, ncols, got, kRows);
            for (int c = 0; c < ncols; ++c) {
              for (size_t r = 0; r < nrows; ++r) {
                ASSERT_EQ(got[c * kRows + r], want[c * kRows + r])
                    << isa_name(isa) << " " << gguf::traits(k.type).name << " order "
                    << static_cast<int>(k.order) << " n=" << n << " col " << c << "/" << ncols
                    << " row " << r << "/" << nrows;
              }
            }
          }
        }
      }
    }
  }
}

// Random blocks (scales of both signs, weight quants of every bit
// pattern, operand quants over [-127, 127]: the quantizer's range, and the
// domain of the AVX2 kernels' sign trick, as of ggml's) in the batch tiles'
// shapes: row counts through several
// sixteen- and four-row steps and every tail, every column count, rows
// with gaps between them and at odd addresses, and column strides that are
// not a block multiple. Each output must be the same bits as its order's
// statement (the reference for the repacked order, vec_dot_order by rows)
// and must not depend on the rows and columns it was computed with.
std::vector<uint8_t> random_blocks(GgmlType type, size_t n, size_t rows, size_t stride,
                                   std::mt19937& rng) {
  std::vector<uint8_t> m(rows * stride + 1);  // + 1: rows at odd addresses
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  const size_t block_bytes = gguf::traits(type).block_bytes;
  for (size_t r = 0; r < rows; ++r) {
    uint8_t* row = m.data() + 1 + r * stride;
    for (size_t i = 0; i < stride; ++i) row[i] = static_cast<uint8_t>(byte(rng));
    for (size_t b = 0; b < n / kBlock; ++b) {
      if (type == GgmlType::MXFP4) {  // an E8M0 exponent: 2^-15 to 2^-1, some subnormal
        const int e = byte(rng);
        row[b * block_bytes] = static_cast<uint8_t>(e % 8 == 0 ? e / 8 % 3 : 112 + e % 15);
        continue;
      }
      const uint16_t d = f32_to_f16(scale(rng));
      std::memcpy(row + b * block_bytes, &d, 2);
    }
  }
  return m;
}

TEST(DotQ0, BatchTilesOfRandomBlocksMatchTheOrderExactly) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  const Case cases[] = {{GgmlType::Q8_0, Order::kRows},        {GgmlType::Q4_0, Order::kRows},
                        {GgmlType::Q5_0, Order::kRows},        {GgmlType::Q4_0, Order::kBlocks},
                        {GgmlType::Q4_0, Order::kBlocksBy4},   {GgmlType::IQ4_NL, Order::kBlocks},
                        {GgmlType::IQ4_NL, Order::kBlocksBy4}, {GgmlType::MXFP4, Order::kBlocks},
                        {GgmlType::MXFP4, Order::kBlocksBy4}};
  std::mt19937 rng(22);
  for (const Case& k : cases) {
    for (size_t n : {size_t{64}, size_t{352}}) {
      constexpr size_t kRows = 41;  // two sixteen-row steps, then a tail of nine
      const size_t w_stride = row_bytes(k.type, n) + 5;
      const size_t a_stride = row_bytes(GgmlType::Q8_0, n) + 7;
      const std::vector<uint8_t> w = random_blocks(k.type, n, kRows, w_stride, rng);
      std::vector<uint8_t> a = random_blocks(GgmlType::Q8_0, n, kMaxCols, a_stride, rng);
      for (int c = 0; c < kMaxCols; ++c) {
        for (size_t b = 0; b < n / kBlock; ++b) {
          uint8_t* q = a.data() + 1 + static_cast<size_t>(c) * a_stride + b * sizeof(BlockQ8_0) + 2;
          for (int j = 0; j < kBlock; ++j) q[j] = q[j] == 0x80 ? 0x81 : q[j];  // -128 -> -127
        }
      }
      float want[kMaxCols * kRows];
      if (k.order == Order::kRows) {
        for (int c = 0; c < kMaxCols; ++c) {
          for (size_t r = 0; r < kRows; ++r) {
            want[c * kRows + r] = vec_dot_order(k.type, n, w.data() + 1 + r * w_stride,
                                                a.data() + 1 + static_cast<size_t>(c) * a_stride);
          }
        }
      } else {
        dot_function(k.type, Isa::Reference, k.order)(
            n, w.data() + 1, w_stride, kRows, a.data() + 1, a_stride, kMaxCols, want, kRows);
      }
      for (Isa isa : isas) {
        const DotFn fast = dot_function(k.type, isa, k.order);
        for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
          for (size_t r0 : {size_t{0}, size_t{3}}) {  // tiles starting at rows 0 and 3
            for (size_t nrows = 1; r0 + nrows <= kRows; ++nrows) {
              float got[kMaxCols * kRows];
              const int c0 = kMaxCols - ncols;  // the last columns
              fast(n, w.data() + 1 + r0 * w_stride, w_stride, nrows,
                   a.data() + 1 + static_cast<size_t>(c0) * a_stride, a_stride, ncols, got, kRows);
              for (int c = 0; c < ncols; ++c) {
                for (size_t r = 0; r < nrows; ++r) {
                  ASSERT_EQ(got[c * kRows + r], want[(c0 + c) * kRows + r0 + r])
                      << isa_name(isa) << " " << gguf::traits(k.type).name << " order "
                      << static_cast<int>(k.order) << " n=" << n << " col " << c << "/" << ncols
                      << " row " << r0 + r << " of " << nrows << " from " << r0;
                }
              }
            }
          }
        }
      }
    }
  }
}

// The model above is the reference's product: both within rounding of the
// dot of the dequantized rows (so the exact test holds the kernels to a
// statement of the right sum).
TEST(DotQ0, TheVecDotOrderModelAgreesWithTheReference) {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0}) {
    const size_t n = 576;
    const std::vector<uint8_t> w = every_code_rows(type, n, 3);
    size_t stride = 0;
    const std::vector<uint8_t> a = extreme_columns(n, 2, &stride);
    float want[2 * 3];
    dot_function(type, Isa::Reference, Order::kRows)(n, w.data() + 1, row_bytes(type, n), 3,
                                                     a.data() + 1, stride, 2, want, 3);
    for (int c = 0; c < 2; ++c) {
      for (size_t r = 0; r < 3; ++r) {
        const float got = vec_dot_order(type, n, w.data() + 1 + r * row_bytes(type, n),
                                        a.data() + 1 + static_cast<size_t>(c) * stride);
        EXPECT_NEAR(got, want[c * 3 + r], 1e-4 * std::fabs(want[c * 3 + r]) + 1e-4)
            << gguf::traits(type).name;
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
