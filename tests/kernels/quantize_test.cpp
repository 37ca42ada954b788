// Reference quantization: quip writes the bytes llama.cpp's reference
// quantizers write (goldens computed with ggml-quants.c), quantizing what
// llama.cpp's files dequantize to gives back their blocks (byte for byte for
// the formats with one scale, nearly always for the K-quants, whose scales
// come from a search), and quantizing random data loses no more than the
// format's step.
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "base/check.h"
#include "gguf/reader.h"
#include "kernels/blocks.h"
#include "kernels/dequantize.h"
#include "kernels/half.h"
#include "support/shared.h"

namespace quip::kernels {
namespace {

using gguf::GgmlType;

TEST(QuantizeSharedModels, RequantizingLlamaCppBlocksGivesThemBack) {
  QUIP_REQUIRE_SHARED();
  size_t checked = 0;
  for (const char* name : {"tiny-llama-spm-e64-q8_0.gguf", "tiny-llama-spm-e64-q4_0.gguf",
                           "tiny-llama-spm-e64-q5_0.gguf", "tiny-llama-spm-e64-f16.gguf",
                           "tiny-qwen2-e64-q8_0.gguf", "tiny-llama-spm-e64-q4_1.gguf",
                           "tiny-llama-spm-e64-q5_1.gguf", "tiny-qwen3-e64-bf16.gguf"}) {
    auto f = gguf::GgufFile::open((testing::shared_dir() / "models" / name).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const gguf::TensorInfo& t : f->tensors()) {
      if (!can_quantize(t.type.type) || t.type.type == GgmlType::F32 ||
          t.type.type == GgmlType::Q4_K || t.type.type == GgmlType::Q6_K) {
        continue;  // the K-quants have their own test below
      }
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
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::F16}) {
    const gguf::TypeTraits t = gguf::traits(type);
    std::vector<std::byte> q(x.size() / t.block_size * t.block_bytes);
    quantize_row(type, x.data(), q.data(), x.size());
    std::vector<float> y(x.size());
    dequantize_row(type, q.data(), y.data(), y.size());
    for (size_t b = 0; b < x.size(); b += 32) {
      float amax = 0;
      for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      // Half a step of the block's grid (a whole step for Q4_0 and Q5_0,
      // whose grids stop one step short on the side opposite their largest
      // magnitude), plus the half-precision rounding of the scale.
      const float bound = type == GgmlType::Q8_0   ? amax / 127 * 0.5f
                          : type == GgmlType::Q4_0 ? amax / 8
                          : type == GgmlType::Q5_0 ? amax / 16
                                                   : 0.0f;
      for (size_t i = b; i < b + 32; ++i) {
        EXPECT_LE(std::fabs(y[i] - x[i]), bound + amax * 2e-3f + 1e-7f)
            << t.name << " element " << i;
      }
    }
  }
}

// The K-quants' scales come from a search that need not find the scale a
// block already has (fp16 rounding of d moves the candidate grids), so
// requantizing llama.cpp's blocks gives most of them back, not all: measured
// on the layers of these files, 99.9% of Q4_K blocks byte for byte and
// 99.97% of Q6_K blocks value for value (== on floats: zeros may change
// sign), but only 80% of Q6_K blocks byte for byte, since d * scale has two
// signs to choose from.
TEST(QuantizeSharedModels, RequantizingLlamaCppKQuantBlocksGivesMostOfThemBack) {
  QUIP_REQUIRE_SHARED();
  struct Count {
    size_t blocks = 0, same_bytes = 0, same_values = 0;
  };
  std::map<GgmlType, Count> counts;
  for (const char* name : {"tiny-llama-spm-e256-q4_k_m.gguf", "tiny-qwen2-e256-q4_k_m.gguf",
                           "tiny-llama-spm-e256-q6_k.gguf", "tiny-qwen3-e256-q6_k.gguf"}) {
    auto f = gguf::GgufFile::open((testing::shared_dir() / "models" / name).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const gguf::TensorInfo& t : f->tensors()) {
      const GgmlType type = t.type.type;
      if (type != GgmlType::Q4_K && type != GgmlType::Q6_K) continue;
      if (t.name == "token_embd.weight" || t.name == "output.weight") continue;  // time
      const gguf::TypeTraits tr = gguf::traits(type);
      std::vector<float> x(t.n_elements), y(t.n_elements);
      dequantize_row(type, t.data.data(), x.data(), x.size());
      std::vector<std::byte> again(t.n_bytes);
      quantize_row(type, x.data(), again.data(), x.size());
      dequantize_row(type, again.data(), y.data(), y.size());
      Count& c = counts[type];
      for (size_t b = 0; b < t.n_elements / tr.block_size; ++b) {
        ++c.blocks;
        c.same_bytes += std::memcmp(again.data() + b * tr.block_bytes,
                                    t.data.data() + b * tr.block_bytes, tr.block_bytes) == 0;
        const auto first = x.begin() + static_cast<ptrdiff_t>(b * tr.block_size);
        c.same_values += std::equal(first, first + tr.block_size,
                                    y.begin() + static_cast<ptrdiff_t>(b * tr.block_size));
      }
    }
  }
  ASSERT_GT(counts[GgmlType::Q4_K].blocks, 10000u);
  ASSERT_GT(counts[GgmlType::Q6_K].blocks, 10000u);
  const Count q4 = counts[GgmlType::Q4_K], q6 = counts[GgmlType::Q6_K];
  EXPECT_GE(static_cast<double>(q4.same_bytes) / static_cast<double>(q4.blocks), 0.995);
  EXPECT_GE(static_cast<double>(q6.same_values) / static_cast<double>(q6.blocks), 0.995);
  EXPECT_GE(static_cast<double>(q6.same_bytes) / static_cast<double>(q6.blocks), 0.75);
}

// splitmix64, so that the inputs are the same with every standard library
// (the goldens below depend on every bit of them).
struct Mix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-23f - 1.0f; }  // [-1, 1)
};

