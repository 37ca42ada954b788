// The SIMD activation quantizers write the same bytes as the reference
// to_operand (ggml's quantize_row_q8_K_ref), on every instruction set this
// CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/dot.h"
#include "simd_isas.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

// Superblocks that probe each step: the magnitude ties (the first one of
// either sign sets the scale), halves that round to even, values past the
// clamp, zeros, a lone element, denormals (whose scale overflows), huge
// values, infinities and NaNs.
std::vector<float> probing_blocks() {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> blocks;
  for (float scale : {1.0f, 1e-3f, 40.0f, 1e-39f, 1e30f}) {
    std::vector<float> b(kSuper);
    for (float& v : b) v = normal(rng) * scale;
    blocks.push_back(b);
  }
  std::vector<float> tie(kSuper, 0.25f);
  tie[70] = -3.0f, tie[200] = 3.0f;  // -3 first: scale from -3
  blocks.push_back(tie);
  tie[70] = 3.0f, tie[200] = -3.0f;
  blocks.push_back(tie);
  std::vector<float> halves(kSuper);
  for (int j = 0; j < kSuper; ++j) halves[j] = (static_cast<float>(j % 255) - 127.0f) + 0.5f;
  halves[0] = -127.5f;  // the largest magnitude
  blocks.push_back(halves);
  blocks.emplace_back(kSuper, 0.0f);
  std::vector<float> lone(kSuper, 0.0f);
  lone[255] = -2.0f;
  blocks.push_back(lone);
  std::vector<float> all_same(kSuper, 5.0f);
  blocks.push_back(all_same);
  for (float odd :
       {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> b(kSuper);
    for (float& v : b) v = normal(rng);
    b[17] = odd;
    b[100] = -odd;
    blocks.push_back(b);
  }
  std::vector<float> flat;
  for (const auto& b : blocks) flat.insert(flat.end(), b.begin(), b.end());
  return flat;
}

TEST(Operand, SimdQ8_KIsTheReferencesBytes) {
  const std::vector<float> x = probing_blocks();
  const size_t n = x.size(), bytes = row_bytes(GgmlType::Q8_K, n);
  std::vector<uint8_t> expected(bytes);
  to_operand(GgmlType::Q8_K, x.data(), expected.data(), n);
  for (Isa isa : testing::simd_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const OperandFn convert = operand_function(GgmlType::Q8_K, isa);
    // Misaligned input and output too: activations are any floats, and
    // operand rows follow each other at any byte.
    for (size_t shift : {0u, 1u, 3u}) {
      std::vector<float> in(n + shift);
      std::memcpy(in.data() + shift, x.data(), n * sizeof(float));
      std::vector<uint8_t> out(bytes + shift + 1, 0xA5);
      convert(in.data() + shift, out.data() + shift, n);
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(out[shift + i], expected[i])
            << "shift " << shift << ", block " << i / sizeof(BlockQ8_K) << ", byte "
            << i % sizeof(BlockQ8_K);
      }
      EXPECT_EQ(out[shift + bytes], 0xA5) << "wrote past the row";
    }
  }
}

// Where no SIMD version exists the function is the reference.
TEST(Operand, EveryOperandTypeHasAFunctionOnEveryIsa) {
  std::vector<float> x(kSuper * 2);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> any(-2.0f, 2.0f);
  for (float& v : x) v = any(rng);
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                        GgmlType::Q8_1, GgmlType::Q8_K}) {
    std::vector<uint8_t> expected(row_bytes(type, x.size()));
    to_operand(type, x.data(), expected.data(), x.size());
    for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
      if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
      std::vector<uint8_t> out(expected.size());
      operand_function(type, isa)(x.data(), out.data(), x.size());
      EXPECT_EQ(out, expected) << gguf::traits(type).name << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace quip::kernels
