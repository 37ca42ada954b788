// The Q4_1, Q5_1, IQ4_NL- and MXFP4-by-rows kernels (dot_x86_q1.inc) on every code
// in every position: rows whose quants run through all 16 (or 32) codes,
// shifted by one position per row, against operands at the extremes of
// their range (+-127, the largest products the integer dots see), on every
// row count of the four-row step and its tails, every column count. The
// random-row test in dot_test.cpp covers lengths and alignments; this one
// covers the codes and the extremes, exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/dot.h"
#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

// Row r of `rows` rows of n values: element e of block b has code
// (e + b + r) % codes; d and m vary by block.
std::vector<uint8_t> every_code_rows(GgmlType type, size_t n, size_t rows) {
  const size_t row_size = row_bytes(type, n);
  std::vector<uint8_t> w(rows * row_size + 1);  // + 1: rows at odd addresses
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < n / kBlock; ++b) {
      uint8_t code[kBlock];
      const int codes = type == GgmlType::Q5_1 ? 32 : 16;
      for (int e = 0; e < kBlock; ++e) code[e] = static_cast<uint8_t>((e + b + r) % codes);
      const uint16_t d = f32_to_f16(0.01f * static_cast<float>(1 + (b + r) % 7));
      const uint16_t m = f32_to_f16(-0.05f * static_cast<float>((b + 2 * r) % 5));
      uint8_t* at = w.data() + 1 + r * row_size;
      if (type == GgmlType::Q4_1) {
        BlockQ4_1 x{d, m, {}};
        for (int j = 0; j < 16; ++j) x.qs[j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
        store_block(at, b, x);
      } else if (type == GgmlType::Q5_1) {
        BlockQ5_1 x{d, m, {}, {}};
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
        BlockIQ4_NL x{d, {}};
        for (int j = 0; j < 16; ++j) x.qs[j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
        store_block(at, b, x);
      }
    }
  }
  return w;
}

// Operand columns of n values at +-127 (sign by element and column), in the
// type's operand format, at odd addresses.
std::vector<uint8_t> extreme_columns(GgmlType operand, size_t n, int ncols, size_t* stride) {
  *stride = row_bytes(operand, n) + 3;
  std::vector<uint8_t> a(static_cast<size_t>(ncols) * *stride + 1);
  std::vector<float> x(n);
  for (int c = 0; c < ncols; ++c) {
    for (size_t i = 0; i < n; ++i)
      x[i] = ((i * 7 + static_cast<size_t>(c)) % 3 == 0) ? -1.0f : 1.0f;
    to_operand(operand, x.data(), a.data() + 1 + static_cast<size_t>(c) * *stride, n);
  }
  return a;
}

TEST(DotQ1, EveryCodeAtTheOperandsExtremesMatchesTheReferenceExactly) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    for (size_t n : {size_t{32}, size_t{96}, size_t{576}}) {  // one block, an odd count, many
      constexpr size_t kRows = 9;  // two whole four-row steps and one row
      const std::vector<uint8_t> w = every_code_rows(type, n, kRows);
      size_t stride = 0;
      const std::vector<uint8_t> a = extreme_columns(operand_type(type), n, kMaxCols, &stride);
      const DotFn ref = dot_function(type, Isa::Reference, Order::kRows);
      for (Isa isa : isas) {
        const DotFn fast = dot_function(type, isa, Order::kRows);
        ASSERT_NE(fast, ref) << isa_name(isa) << " " << gguf::traits(type).name;
        for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
          for (size_t nrows = 1; nrows <= kRows; ++nrows) {
            float want[kMaxCols * kRows], got[kMaxCols * kRows];
            ref(n, w.data() + 1, row_bytes(type, n), nrows, a.data() + 1, stride, ncols, want,
                kRows);
            fast(n, w.data() + 1, row_bytes(type, n), nrows, a.data() + 1, stride, ncols, got,
                 kRows);
            for (int c = 0; c < ncols; ++c) {
              for (size_t r = 0; r < nrows; ++r) {
                ASSERT_EQ(got[c * kRows + r], want[c * kRows + r])
                    << isa_name(isa) << " " << gguf::traits(type).name << " n=" << n << " col " << c
                    << "/" << ncols << " row " << r << "/" << nrows;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