// 1024 super-blocks of the shapes the K-quant searches treat differently:
// uniform, heavy-tailed, a different spread per group of 32, all positive,
// all negative, sparse, all-zero groups of 16, constant groups of 32; at
// magnitudes from 2^-8 to 2^8.
std::vector<float> varied_input() {
  Mix rng{2024};
  std::vector<float> x(1024 * kSuper);
  for (size_t b = 0; b < 1024; ++b) {
    float* v = x.data() + kSuper * b;
    const float scale = std::ldexp(1.0f, static_cast<int>(b % 5) * 4 - 8);
    for (int i = 0; i < kSuper; ++i) {
      float u = rng.uniform();
      switch (b % 8) {
        case 0: break;
        case 1: u = u * u * u; break;
        case 2: u *= static_cast<float>(1 + i / 32); break;
        case 3: u = std::fabs(u) + 0.25f; break;
        case 4: u = -std::fabs(u) - 0.25f; break;
        case 5:
          if (rng.next() % 4 != 0) u = 0;
          break;
        case 6:
          if ((i / 16) % 3 == 0) u = 0;
          break;
        case 7:
          if ((i / 32) % 2 == 0) u = 0.5f - static_cast<float>(i / 64) * 0.25f;
          break;
      }
      v[i] = u * scale;
    }
  }
  return x;
}

uint64_t fnv1a(const std::vector<std::byte>& bytes) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (std::byte b : bytes) h = (h ^ static_cast<uint8_t>(b)) * 0x100000001B3ULL;
  return h;
}

std::vector<std::byte> quantize(GgmlType type, const std::vector<float>& x) {
  const gguf::TypeTraits t = gguf::traits(type);
  std::vector<std::byte> q(x.size() / t.block_size * t.block_bytes);
  quantize_row(type, x.data(), q.data(), x.size());
  return q;
}

