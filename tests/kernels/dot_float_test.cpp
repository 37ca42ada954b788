// dot_float.h's statement of llama.cpp's F16 and BF16 orders: the dpbf16
// step against the instruction itself (where this CPU has it), and each
// order against an exact dot.
#include "kernels/dot_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace quip::kernels {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"))) void hardware_dpbf16(float* acc, const uint16_t* x,
                                                                   const uint16_t* y) {
  const __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(x),
                                    (__m512bh)_mm512_loadu_si512(y));
  _mm512_storeu_ps(acc, r);
}
#endif

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Normal bfloat16 values of either sign, magnitudes 2^-8 .. 2^4: their
// products and sums stay far from subnormals, which the instruction
// flushes and quip does not.
uint16_t random_bf16(std::mt19937& rng) {
  const uint32_t sign = rng() & 1, exponent = 119 + rng() % 13, mantissa = rng() & 0x7F;
  return static_cast<uint16_t>(sign << 15 | exponent << 7 | mantissa);
}

TEST(DotFloat, Dpbf16StepIsTheInstruction) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    uint16_t x[32], y[32];
    float xf[32], yf[32], acc[16], want[16];
    for (int e = 0; e < 32; ++e) {
      x[e] = random_bf16(rng), y[e] = random_bf16(rng);
      xf[e] = bf16_to_f32(x[e]), yf[e] = bf16_to_f32(y[e]);
    }
    for (int l = 0; l < 16; ++l) {
      acc[l] = want[l] = std::ldexp(static_cast<float>(rng() % 2001) - 1000.0f, -6);
    }
    hardware_dpbf16(want, x, y);
    dpbf16_step(acc, xf, yf);
    for (int l = 0; l < 16; ++l) ASSERT_EQ(bits(acc[l]), bits(want[l])) << "trial " << trial;
  }
#else
  GTEST_SKIP() << "not x86-64";
#endif
}

// Every order is a dot product: within float rounding of the exact one,
// at lengths that end inside and on chunk boundaries.
TEST(DotFloat, EveryOrderIsCloseToTheExactDot) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (size_t n : {1, 15, 16, 31, 32, 63, 64, 65, 100, 128, 896, 1000}) {
    std::vector<float> x(n), y(n);
    double exact = 0, magnitude = 0;
    for (size_t i = 0; i < n; ++i) {
      x[i] = dist(rng), y[i] = dist(rng);
      exact += double{x[i]} * y[i];
      magnitude += std::fabs(double{x[i]} * y[i]);
    }
    const double tol = 1e-6 * magnitude;
    EXPECT_NEAR(ggml_dot_f16(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(ggml_dot_bf16(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(ggml_dot_f32(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(tinyblas_dot(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(tinyblas_dot_bf16(x.data(), y.data(), n), exact, tol) << n;
  }
}

}  // namespace
}  // namespace quip::kernels
