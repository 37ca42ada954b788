// Dot products: the reference against the formats' definitions, and every
// SIMD kernel this CPU can run against the reference, at every length that
// hits a tail, with 1..kMaxCols columns and at misaligned addresses.
#include "kernels/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/dequantize.h"
#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

constexpr GgmlType kAllTypes[] = {
    GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,
    GgmlType::Q4_0,   GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,
    GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,
    GgmlType::Q5_K,   GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::MXFP4};

// Where each block type keeps its half-precision scales: random bytes there
// are replaced by finite, modest values.
std::vector<size_t> half_offsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS: return {0};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case GgmlType::Q3_K: return {offsetof(BlockQ3_K, d)};
    case GgmlType::Q6_K: return {offsetof(BlockQ6_K, d)};
    default: return {};
  }
}

// A random row of n values of `type` (random bits for quantized blocks).
std::vector<uint8_t> random_row(GgmlType type, size_t n, std::mt19937& rng) {
  std::vector<uint8_t> row(row_bytes(type, n));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    std::vector<float> x(n);
    for (float& v : x) v = value(rng);
    to_operand(type, x.data(), row.data(), n);
    return row;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
  const size_t block_bytes = gguf::traits(type).block_bytes;
  std::uniform_int_distribution<int> exponent(112, 126);  // MXFP4's scales: 2^-15 to 2^-1
  for (size_t at = 0; at < row.size(); at += block_bytes) {
    for (size_t off : half_offsets(type)) {
      const uint16_t h = f32_to_f16(0.01f * value(rng));
      std::memcpy(row.data() + at + off, &h, 2);
    }
    if (type == GgmlType::MXFP4) row[at] = static_cast<uint8_t>(exponent(rng));
  }
  return row;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(n);
  for (float& v : x) v = value(rng);
  return x;
}