std::vector<float> dequantize(GgmlType type, const std::vector<std::byte>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

// The FNV-1a hashes of what ggml-quants.c's quantize_row_*_ref (compiled
// without FMA contraction) writes for varied_input(): the whole algorithm,
// searches included, must match llama.cpp's bit for bit. IQ4_NL and IQ4_XS
// are llama-quantize's quantize_iq4_nl and quantize_iq4_xs with no
// importance matrix, BF16 ggml_fp32_to_bf16_row_ref, MXFP4
// quantize_row_mxfp4_ref (which llama-quantize runs). (The hashes from Q4_1
// on were made by calling those functions in libggml-base.so of the
// reference build 9749, which is compiled without FMA, on varied_input(),
// and hashing the bytes as fnv1a does; Q4_K's hash came out the same.)
TEST(Quantize, MatchesLlamaCppReferenceQuantizers) {
  const std::vector<float> x = varied_input();
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q5_0, x)), 0x4D2D1AF3D015F1E1ULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q4_K, x)), 0x79A086295684892FULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q6_K, x)), 0xC411AA06EC82B15EULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q4_1, x)), 0x63728F469567839FULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q5_1, x)), 0x190B9CF42A49187BULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q2_K, x)), 0x5886F2030343A0A6ULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q3_K, x)), 0x17D157A77AA6491BULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::Q5_K, x)), 0x28BC4122671413DFULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::IQ4_NL, x)), 0x405950425C600747ULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::IQ4_XS, x)), 0x5C12EE8F36E8096AULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::BF16, x)), 0x5C2DB463E431D403ULL);
  EXPECT_EQ(fnv1a(quantize(GgmlType::MXFP4, x)), 0x61A606B4A82C3B85ULL);
}

// And what dequantize_row_mxfp4 of that build makes of its own blocks: the
// FNV-1a hash of the floats' bytes.
TEST(Quantize, Mxfp4DequantizesAsLlamaCpp) {
  const std::vector<float> x = varied_input();
  const std::vector<float> y = dequantize(GgmlType::MXFP4, quantize(GgmlType::MXFP4, x), x.size());
  std::vector<std::byte> bytes(y.size() * sizeof(float));
  std::memcpy(bytes.data(), y.data(), bytes.size());
  EXPECT_EQ(fnv1a(bytes), 0x21E6E388B5C5082DULL);
}

// Round trips of the formats quip-synth writes beyond those above: quantize,
// dequantize, and every element stays within a named number of its group's
// steps, and the noise on normal data within the format's measured level.
// A step: (max - min) / levels of the group for the formats with an offset
// (the range includes 0 for Q2_K and Q5_K, whose mins are >= 0), max |x| / 4
// for Q3_K's eight symmetric levels, and for the non-linear grid the widest
// gap between its values (24, between 89 and 113) at the scale that maps
// max |x| to 127. The K-quants and IQ4_XS take the largest step over their
// super-block's groups (their scales are relative to the largest).
struct RoundTrip {
  GgmlType type;
  int group, levels;
  bool offset;      // a step is the range over levels, else max |x| over levels
  float max_steps;  // the bound, measured worst below it
  float max_rmse;   // relative rmse on normal data, measured just below it
};

constexpr float kGridGap = 24.0f / 127.0f;  // IQ4's widest gap, in units of max |x|

// Measured worst |error| / step on varied_input() and normal data, and
// relative rmse on normal data: Q4_1 0.511, 0.0788; Q5_1 0.516, 0.0380;
// Q2_K 0.775, 0.2965; Q3_K 1.026, 0.1515; Q5_K 1.116, 0.0362 (past one step
// only on varied blocks whose d is a subnormal half); IQ4_NL 0.653 of a
// gap, 0.0764; IQ4_XS 0.721, 0.0769. Q4_1 and Q5_1 round to nearest: half a
// step plus the half-precision rounding of d and m.
constexpr RoundTrip kRoundTrips[] = {
    {GgmlType::Q4_1, 32, 15, true, 0.52f, 0.080f},  {GgmlType::Q5_1, 32, 31, true, 0.53f, 0.039f},
    {GgmlType::Q2_K, 16, 3, true, 0.85f, 0.30f},    {GgmlType::Q3_K, 16, 4, false, 1.15f, 0.155f},
    {GgmlType::Q5_K, 32, 31, true, 1.25f, 0.037f},  {GgmlType::IQ4_NL, 32, 1, false, 0.75f, 0.078f},
    {GgmlType::IQ4_XS, 32, 1, false, 0.8f, 0.078f},
};

