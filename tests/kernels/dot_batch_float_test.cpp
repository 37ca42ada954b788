// The SIMD paths of F16 and BF16 prompts (batches) against their scalar
// references, bit for bit: the activations' conversion to halves and
// bfloat16 (operand_function), and tinyBLAS's order over the row counts,
// lengths and column counts the AVX-512 kernels split differently (blocks
// of rows, slabs of 512 elements, partial chunks), with special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/dot.h"
#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Floats that probe every rounding rule: a sweep of the whole bit space,
// both signs of zero, subnormals, the half and bfloat16 overflow edges,
// ties, infinities and NaNs with payloads.
std::vector<float> probe_floats() {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099)
    x.push_back(float_of(static_cast<uint32_t>(b)));
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x33000000u, 0x33000001u,
                     0x387FC000u, 0x38800000u, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x47800000u,
                     0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x7F7FFFFFu, 0x7F7F8000u, 0x7F800000u,
                     0xFF800000u, 0x7F800001u, 0x7FC00000u, 0xFFC12345u, 0x7FBFFFFFu}) {
    x.push_back(float_of(b));
  }
  return x;
}

TEST(BatchFloat, ToOperandFunctionsRoundAsToOperand) {
  const std::vector<float> x = probe_floats();
  std::vector<Isa> isas = testing::simd_isas();
  isas.push_back(Isa::Reference);
  for (Isa isa : isas) {
    for (GgmlType op : {GgmlType::F16, GgmlType::BF16, GgmlType::F32}) {
      const OperandFn convert = operand_function(op, isa);
      // Every length up to 40 at every offset (tails, misaligned rows), then the sweep.
      for (size_t n = 1; n <= 40; ++n) {
        for (size_t off : {size_t{0}, size_t{1}, size_t{3}}) {
          std::vector<uint8_t> want(row_bytes(op, n)), got(row_bytes(op, n) + 1);
          to_operand(op, x.data() + x.size() - 40 + off % 3, want.data(), n - off % 2);
          convert(x.data() + x.size() - 40 + off % 3, got.data() + 1, n - off % 2);
          ASSERT_EQ(std::memcmp(want.data(), got.data() + 1, row_bytes(op, n - off % 2)), 0)
              << isa_name(isa) << " n=" << n << " off=" << off;
        }
      }
      std::vector<uint8_t> want(row_bytes(op, x.size())), got(want.size());
      to_operand(op, x.data(), want.data(), x.size());
      convert(x.data(), got.data(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t e = want.size() / x.size();
        ASSERT_EQ(std::memcmp(want.data() + e * i, got.data() + e * i, e), 0)
            << isa_name(isa) << " " << gguf::traits(op).name << " 0x" << std::hex << bits_of(x[i]);
      }
    }
  }
}

// Equal bits, or both NaN (payloads are the compiler's choice of fma
// operand order, in the reference too).
bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b);
}

// A value of `type` (F16 or BF16) as raw bits: random modest values, with
// specials mixed in at rate `special`.
uint16_t random_value(GgmlType type, std::mt19937& rng, double special) {
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> value(0.0f, 1.0f);
  float f = value(rng);
  if (u(rng) < special) {
    switch (rng() % 7) {
      case 0: f = 0.0f; break;
      case 1: f = -0.0f; break;
      case 2: f = std::numeric_limits<float>::infinity(); break;
      case 3: f = -std::numeric_limits<float>::infinity(); break;
      case 4: f = std::numeric_limits<float>::quiet_NaN(); break;
      case 5: f = type == GgmlType::F16 ? 3e-7f : 1e-39f; break;     // subnormal
      default: f = type == GgmlType::F16 ? 60000.0f : 1e38f; break;  // sums overflow
    }
  }
  if (type == GgmlType::F16) return f32_to_f16(f);
  uint16_t h;
  to_operand(GgmlType::BF16, &f, &h, 1);
  return h;
}

// Every batch kernel of F16 and BF16 weights (tinyBLAS's order) against
// the reference: rows 1..70 (blocks of rows and every remainder, a 64-row
// tile), lengths across the 512-element slabs and partial chunks, 1..8
// columns, rows and columns at odd addresses, with and without specials.
TEST(BatchFloat, TinyBlasKernelsMatchTheReferenceBitForBit) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  std::mt19937 rng(11);
  constexpr size_t kRows = 70;
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    const DotFn ref = dot_function(type, Isa::Reference, Order::kTinyBlas);
    for (size_t n : {size_t{16}, size_t{32}, size_t{48}, size_t{511}, size_t{512}, size_t{530},
                     size_t{1024}, size_t{1040}, size_t{2048}}) {
      for (double special : {0.0, 0.02}) {
        const size_t w_stride = 2 * n + 2 + 1;  // odd: every row at another alignment
        const size_t a_stride = 2 * n + 3;
        std::vector<uint8_t> w(kRows * w_stride + 1), a(kMaxCols * a_stride + 1);
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < n; ++i) {
            const uint16_t v = random_value(type, rng, special);
            std::memcpy(w.data() + 1 + r * w_stride + 2 * i, &v, 2);
          }
        }
        for (int c = 0; c < kMaxCols; ++c) {
          for (size_t i = 0; i < n; ++i) {
            const uint16_t v = random_value(type, rng, special);
            std::memcpy(a.data() + 1 + c * a_stride + 2 * i, &v, 2);
          }
        }
        for (Isa isa : isas) {
          const DotFn fast = dot_function(type, isa, Order::kTinyBlas);
          for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
            for (size_t nrows : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{7},
                                 size_t{16}, size_t{64}, kRows}) {
              std::vector<float> want(kMaxCols * kRows), got(kMaxCols * kRows);
              ref(n, w.data() + 1, w_stride, nrows, a.data() + 1, a_stride, ncols, want.data(),
                  kRows);
              fast(n, w.data() + 1, w_stride, nrows, a.data() + 1, a_stride, ncols, got.data(),
                   kRows);
              for (int c = 0; c < ncols; ++c) {
                for (size_t r = 0; r < nrows; ++r) {
                  const float g = got[c * kRows + r], e = want[c * kRows + r];
                  ASSERT_TRUE(same(g, e))
                      << isa_name(isa) << " " << gguf::traits(type).name << " n=" << n
                      << " special=" << special << " col " << c << "/" << ncols << " row " << r
                      << "/" << nrows << ": " << g << " vs " << e;
                }
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
