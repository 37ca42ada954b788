// Attention: ggml_dot_f16 against a plain double dot, the reference kernel
// against a direct softmax, and every SIMD kernel against the reference,
// bit for bit (a query's result must not depend on the instruction set).
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/half.h"
#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

std::vector<uint16_t> random_halves(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<uint16_t> h(n);
  for (uint16_t& x : h) x = f32_to_f16(value(rng));
  return h;
}

TEST(Attention, GgmlDotF16IsCloseToTheExactDot) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (size_t n : {size_t{1}, size_t{16}, size_t{63}, size_t{64}, size_t{100}, size_t{256}}) {
    std::vector<float> x(n), y(n);
    double exact = 0, magnitude = 0;
    for (size_t i = 0; i < n; ++i) {
      x[i] = value(rng), y[i] = value(rng);
      exact += double{x[i]} * y[i];
      magnitude += std::fabs(double{x[i]} * y[i]);
    }
    EXPECT_NEAR(ggml_dot_f16(x.data(), y.data(), n), exact, 1e-6 * magnitude + 1e-7) << n;
  }
}

TEST(Attention, ReferenceIsTheSoftmaxWeightedSumOfValues) {
  std::mt19937 rng(6);
  const size_t hd = 32, n = 9;
  const std::vector<uint16_t> k = random_halves(hd * n, rng), v = random_halves(hd * n, rng);
  std::vector<float> q(hd);
  for (float& x : q) x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-1, 1)(rng)));
  std::vector<float> out(hd);
  const float scale = 0.3f;
  attend_function(Isa::Reference, hd)(hd, 1, n, q.data(), k.data(), v.data(), hd, scale,
                                      out.data());
  std::vector<double> w(n);
  double max = -1e300, total = 0;
  for (size_t p = 0; p < n; ++p) {
    double s = 0;
    for (size_t d = 0; d < hd; ++d) s += double{q[d]} * f16_to_f32(k[p * hd + d]);
    w[p] = s * scale;
    max = std::max(max, w[p]);
  }
  for (double& x : w) total += (x = std::exp(x - max));
  for (size_t d = 0; d < hd; ++d) {
    double want = 0;
    for (size_t p = 0; p < n; ++p) want += w[p] / total * f16_to_f32(v[p * hd + d]);
    EXPECT_NEAR(out[d], want, 4e-3) << d;  // the accumulator is half precision
  }
}

// Every head of a group, however many share a call, is computed as the
// reference computes it alone.
TEST(Attention, SimdKernelsEqualTheReferenceBitForBit) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  std::mt19937 rng(7);
  for (size_t hd : {size_t{16}, size_t{32}, size_t{64}, size_t{72}, size_t{128}}) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{100}}) {
      for (size_t heads : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{7}}) {
        const size_t stride = hd * 2 + 8;  // KV heads interleaved, as in the cache
        const std::vector<uint16_t> k = random_halves(stride * n, rng);
        const std::vector<uint16_t> v = random_halves(stride * n, rng);
        std::vector<float> q(hd * heads);
        for (float& x : q)
          x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-2, 2)(rng)));
        std::vector<float> want(hd * heads);
        for (size_t h = 0; h < heads; ++h) {
          attend_function(Isa::Reference, hd)(hd, 1, n, q.data() + h * hd, k.data(), v.data(),
                                              stride, 0.125f, want.data() + h * hd);
        }
        for (Isa isa : isas) {
          std::vector<float> got(hd * heads);
          attend_function(isa, hd)(hd, heads, n, q.data(), k.data(), v.data(), stride, 0.125f,
                                   got.data());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << isa_name(isa) << " head_dim " << hd << " positions " << n << " heads " << heads;
        }
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