TEST(Quantize, RoundTripsStayWithinTheirSteps) {
  std::vector<float> x = varied_input();
  const size_t n_varied = x.size();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 256 * kSuper; ++i) x.push_back(normal(rng));
  for (const RoundTrip& rt : kRoundTrips) {
    const char* name = gguf::traits(rt.type).name.data();
    const std::vector<float> y = dequantize(rt.type, quantize(rt.type, x), x.size());
    const bool per_block = gguf::traits(rt.type).block_size == 32;
    const size_t span = per_block ? 32 : kSuper;  // elements that share the largest scale
    double err2 = 0, x2 = 0;
    for (size_t b = 0; b < x.size(); b += span) {
      float step = 0;
      for (size_t g = b; g < b + span; g += static_cast<size_t>(rt.group)) {
        const auto first = x.begin() + static_cast<ptrdiff_t>(g);
        const auto [lo_it, hi_it] = std::minmax_element(first, first + rt.group);
        float lo = *lo_it, hi = *hi_it;
        if (rt.type == GgmlType::Q2_K || rt.type == GgmlType::Q5_K) {
          lo = std::min(lo, 0.0f), hi = std::max(hi, 0.0f);
        }
        const float amax = std::max(std::fabs(lo), std::fabs(hi));
        const float s = rt.offset        ? (hi - lo) / static_cast<float>(rt.levels)
                        : rt.levels == 1 ? amax * kGridGap
                                         : amax / static_cast<float>(rt.levels);
        step = std::max(step, s);
      }
      for (size_t i = b; i < b + span; ++i) {
        ASSERT_LE(std::fabs(y[i] - x[i]), rt.max_steps * step + 1e-7f)
            << name << " element " << i << " of " << x[i];
        if (i >= n_varied) err2 += double{y[i] - x[i]} * (y[i] - x[i]), x2 += double{x[i]} * x[i];
      }
    }
    EXPECT_LE(std::sqrt(err2 / x2), rt.max_rmse) << name;
  }
}

// BF16 rounds to nearest: within half of its 8-bit mantissa's unit.
TEST(Quantize, Bf16RoundsToNearest) {
  const std::vector<float> x = varied_input();
  const std::vector<float> y = dequantize(GgmlType::BF16, quantize(GgmlType::BF16, x), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
  }
}

// How far Q4_K or Q6_K may move an element of the super-block at x: one
// step of the coarsest grid it may use, the largest over its groups of
// range / 15 (Q4_K: 16 levels with an offset, groups of 32) or max |x| / 32
// (Q6_K: 64 symmetric levels, groups of 16); plus what rounding d (and
// dmin) to half precision adds once they fall among the subnormal halves,
// spaced 2^-24: half a spacing times the largest scale times the largest
// level, 63 * (15 + 1) for Q4_K, 128 * 32 for Q6_K.
float k_quant_error_bound(GgmlType type, const float* x) {
  constexpr float kHalfSubnormalRounding = 0x1p-25f;
  const bool q4 = type == GgmlType::Q4_K;
  const int group = q4 ? 32 : 16;
  float step = 0;
  for (int g = 0; g < kSuper; g += group) {
    float lo = 0, hi = 0, amax = 0;
    for (int i = g; i < g + group; ++i) {
      lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), amax = std::max(amax, std::fabs(x[i]));
    }
    step = std::max(step, q4 ? (hi - lo) / 15 : amax / 32);
  }
  return step + kHalfSubnormalRounding * (q4 ? 63 * 16 : 128 * 32);
}

