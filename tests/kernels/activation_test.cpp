// SwiGLU's activation: the scalar ggml_expf against the exact exponential,
// and every SIMD version against the scalar one, bit for bit (the forward
// pass splits rows between threads at any element, so the two must agree).
#include "kernels/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

TEST(Activation, ExpfIsCloseToTheExactExponential) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> x(-80.0f, 80.0f);
  for (int i = 0; i < 200'000; ++i) {
    const float v = x(rng);
    const double want = std::exp(static_cast<double>(v));
    EXPECT_NEAR(ggml_expf(v), want, 4e-7 * want) << v;
  }
  EXPECT_EQ(ggml_expf(0.0f), 1.0f);
  EXPECT_EQ(ggml_expf(-200.0f), 0.0f);
  EXPECT_EQ(ggml_expf(200.0f), INFINITY);
}

TEST(Activation, SiluIsXTimesTheSigmoid) {
  for (float v : {-30.0f, -3.0f, -0.5f, 0.0f, 0.25f, 2.0f, 40.0f}) {
    const double want = v / (1.0 + std::exp(-static_cast<double>(v)));
    EXPECT_NEAR(ggml_silu(v), want, 1e-6 * (1 + std::fabs(want))) << v;
  }
}

TEST(Activation, SimdSwigluEqualsTheReferenceBitForBit) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> small(-12.0f, 12.0f), wide(-200.0f, 200.0f);
  const SwigluFn ref = swiglu_function(Isa::Reference);
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4864}}) {
    std::vector<float> gate(n), up(n);
    for (size_t i = 0; i < n; ++i) {
      gate[i] = i % 97 == 5 ? wide(rng) : small(rng);  // a few far outside |n| <= 126
      up[i] = small(rng);
    }
    std::vector<float> want(n);
    ref(gate.data(), up.data(), want.data(), n);
    for (Isa isa : isas) {
      std::vector<float> got(n);
      swiglu_function(isa)(gate.data(), up.data(), got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << isa_name(isa) << " n=" << n << " i=" << i << " gate " << gate[i] << ": " << got[i]
            << " vs " << want[i];
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
