// Reference dequantization against the formats' definitions, and against
// the shared models: files quantized by llama.cpp from the same random
// weights must dequantize to nearly the same numbers.
#include "kernels/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "kernels/blocks.h"
#include "kernels/half.h"
#include "support/shared.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

TEST(Half, EveryHalfConvertsExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float f = f16_to_f32(bits);
    const float expected = static_cast<float>(std::bit_cast<_Float16>(bits));  // the compiler's
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(bits_from_f32(f), bits_from_f32(expected)) << "half 0x" << std::hex << h;
    EXPECT_EQ(f32_to_f16(f), bits) << "half 0x" << std::hex << h;  // and back
  }
}

TEST(Half, FloatToHalfRoundsAsTheCompiler) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 1'000'000; ++i) {
    const float f = f32_from_bits(any(rng));
    if (std::isnan(f)) continue;
    const auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(f32_to_f16(f), expected) << f;
  }
}

TEST(Half, Bfloat16IsTheHighHalfOfAFloat) {
  for (uint32_t b = 0; b < 65536; b += 7) {
    EXPECT_EQ(bits_from_f32(bf16_to_f32(static_cast<uint16_t>(b))), b << 16);
  }
}

template <class Block>
std::vector<float> dequantize(GgmlType type, const Block& b, size_t n) {
  std::vector<float> y(n);
  dequantize_row(type, &b, y.data(), n);
  return y;
}

// For each element and each 4-bit code: the value the format defines.
TEST(Dequantize, EveryCodeOfTheFourBitTypes) {
  const uint16_t d = f32_to_f16(0.5f), m = f32_to_f16(-1.25f);
  for (int k = 0; k < kBlock; ++k) {
    for (int code = 0; code < 16; ++code) {
      // Element k is the low nibble of byte k (k < 16) or the high nibble of byte k - 16.
      uint8_t qs[16] = {};
      qs[k % 16] = static_cast<uint8_t>(k < 16 ? code : code << 4);
      BlockQ4_0 a{d, {}};
      std::memcpy(a.qs, qs, 16);
      EXPECT_EQ(dequantize(GgmlType::Q4_0, a, 32)[k], 0.5f * static_cast<float>(code - 8));
      BlockQ4_1 b{d, m, {}};
      std::memcpy(b.qs, qs, 16);
      EXPECT_EQ(dequantize(GgmlType::Q4_1, b, 32)[k], 0.5f * static_cast<float>(code) - 1.25f);
      BlockIQ4_NL c{d, {}};
      std::memcpy(c.qs, qs, 16);
      EXPECT_EQ(dequantize(GgmlType::IQ4_NL, c, 32)[k], 0.5f * kIQ4Values[code]);
    }
  }
}

// MXFP4: each element's E2M1 value (OCP Microscaling: sign, two exponent
// bits, one mantissa bit) times 2^(e - 127), for every code and every
// exponent that keeps the products normal.
TEST(Dequantize, EveryCodeAndExponentOfMxfp4) {
  const auto e2m1 = [](int code) {
    const int exponent = (code >> 1) & 3, mantissa = code & 1;
    const float magnitude =
        exponent == 0 ? 0.5f * static_cast<float>(mantissa)
                      : std::ldexp(1.0f + 0.5f * static_cast<float>(mantissa), exponent - 1);
    return code & 8 ? -magnitude : magnitude;
  };
  for (int e = 2; e < 250; e += 7) {
    for (int k = 0; k < kBlock; ++k) {
      for (int code = 0; code < 16; ++code) {
        BlockMXFP4 b{static_cast<uint8_t>(e), {}};
        b.qs[k % 16] = static_cast<uint8_t>(k < 16 ? code : code << 4);
        EXPECT_EQ(dequantize(GgmlType::MXFP4, b, 32)[k], e2m1(code) * std::ldexp(1.0f, e - 127))
            << "e " << e << " code " << code;
      }
    }
  }
  EXPECT_EQ(e8m0_half(0), std::ldexp(1.0f, -128));  // subnormal, as ggml's table
  EXPECT_EQ(e8m0_half(1), std::ldexp(1.0f, -127));
}

TEST(Dequantize, EveryCodeOfTheFiveBitTypes) {
  const uint16_t d = f32_to_f16(0.25f), m = f32_to_f16(2.0f);
  for (int k = 0; k < kBlock; ++k) {
    for (int code = 0; code < 32; ++code) {
      uint8_t qs[16] = {};
      qs[k % 16] = static_cast<uint8_t>(k < 16 ? (code & 15) : (code & 15) << 4);
      const uint32_t qh = static_cast<uint32_t>(code >> 4) << k;  // bit k: element k's fifth bit
      BlockQ5_0 a{d, {}, {}};
      std::memcpy(a.qh, &qh, 4);
      std::memcpy(a.qs, qs, 16);
      EXPECT_EQ(dequantize(GgmlType::Q5_0, a, 32)[k], 0.25f * static_cast<float>(code - 16));
      BlockQ5_1 b{d, m, {}, {}};
      std::memcpy(b.qh, &qh, 4);
      std::memcpy(b.qs, qs, 16);
      EXPECT_EQ(dequantize(GgmlType::Q5_1, b, 32)[k], 0.25f * static_cast<float>(code) + 2.0f);
    }
  }
}