// Q4_K and Q6_K fit a scale per group (32 and 16 elements) and store it in 6
// or 8 bits relative to the block's largest, then requantize against what
// they store. Where a group's grid covers it an element is off by half its
// group's step; the scales' rounding and the least-squares fit (which may
// clip outliers) add to that, but stay within k_quant_error_bound (measured
// worst here: 0.88 of a step for Q4_K; for Q6_K 1.32 steps, on a block at
// 2^-8 whose d is a subnormal half, which is 0.66 of the bound).
TEST(Quantize, KQuantErrorStaysWithinTheBound) {
  std::vector<float> x = varied_input();
  const size_t n_varied = x.size();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 256 * kSuper; ++i) x.push_back(normal(rng));
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const bool q4 = type == GgmlType::Q4_K;
    const std::vector<float> y = dequantize(type, quantize(type, x), x.size());
    double sum_err2 = 0, sum_x2 = 0;
    for (size_t b = 0; b < x.size(); b += kSuper) {
      const float bound = k_quant_error_bound(type, &x[b]);
      for (size_t i = b; i < b + kSuper; ++i) {
        ASSERT_LE(std::fabs(y[i] - x[i]), bound) << gguf::traits(type).name << " element " << i;
      }
    }
    for (size_t i = n_varied; i < x.size(); ++i) {  // the normal part
      sum_err2 += (y[i] - x[i]) * (y[i] - x[i]);
      sum_x2 += x[i] * x[i];
    }
    // The formats' noise on normal data: rmse / rms measured 0.0719 for
    // Q4_K and 0.0178 for Q6_K; a few percent over that fails.
    const double relative_rmse = std::sqrt(sum_err2 / sum_x2);
    EXPECT_LE(relative_rmse, q4 ? 0.075 : 0.0185) << gguf::traits(type).name;
  }
}

// A Q5_0 block decodes its element of largest magnitude to exactly -16 d,
// so requantizing finds the same d, and every (q - 16) d / d rounds back to
// q - 16: the blocks the quantizer writes are a fixed point.
TEST(Quantize, Q5_0BlocksAreAFixedPoint) {
  std::vector<float> x = varied_input();
  const std::vector<std::byte> q = quantize(GgmlType::Q5_0, x);
  const std::vector<std::byte> again =
      quantize(GgmlType::Q5_0, dequantize(GgmlType::Q5_0, q, x.size()));
  for (size_t b = 0; b < q.size() / sizeof(BlockQ5_0); ++b) {
    ASSERT_EQ(
        std::memcmp(&q[b * sizeof(BlockQ5_0)], &again[b * sizeof(BlockQ5_0)], sizeof(BlockQ5_0)), 0)
        << "block " << b;
  }
}

// No such guarantee for the K-quants (see above): requantizing what a block
// decodes to gives back the same values for nearly every block (== on
// floats: zeros may change sign), and for the rest stays within the format's
// error. The varied blocks, some with scales too small for a normal half,
// are held to the bound only.
TEST(Quantize, KQuantsRequantizeTheirOwnOutputToNearlyTheSameValues) {
  std::vector<float> x = varied_input();
  const size_t n_varied = x.size();
  Mix rng{77};
  for (int i = 0; i < 2048 * kSuper; ++i) {
    const float u = rng.uniform();
    x.push_back(u * rng.uniform());
  }
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const std::vector<float> y = dequantize(type, quantize(type, x), x.size());
    const std::vector<float> z = dequantize(type, quantize(type, y), x.size());
    size_t same = 0;
    for (size_t b = 0; b < x.size(); b += kSuper) {
      const auto first = static_cast<ptrdiff_t>(b);
      if (b >= n_varied) {
        same += std::equal(y.begin() + first, y.begin() + first + kSuper, z.begin() + first);
      }
      const float bound = k_quant_error_bound(type, &y[b]);
      for (size_t i = b; i < b + kSuper; ++i) {
        ASSERT_LE(std::fabs(z[i] - y[i]), bound) << gguf::traits(type).name << " " << i;
      }
    }
    const size_t blocks = (x.size() - n_varied) / kSuper;
    EXPECT_GE(static_cast<double>(same) / static_cast<double>(blocks), 0.995)
        << gguf::traits(type).name;
  }
}

template <class Block>
Block quantize_block(GgmlType type, const std::vector<float>& x) {
  Block b;
  CHECK(x.size() == gguf::traits(type).block_size &&
        sizeof(Block) == gguf::traits(type).block_bytes);
  quantize_row(type, x.data(), &b, x.size());
  return b;
}

