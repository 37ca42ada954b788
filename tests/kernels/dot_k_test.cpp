// The K-quant kernels (dot_x86_k.inc: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS;
// dot_x86.inc: Q4_K by rows) against the
// reference at every code and at the operand's extremes, bit for bit: their
// integer parts are exact and their float steps are the reference's, so any
// difference is a wrong integer (a decoding slip or a saturated int16 sum).
// Dot.SimdKernelsMatchTheReference covers random blocks at every length,
// column count and alignment.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/dot.h"
#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

struct Case {
  GgmlType type;
  Order order;
};
constexpr Case kCases[] = {
    {GgmlType::Q2_K, Order::kRows},      {GgmlType::Q2_K, Order::kBlocks},
    {GgmlType::Q2_K, Order::kBlocksBy4}, {GgmlType::Q3_K, Order::kRows},
    {GgmlType::Q5_K, Order::kRows},      {GgmlType::IQ4_XS, Order::kRows},
    {GgmlType::Q4_K, Order::kRows},      {GgmlType::Q4_K, Order::kBlocks},
    {GgmlType::Q4_K, Order::kBlocksBy4}, {GgmlType::Q6_K, Order::kRows},
};

// Offsets of each block's half-precision scales.
std::vector<size_t> halves(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case GgmlType::Q3_K: return {offsetof(BlockQ3_K, d)};
    case GgmlType::Q4_K: return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case GgmlType::Q5_K: return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case GgmlType::Q6_K: return {offsetof(BlockQ6_K, d)};
    default: return {offsetof(BlockIQ4_XS, d)};
  }
}

constexpr size_t kN = 2 * kSuper;  // two superblocks: the float steps chain

// 256 rows in which byte j of row r is (j * 7 + r) % 256: every byte
// position of a block holds every value in some row, so every quant, high
// bit, scale and min code meets every element position. Every byte is 0xFF
// in the last row (all quants and scales at their largest) and 0 in the
// one before. The half-precision fields are finite.
std::vector<uint8_t> every_code_rows(GgmlType type, size_t* stride) {
  *stride = row_bytes(type, kN);
  std::vector<uint8_t> w(256 * *stride);
  const size_t block = gguf::traits(type).block_bytes;
  for (size_t r = 0; r < 256; ++r) {
    uint8_t* row = w.data() + r * *stride;
    for (size_t j = 0; j < *stride; ++j) {
      row[j] = r == 255 ? 0xFF : r == 254 ? 0 : static_cast<uint8_t>((j * 7 + r) % 256);
    }
    for (size_t at = 0; at < *stride; at += block) {
      for (size_t off : halves(type)) {
        const uint16_t h = f32_to_f16(0.001f * static_cast<float>(1 + (r + at + off) % 13));
        std::memcpy(row + at + off, &h, 2);
      }
    }
  }
  return w;
}

// A Q8_K row with the given quants (its sums and a scale).
std::vector<uint8_t> q8k_row(const std::vector<int8_t>& q, float d) {
  std::vector<uint8_t> row(row_bytes(GgmlType::Q8_K, q.size()));
  for (size_t b = 0; b < q.size() / kSuper; ++b) {
    BlockQ8_K blk{};
    blk.d = d;
    for (int j = 0; j < kSuper; ++j) blk.qs[j] = q[b * kSuper + j];
    for (int g = 0; g < kSuper / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += blk.qs[16 * g + j];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
    std::memcpy(row.data() + b * sizeof blk, &blk, sizeof blk);
  }
  return row;
}

// Columns at the operand's extremes: all 127, all -127, alternating signs,
// runs of four of each sign, random, and the largest magnitudes against
// zeros.
std::vector<std::vector<uint8_t>> extreme_columns() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<std::vector<int8_t>> cols(kMaxCols, std::vector<int8_t>(kN));
  for (size_t i = 0; i < kN; ++i) {
    cols[0][i] = 127;
    cols[1][i] = -127;
    cols[2][i] = i % 2 ? 127 : -127;
    cols[3][i] = (i / 4) % 2 ? -127 : 127;
    cols[4][i] = static_cast<int8_t>(q(rng));
    cols[5][i] = i % 3 ? 0 : -127;
    cols[6][i] = static_cast<int8_t>(i % 255 - 127);
    cols[7][i] = static_cast<int8_t>(q(rng) / 16);
  }
  std::vector<std::vector<uint8_t>> out;
  for (size_t c = 0; c < cols.size(); ++c) out.push_back(q8k_row(cols[c], 0.01f * (1 + c)));
  return out;
}

TEST(DotK, KernelsEqualTheReferenceAtEveryCodeAndTheOperandsExtremes) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  const std::vector<std::vector<uint8_t>> cols = extreme_columns();
  const size_t a_stride = cols[0].size() + 1;  // odd: every column misaligned
  std::vector<uint8_t> a(kMaxCols * a_stride + 1);
  for (int c = 0; c < kMaxCols; ++c) {
    std::memcpy(a.data() + 1 + c * a_stride, cols[c].data(), cols[c].size());
  }
  for (const Case& k : kCases) {
    size_t stride = 0;
    const std::vector<uint8_t> w = every_code_rows(k.type, &stride);
    const DotFn ref = dot_function(k.type, Isa::Reference, k.order);
    for (Isa isa : isas) {
      const DotFn fast = dot_function(k.type, isa, k.order);
      ASSERT_NE(fast, ref) << isa_name(isa) << " has no kernel for " << gguf::traits(k.type).name;
      // Every column count (the kernels' tiles of four and eight and their
      // tails), and all 256 rows or 255 (an odd last row).
      for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
        const size_t nrows = ncols % 2 ? 255 : 256;
        std::vector<float> want(256 * kMaxCols, -1.0f), got(256 * kMaxCols, -1.0f);
        ref(kN, w.data(), stride, nrows, a.data() + 1, a_stride, ncols, want.data(), 256);
        fast(kN, w.data(), stride, nrows, a.data() + 1, a_stride, ncols, got.data(), 256);
        for (int c = 0; c < kMaxCols; ++c) {
          for (size_t r = 0; r < 256; ++r) {
            // Bit for bit (a zero's sign too); outputs past the columns and rows untouched.
            ASSERT_EQ(std::bit_cast<uint32_t>(got[c * 256 + r]),
                      std::bit_cast<uint32_t>(want[c * 256 + r]))
                << got[c * 256 + r] << " != " << want[c * 256 + r] << " " << isa_name(isa) << " "
                << gguf::traits(k.type).name << " order " << static_cast<int>(k.order) << " row "
                << r << " column " << c << " of " << ncols;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
