// Reference quantization: quantizing what llama.cpp's files dequantize to
// gives back their blocks byte for byte, and quantizing random data loses no
// more than the format's step.
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/reader.h"
#include "kernels/dequantize.h"
#include "support/shared.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

TEST(QuantizeSharedModels, RequantizingLlamaCppBlocksGivesThemBack) {
  QUIP_REQUIRE_SHARED();
  size_t checked = 0;
  for (const char* name : {"tiny-llama-spm-e64-q8_0.gguf", "tiny-llama-spm-e64-q4_0.gguf",
                           "tiny-llama-spm-e64-f16.gguf", "tiny-qwen2-e64-q8_0.gguf"}) {
    auto f = gguf::GgufFile::open((testing::shared_dir() / "models" / name).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const gguf::TensorInfo& t : f->tensors()) {
      if (!can_quantize(t.type.type) || t.type.type == GgmlType::F32) continue;
      std::vector<float> x(t.n_elements);
      dequantize_row(t.type.type, t.data.data(), x.data(), x.size());
      std::vector<std::byte> again(t.n_bytes);
      quantize_row(t.type.type, x.data(), again.data(), x.size());
      ASSERT_EQ(std::memcmp(again.data(), t.data.data(), t.n_bytes), 0)
          << name << ": " << t.name << " (" << t.type.name << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
}

TEST(Quantize, ErrorStaysWithinTheStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (float& v : x) v = dist(rng);
  x[5] = 0.0f;
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f);  // an all-zero block
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F16}) {
    const gguf::TypeTraits t = gguf::traits(type);
    std::vector<std::byte> q(x.size() / t.block_size * t.block_bytes);
    quantize_row(type, x.data(), q.data(), x.size());
    std::vector<float> y(x.size());
    dequantize_row(type, q.data(), y.data(), y.size());
    for (size_t b = 0; b < x.size(); b += 32) {
      float amax = 0;
      for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      // Half a step of the block's grid (a whole step for Q4_0, whose grid
      // stops one step short on the side opposite its largest magnitude),
      // plus the half-precision rounding of the scale.
      const float bound = type == GgmlType::Q8_0   ? amax / 127 * 0.5f
                          : type == GgmlType::Q4_0 ? amax / 8
                                                   : 0.0f;
      for (size_t i = b; i < b + 32; ++i) {
        EXPECT_LE(std::fabs(y[i] - x[i]), bound + amax * 2e-3f + 1e-7f)
            << t.name << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