template <class Block>
std::vector<float> dequantize_block(GgmlType type, const Block& b) {
  std::vector<float> y(gguf::traits(type).block_size);
  dequantize_row(type, &b, y.data(), y.size());
  return y;
}

TEST(QuantizeQ5_0, HandCheckedBlocks) {
  {  // Zeros: d = -0 and every q = 16 (nibble 0, fifth bit set).
    const auto b = quantize_block<BlockQ5_0>(GgmlType::Q5_0, std::vector<float>(32, 0.0f));
    EXPECT_EQ(b.d, 0x8000);  // 0 / -16 is -0
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0x00);
    for (uint8_t h : b.qh) EXPECT_EQ(h, 0xFF);
  }
  {  // One 2.0 at element 3: d = 2 / -16 = -0.125, its q = 0, the rest 16.
    std::vector<float> x(32, 0.0f);
    x[3] = 2.0f;
    const auto b = quantize_block<BlockQ5_0>(GgmlType::Q5_0, x);
    EXPECT_EQ(b.d, f32_to_f16(-0.125f));
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0x00);
    EXPECT_EQ(b.qh[0], 0xF7);  // bit 3 clear
    EXPECT_EQ(b.qh[1], 0xFF);
    EXPECT_EQ(b.qh[2], 0xFF);
    EXPECT_EQ(b.qh[3], 0xFF);
    EXPECT_EQ(dequantize_block(GgmlType::Q5_0, b), x);
  }
  {  // Constant 1.5: every element is the largest, q = 0, d = -1.5 / 16 (exact).
    const std::vector<float> x(32, 1.5f);
    const auto b = quantize_block<BlockQ5_0>(GgmlType::Q5_0, x);
    EXPECT_EQ(b.d, f32_to_f16(-0.09375f));
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0x00);
    for (uint8_t h : b.qh) EXPECT_EQ(h, 0x00);
    EXPECT_EQ(dequantize_block(GgmlType::Q5_0, b), x);
  }
  {  // Element j has q = j - 16 + 16 = j: nibbles and fifth bits in their places.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
    const auto b = quantize_block<BlockQ5_0>(GgmlType::Q5_0, x);
    EXPECT_EQ(b.d, f32_to_f16(1.0f));  // the largest magnitude is -16
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
    EXPECT_EQ(b.qh[0], 0x00);
    EXPECT_EQ(b.qh[1], 0x00);
    EXPECT_EQ(b.qh[2], 0xFF);
    EXPECT_EQ(b.qh[3], 0xFF);
    EXPECT_EQ(dequantize_block(GgmlType::Q5_0, b), x);
  }
}