TEST(Dequantize, EveryByteOfQ8_0) {
  BlockQ8_0 b{f32_to_f16(-0.125f), {}};
  for (int v = -128; v < 128; ++v) {
    const int k = (v + 128) % kBlock;
    b.qs[k] = static_cast<int8_t>(v);
    EXPECT_EQ(dequantize(GgmlType::Q8_0, b, 32)[k], -0.125f * static_cast<float>(v));
  }
}

// Each element of a Q6_K block: the four low bits in ql, the two high in qh,
// at the positions the format gives for element k of 256.
TEST(Dequantize, Q6_KPlacesEveryElement) {
  for (int k = 0; k < kSuper; k += 5) {
    for (int code : {0, 1, 31, 32, 33, 63}) {
      BlockQ6_K b{};
      for (int8_t& s : b.scales) s = 2;
      b.d = f32_to_f16(0.5f);
      const int half = k / 128, r = k % 128, l = r % 32, quarter = r / 32;
      uint8_t& low = b.ql[64 * half + l + 32 * (quarter % 2)];
      low = static_cast<uint8_t>(quarter < 2 ? (code & 15) : (code & 15) << 4);
      b.qh[32 * half + l] = static_cast<uint8_t>((code >> 4) << (2 * quarter));
      const std::vector<float> y = dequantize(GgmlType::Q6_K, b, kSuper);
      EXPECT_EQ(y[k], 0.5f * 2.0f * static_cast<float>(code - 32)) << "element " << k;
    }
  }
}

// ---- The shared models ----------------------------------------------------

std::vector<float> tensor_values(const gguf::TensorInfo& t) {
  std::vector<float> y(t.n_elements);
  dequantize_row(t.type.type, t.data.data(), y.data(), t.n_elements);
  return y;
}

// sqrt(mean((a - b)^2)) / sqrt(mean(b^2))
double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    ref += double{b[i]} * b[i];
  }
  return ref == 0 ? std::sqrt(err) : std::sqrt(err / ref);
}

// The error a type's quantization may add to random normal weights; a wrong
// formula gives errors of the order of 1.
double tolerance(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return 0.01;
    case GgmlType::Q8_0: return 0.02;
    case GgmlType::Q6_K: return 0.04;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q5_K: return 0.08;
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q4_K:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS: return 0.15;
    case GgmlType::MXFP4: return 0.2;
    case GgmlType::Q3_K: return 0.3;
    case GgmlType::Q2_K: return 0.6;
    default: return 0;
  }
}

void expect_close_to(const char* reference_file, const char* file, const char* folder = "models") {
  SCOPED_TRACE(file);
  const auto dir = testing::shared_dir() / folder;
  auto ref = gguf::GgufFile::open((dir / reference_file).string());
  auto f = gguf::GgufFile::open((dir / file).string());
  ASSERT_TRUE(ref.ok() && f.ok());
  size_t compared = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    const gguf::TensorInfo* r = ref->find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    ASSERT_TRUE(can_dequantize(t.type.type)) << t.type.name;
    const double e = relative_rms(tensor_values(t), tensor_values(*r));
    // Both sides carry their own quantization error.
    EXPECT_LE(e, tolerance(t.type.type) + tolerance(r->type.type))
        << t.name << " " << t.type.name << " against " << r->type.name;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

TEST(DequantizeSharedModels, E64TypesAgreeWithF16) {
  QUIP_REQUIRE_SHARED();
  for (const char* f : {"tiny-llama-spm-e64-q8_0.gguf", "tiny-llama-spm-e64-q4_0.gguf",
                        "tiny-llama-spm-e64-q4_1.gguf", "tiny-llama-spm-e64-q5_0.gguf",
                        "tiny-llama-spm-e64-q5_1.gguf", "tiny-llama-spm-e64-iq4_nl.gguf"}) {
    expect_close_to("tiny-llama-spm-e64-f16.gguf", f);
  }
}

// llama-quantize's MXFP4_MOE: the experts in MXFP4, the rest in Q8_0.
TEST(DequantizeSharedModels, Mxfp4ExpertsAgreeWithF16) {
  QUIP_REQUIRE_SHARED();
  expect_close_to("tiny-gpt-oss-e64-f16.gguf", "tiny-gpt-oss-e64-mxfp4.gguf", "archs");
}

TEST(DequantizeSharedModels, E256KQuantsAgreeWithQ6_K) {
  QUIP_REQUIRE_SHARED();
  for (const char* f : {"tiny-llama-spm-e256-q5_k_m.gguf", "tiny-llama-spm-e256-q4_k_m.gguf",
                        "tiny-llama-spm-e256-q3_k_m.gguf", "tiny-llama-spm-e256-q2_k.gguf",
                        "tiny-llama-spm-e256-iq4_xs.gguf"}) {
    expect_close_to("tiny-llama-spm-e256-q6_k.gguf", f);
  }
}

TEST(DequantizeSharedModels, Bf16AndQ8_0Agree) {
  QUIP_REQUIRE_SHARED();
  expect_close_to("tiny-qwen3-e64-bf16.gguf", "tiny-qwen3-e64-q8_0.gguf");
  expect_close_to("tiny-qwen2-e64-f16.gguf", "tiny-qwen2-e64-q8_0.gguf");
}

}  // namespace
}  // namespace quip::kernels