// sum |w_i| |a_i| in double: the scale of the rounding a dot product may do.
double magnitude(GgmlType type, const uint8_t* w, const std::vector<float>& a) {
  std::vector<float> wf(a.size());
  dequantize_row(type, w, wf.data(), a.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m += std::fabs(double{wf[i]} * a[i]);
  return m;
}

constexpr Order kOrders[] = {Order::kRows, Order::kBlocks, Order::kBlocksBy4, Order::kTinyBlas};

// Every type in every order (the same function but for Q4_K, Q2_K, F16 and
// BF16).
std::vector<std::pair<GgmlType, Order>> type_orders() {
  std::vector<std::pair<GgmlType, Order>> out;
  for (GgmlType type : kAllTypes) {
    for (Order order : kOrders) out.emplace_back(type, order);
  }
  return out;
}

std::string name_of(GgmlType t) {
  return std::string(gguf::traits(t).name);
}

TEST(Dot, OperandTypesAreGgmlsVecDotTypes) {
  EXPECT_EQ(operand_type(GgmlType::Q4_0), GgmlType::Q8_0);
  EXPECT_EQ(operand_type(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(operand_type(GgmlType::Q5_1), GgmlType::Q8_1);
  EXPECT_EQ(operand_type(GgmlType::IQ4_NL), GgmlType::Q8_0);
  EXPECT_EQ(operand_type(GgmlType::MXFP4), GgmlType::Q8_0);
  EXPECT_EQ(operand_type(GgmlType::Q4_K), GgmlType::Q8_K);
  EXPECT_EQ(operand_type(GgmlType::IQ4_XS), GgmlType::Q8_K);
  EXPECT_EQ(operand_type(GgmlType::F16), GgmlType::F16);
  EXPECT_EQ(operand_type(GgmlType::BF16), GgmlType::BF16);
  EXPECT_FALSE(has_dot(GgmlType::Q8_K));
}

TEST(Dot, Q8OperandsRoundTheLargestElementTo127) {
  std::vector<float> x(256, 0.0f);
  x[3] = -2.54f, x[40] = 1.0f, x[100] = 0.5f;
  std::vector<uint8_t> q(row_bytes(GgmlType::Q8_0, 256));
  to_operand(GgmlType::Q8_0, x.data(), q.data(), 256);
  BlockQ8_0 b0;
  std::memcpy(&b0, q.data(), sizeof b0);
  EXPECT_EQ(b0.qs[3], -127);
  EXPECT_FLOAT_EQ(f16_to_f32(b0.d), f16_to_f32(f32_to_f16(2.54f / 127)));
  BlockQ8_0 b1;
  std::memcpy(&b1, q.data() + sizeof(BlockQ8_0), sizeof b1);
  EXPECT_EQ(b1.qs[8], 127);  // x[40], alone in its block

  std::vector<uint8_t> k(row_bytes(GgmlType::Q8_K, 256));
  to_operand(GgmlType::Q8_K, x.data(), k.data(), 256);
  BlockQ8_K bk;
  std::memcpy(&bk, k.data(), sizeof bk);
  EXPECT_EQ(bk.qs[3], -127);
  EXPECT_EQ(bk.qs[40], static_cast<int8_t>(std::nearbyint(127 / 2.54f)));
  EXPECT_EQ(bk.bsums[0], -127);
  EXPECT_EQ(bk.bsums[2], bk.qs[40]);
  EXPECT_FLOAT_EQ(bk.d, 2.54f / 127);

  std::vector<uint8_t> k1(row_bytes(GgmlType::Q8_1, 32));
  to_operand(GgmlType::Q8_1, x.data(), k1.data(), 32);
  BlockQ8_1 b81;
  std::memcpy(&b81, k1.data(), sizeof b81);
  EXPECT_NEAR(f16_to_f32(b81.s), -2.54f, 0.01f);  // d * sum(q) = d * -127
}

// The reference against a plain float dot of the dequantized rows: the
// products must come out as the formats define them.
TEST(Dot, ReferenceEqualsTheDotOfDequantizedRows) {
  std::mt19937 rng(1);
  for (GgmlType type : kAllTypes) {
    const size_t n = 512;
    const std::vector<uint8_t> w = random_row(type, n, rng);
    const std::vector<float> x = random_floats(n, rng);
    const GgmlType op = operand_type(type);
    std::vector<uint8_t> a(row_bytes(op, n));
    to_operand(op, x.data(), a.data(), n);
    // The operand as the reference sees it, through the Q8 formats' definitions.
    std::vector<float> af(n);
    if (op == GgmlType::Q8_K) {
      for (size_t b = 0; b < n / kSuper; ++b) {
        BlockQ8_K blk;
        std::memcpy(&blk, a.data() + b * sizeof blk, sizeof blk);
        for (int j = 0; j < kSuper; ++j) af[b * kSuper + j] = blk.d * blk.qs[j];
      }
    } else if (op == GgmlType::Q8_1) {
      for (size_t b = 0; b < n / kBlock; ++b) {
        BlockQ8_1 blk;
        std::memcpy(&blk, a.data() + b * sizeof blk, sizeof blk);
        for (int j = 0; j < kBlock; ++j) af[b * kBlock + j] = f16_to_f32(blk.d) * blk.qs[j];
      }
    } else {
      dequantize_row(op, a.data(), af.data(), n);
    }
    std::vector<float> wf(n);
    dequantize_row(type, w.data(), wf.data(), n);
    double expected = 0;
    for (size_t i = 0; i < n; ++i) expected += double{wf[i]} * af[i];
    // Q4_1 and Q5_1 use the operand's rounded sum s for the offset term.
    const double tol = (type == GgmlType::Q4_1 || type == GgmlType::Q5_1) ? 2e-3 : 1e-5;
    for (Order order : kOrders) {
      float got = 0;
      dot_function(type, Isa::Reference, order)(n, w.data(), 0, 1, a.data(), 0, 1, &got, 1);
      EXPECT_NEAR(got, expected, tol * magnitude(type, w.data(), af) + 1e-6)
          << name_of(type) << " order " << static_cast<int>(order);
    }
  }
}

// llama.cpp's orders differ from one another in the last bits only: the
// repacked orders of Q4_K, Q2_K, Q4_0, IQ4_NL and MXFP4 and the tinyBLAS order of
// F32, F16 and BF16
// are other functions than by rows; every other type has one order.
TEST(Dot, SomeTypesHaveOrdersOfTheirOwn) {
  for (GgmlType type : kAllTypes) {
    const bool repacked = type == GgmlType::Q4_K || type == GgmlType::Q2_K ||
                          type == GgmlType::Q4_0 || type == GgmlType::IQ4_NL ||
                          type == GgmlType::MXFP4;
    const bool tinyblas = type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16;
    for (Isa isa : {Isa::Reference, detected_isa()}) {
      const DotFn rows = dot_function(type, isa, Order::kRows);
      EXPECT_EQ(rows != dot_function(type, isa, Order::kBlocks), repacked) << name_of(type);
      EXPECT_EQ(rows != dot_function(type, isa, Order::kBlocksBy4), repacked) << name_of(type);
      EXPECT_EQ(rows != dot_function(type, isa, Order::kTinyBlas), tinyblas) << name_of(type);
    }
  }
}

// A batch splits as llama.cpp's CPU backend splits it (see dot.h).
TEST(Dot, LlamaCppOrderSplitsABatchAsLlamaCppDoes) {
  const auto expect = [](GgmlType type, uint64_t rows, size_t n_in, size_t n, size_t lead,
                         Order lead_order, Order rest_order) {
    const BatchOrder got = llama_cpp_order(type, rows, n_in, n);
    EXPECT_EQ(got.lead, lead) << name_of(type) << " " << rows << "x" << n_in << " n=" << n;
    if (got.lead > 0) {
      EXPECT_EQ(got.lead_order, lead_order) << name_of(type);
    }
    if (got.lead < n) {
      EXPECT_EQ(got.rest_order, rest_order) << name_of(type);
    }
  };
  // Repacked: whole fours together, the rest alone; never with rows % 8.
  expect(GgmlType::Q4_K, 64, 256, 10, 8, Order::kBlocksBy4, Order::kBlocks);
  expect(GgmlType::Q2_K, 64, 256, 3, 0, Order::kBlocksBy4, Order::kBlocks);
  expect(GgmlType::Q4_K, 60, 256, 10, 0, Order::kRows, Order::kRows);
  expect(GgmlType::Q4_0, 64, 64, 6, 4, Order::kBlocksBy4, Order::kBlocks);
  expect(GgmlType::IQ4_NL, 32, 64, 1, 0, Order::kBlocksBy4, Order::kBlocks);
  expect(GgmlType::MXFP4, 2880, 2880, 5, 4, Order::kBlocksBy4, Order::kBlocks);
  expect(GgmlType::MXFP4, 36, 64, 5, 0, Order::kRows, Order::kRows);
  expect(GgmlType::Q4_0, 36, 64, 6, 0, Order::kRows, Order::kRows);
  // tinyBLAS: batches of two or more, rows % 4, whole chunks of a row.
  expect(GgmlType::F16, 64, 48, 2, 2, Order::kTinyBlas, Order::kRows);
  expect(GgmlType::F16, 64, 48, 1, 0, Order::kRows, Order::kRows);
  expect(GgmlType::F16, 50259, 64, 7, 0, Order::kRows, Order::kRows);
  expect(GgmlType::F16, 64, 40, 7, 0, Order::kRows, Order::kRows);
  expect(GgmlType::BF16, 64, 64, 5, 5, Order::kTinyBlas, Order::kRows);
  expect(GgmlType::BF16, 64, 48, 5, 0, Order::kRows, Order::kRows);
  expect(GgmlType::F32, 32, 16, 3, 3, Order::kTinyBlas, Order::kRows);
  expect(GgmlType::Q8_0, 64, 64, 9, 0, Order::kRows, Order::kRows);
}

// Every kernel of every instruction set this CPU runs, against the
// reference: lengths 1..1023 (or each block-aligned one), 1..4 columns,
// rows and operands at odd addresses.
TEST(Dot, SimdKernelsMatchTheReference) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  std::mt19937 rng(2);
  for (Isa isa : isas) {
    for (auto [type, order] : type_orders()) {
      const DotFn fast = dot_function(type, isa, order);
      const DotFn ref = dot_function(type, Isa::Reference, order);
      if (fast == ref) continue;  // no kernel of its own for this type and order
      // The references of the K-quants, Q4_1, Q5_1, IQ4_NL, MXFP4, the
      // float formats and repacked Q4_0 are llama.cpp's float orders
      // themselves: no slack.
      const bool repacked_32 = (type == GgmlType::Q4_0 || type == GgmlType::IQ4_NL) &&
                               (order == Order::kBlocks || order == Order::kBlocksBy4);
      const bool exact = operand_type(type) == GgmlType::Q8_K ||
                         operand_type(type) == GgmlType::Q8_1 || type == GgmlType::IQ4_NL ||
                         type == GgmlType::MXFP4 || type == GgmlType::F32 ||
                         type == GgmlType::F16 || type == GgmlType::BF16 || repacked_32;
      const size_t block = gguf::traits(type).block_size;
      const size_t step = block == 1 ? 1 : block;
      for (size_t n = step; n <= 1024; n += (n < 64 || block > 1) ? step : 13) {
        const GgmlType op = operand_type(type);
        const size_t misalign = n % 4;                   // 0..3 bytes off
        constexpr size_t kRows = 11;                     // a whole tile of 8 and a short one
        const size_t w_stride = row_bytes(type, n) + 1;  // every row at another alignment
        std::vector<uint8_t> w(kRows * w_stride + 4);
        for (size_t r = 0; r < kRows; ++r) {
          const std::vector<uint8_t> row = random_row(type, n, rng);
          std::memcpy(w.data() + misalign + r * w_stride, row.data(), row.size());
        }
        const size_t stride = row_bytes(op, n) + 3;  // odd: every column misaligned
        std::vector<uint8_t> a(kMaxCols * stride + 4);
        std::vector<std::vector<float>> xs;
        for (int c = 0; c < kMaxCols; ++c) {
          xs.push_back(random_floats(n, rng));
          to_operand(op, xs.back().data(), a.data() + 1 + c * stride, n);
        }
        for (int ncols = 1; ncols <= kMaxCols; ++ncols) {
          for (size_t nrows : {size_t{1}, kRows}) {
            float want[kMaxCols * kRows], got[kMaxCols * kRows];
            ref(n, w.data() + misalign, w_stride, nrows, a.data() + 1, stride, ncols, want, kRows);
            fast(n, w.data() + misalign, w_stride, nrows, a.data() + 1, stride, ncols, got, kRows);
            for (int c = 0; c < ncols; ++c) {
              for (size_t r = 0; r < nrows; ++r) {
                const uint8_t* row = w.data() + misalign + r * w_stride;
                const double tol = exact ? 0 : 1e-5 * magnitude(type, row, xs[c]) + 1e-6;
                ASSERT_NEAR(got[c * kRows + r], want[c * kRows + r], tol)
                    << isa_name(isa) << " " << name_of(type) << " order " << static_cast<int>(order)
                    << " n=" << n << " col " << c << "/" << ncols << " row " << r << "/" << nrows;
              }
            }
          }
        }
      }
    }
  }
}

// CPUID and XGETBV against the kernel's own account of this CPU.
TEST(Dot, DetectionAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags here";
  const auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (flags.count(n) == 0) return false;
    }
    return true;
  };
  Isa expected = Isa::Reference;
  if (has({"avx2", "fma", "f16c"})) expected = Isa::Avx2;
  if (expected == Isa::Avx2 &&
      has({"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni"})) {
    expected = Isa::Avx512;
  }
  EXPECT_EQ(isa_name(detected_isa()), isa_name(expected));
}

TEST(Dot, QuipKernelsChoosesTheTable) {
  setenv("QUIP_KERNELS", "ref", 1);
  auto ref = chosen_isa();
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(*ref, Isa::Reference);
  setenv("QUIP_KERNELS", "sse9", 1);
  auto bad = chosen_isa();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not one of ref, avx2, avx512"), std::string::npos);
  unsetenv("QUIP_KERNELS");
  auto best = chosen_isa();
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(*best, detected_isa());
}

}  // namespace
}  // namespace quip::kernels