TEST(QuantizeQ4_K, HandCheckedBlocks) {
  {  // Zeros: every fit is 0, so is every byte.
    const auto b = quantize_block<BlockQ4_K>(GgmlType::Q4_K, std::vector<float>(kSuper, 0.0f));
    const BlockQ4_K zero{};
    EXPECT_EQ(std::memcmp(&b, &zero, sizeof b), 0);
  }
  {  // Constant 0.5: each group fits min 0 and q = 15 at scale 1/30, which
     // becomes the largest 6-bit scale 63; mins are 0. Scale bytes: 63 in
     // bytes 0..3 (groups 0..3) plus groups 4..7's high bits (3 << 6), mins
     // 0 in bytes 4..7, groups 4..7's low nibbles 0xF in bytes 8..11.
    const auto b = quantize_block<BlockQ4_K>(GgmlType::Q4_K, std::vector<float>(kSuper, 0.5f));
    const uint8_t scales[12] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0x0F, 0x0F, 0x0F, 0x0F};
    EXPECT_EQ(std::memcmp(b.scales, scales, 12), 0);
    EXPECT_EQ(b.d, f32_to_f16(1.0f / 30 / 63));
    EXPECT_EQ(b.dmin, 0);
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0xFF);
    for (float v : dequantize_block(GgmlType::Q4_K, b)) EXPECT_NEAR(v, 0.5f, 1e-3f);
  }
  {  // Constant -0.5: min = max, so the fit is scale 0 with min 0.5: all
     // scales 0, all mins 63 (bytes 4..7 = 63 | 3 << 6, nibbles 0xF0 in 8..11).
    const auto b = quantize_block<BlockQ4_K>(GgmlType::Q4_K, std::vector<float>(kSuper, -0.5f));
    const uint8_t scales[12] = {0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xF0, 0xF0, 0xF0, 0xF0};
    EXPECT_EQ(std::memcmp(b.scales, scales, 12), 0);
    EXPECT_EQ(b.d, 0);
    EXPECT_EQ(b.dmin, f32_to_f16(0.5f / 63));
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0x00);
    for (float v : dequantize_block(GgmlType::Q4_K, b)) EXPECT_NEAR(v, -0.5f, 1e-3f);
  }
  {  // One 1.0 at element 40 (group 1, element 8): group 1 gets the only
     // nonzero scale, 63, and element 40 the top level 15. Groups 0 and 1
     // share qs bytes 0..31, group 1 in the high nibbles: byte 8 is 0xF0.
    std::vector<float> x(kSuper, 0.0f);
    x[40] = 1.0f;
    const auto b = quantize_block<BlockQ4_K>(GgmlType::Q4_K, x);
    EXPECT_EQ(b.scales[0], 0);   // group 0: scale 0
    EXPECT_EQ(b.scales[1], 63);  // group 1: the largest scale
    for (int j = 0; j < 128; ++j) EXPECT_EQ(b.qs[j], j == 8 ? 0xF0 : 0x00) << j;
    const std::vector<float> y = dequantize_block(GgmlType::Q4_K, b);
    for (int i = 0; i < kSuper; ++i) EXPECT_NEAR(y[i], x[i], i == 40 ? 1.0f / 30 : 1e-6f) << i;
  }
}

TEST(QuantizeQ6_K, HandCheckedBlocks) {
  {  // Zeros: all bytes 0 (ggml's all-zero shortcut).
    const auto b = quantize_block<BlockQ6_K>(GgmlType::Q6_K, std::vector<float>(kSuper, 0.0f));
    const BlockQ6_K zero{};
    EXPECT_EQ(std::memcmp(&b, &zero, sizeof b), 0);
  }
  {  // One -3.0 at element 5: group 0 fits scale 3/32 with q = -32 for it;
     // the largest scale maps to -128, so d = -3/4096 (exact in half) and
     // the other groups get scale 0. Element 5 stores 0 (= -32 + 32), the
     // rest of group 0 store 32: bit 5 set, i.e. qh = 2 in their first
     // two-bit field. The all-zero groups keep their fit's levels, 0.
    std::vector<float> x(kSuper, 0.0f);
    x[5] = -3.0f;
    const auto b = quantize_block<BlockQ6_K>(GgmlType::Q6_K, x);
    EXPECT_EQ(b.d, f32_to_f16(-3.0f / 4096));
    EXPECT_EQ(b.scales[0], -128);
    for (int j = 1; j < 16; ++j) EXPECT_EQ(b.scales[j], 0) << j;
    for (uint8_t q : b.ql) EXPECT_EQ(q, 0);
    for (int l = 0; l < 64; ++l) EXPECT_EQ(b.qh[l], l < 16 && l != 5 ? 2 : 0) << l;
    EXPECT_EQ(dequantize_block(GgmlType::Q6_K, b), x);
  }
  {  // Constant 0.25: each group fits scale -1/128 with q = -32, the scales
     // all map to -128 and d = 1/16384 (the smallest normal half); every
     // element stores 0.
    const std::vector<float> x(kSuper, 0.25f);
    const auto b = quantize_block<BlockQ6_K>(GgmlType::Q6_K, x);
    EXPECT_EQ(b.d, f32_to_f16(1.0f / 16384));
    for (int8_t s : b.scales) EXPECT_EQ(s, -128);
    for (uint8_t q : b.ql) EXPECT_EQ(q, 0);
    for (uint8_t q : b.qh) EXPECT_EQ(q, 0);
    EXPECT_EQ(dequantize_block(GgmlType::Q6_K, b), x);
  }
}

}  // namespace
}  // namespace quip::kernels
