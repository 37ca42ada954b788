// A Gated DeltaNet layer's kernels. The gated delta rule's step: the
// reference against the rule it states (in double precision), and every
// SIMD version against the reference, bit for bit, state and output, over
// several tokens and head sizes (64-wide vector parts, their leftovers,
// and heads narrower than one vector). The causal convolution and SiLU
// over a row: SIMD against the reference, bit for bit, on widths with and
// without leftovers.
#include "kernels/delta_net.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/simd_isas.h"

namespace quip::kernels {
namespace {

// A unit vector of d random values (q and k are L2-normed before the rule).
std::vector<float> unit(size_t d, std::mt19937& rng) {
  std::normal_distribution<float> x(0.0f, 1.0f);
  std::vector<float> v(d);
  double norm = 0;
  for (float& e : v) e = x(rng), norm += double{e} * e;
  for (float& e : v) e = static_cast<float>(e / std::sqrt(norm));
  return v;
}

TEST(DeltaRule, ReferenceStatesTheRule) {
  const size_t d = 24;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f);
  std::vector<float> s(d * d), delta(d), out(d);
  for (float& e : s) e = x(rng);
  std::vector<double> exact(s.begin(), s.end());
  for (int token = 0; token < 3; ++token) {
    const std::vector<float> q = unit(d, rng), k = unit(d, rng);
    std::vector<float> v(d);
    for (float& e : v) e = x(rng);
    const float decay = 0.9f, beta = 0.6f;
    delta_rule_reference(s.data(), d, q.data(), k.data(), v.data(), decay, beta, out.data(),
                         delta.data());
    for (double& e : exact) e *= decay;
    for (size_t j = 0; j < d; ++j) {
      double sk = 0;
      for (size_t i = 0; i < d; ++i) sk += exact[j * d + i] * k[i];
      const double dj = (v[j] - sk) * beta;
      for (size_t i = 0; i < d; ++i) exact[j * d + i] += k[i] * dj;
    }
    for (size_t j = 0; j < d; ++j) {
      double sq = 0;
      for (size_t i = 0; i < d; ++i) sq += exact[j * d + i] * q[i];
      EXPECT_NEAR(out[j], sq / std::sqrt(double(d)), 1e-5) << "token " << token << " j " << j;
    }
  }
  for (size_t i = 0; i < d * d; ++i) EXPECT_NEAR(s[i], exact[i], 1e-5) << i;
}

TEST(DeltaRule, SimdEqualsTheReferenceBitForBit) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  for (size_t d : {size_t{8}, size_t{32}, size_t{64}, size_t{72}, size_t{128}}) {
    std::mt19937 rng(static_cast<unsigned>(d));
    std::uniform_real_distribution<float> x(-2.0f, 2.0f), unit_interval(0.0f, 1.0f);
    std::vector<float> start(d * d);
    for (float& e : start) e = x(rng);
    std::vector<float> want = start, want_delta(d), want_out(d);
    for (Isa isa : isas) {
      std::vector<float> got = start, got_delta(d), got_out(d);
      std::mt19937 tokens(7);
      want = start;
      for (int token = 0; token < 4; ++token) {
        const std::vector<float> q = unit(d, tokens), k = unit(d, tokens);
        std::vector<float> v(d);
        for (float& e : v) e = x(tokens);
        const float decay = unit_interval(tokens), beta = unit_interval(tokens);
        delta_rule_reference(want.data(), d, q.data(), k.data(), v.data(), decay, beta,
                             want_out.data(), want_delta.data());
        delta_rule_function(isa)(got.data(), d, q.data(), k.data(), v.data(), decay, beta,
                                 got_out.data(), got_delta.data());
        ASSERT_EQ(std::memcmp(got_out.data(), want_out.data(), d * sizeof(float)), 0)
            << isa_name(isa) << " d=" << d << " token " << token;
        ASSERT_EQ(std::memcmp(got.data(), want.data(), d * d * sizeof(float)), 0)
            << isa_name(isa) << " d=" << d << " token " << token;
      }
    }
  }
}

TEST(DeltaNet, ConvolutionStatesItsSumAndSimdEqualsIt) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> x(-3.0f, 3.0f);
  for (size_t c : {size_t{5}, size_t{16}, size_t{40}, size_t{512}}) {
    const size_t taps = 4, n = 6;
    std::vector<float> in((taps - 1 + n) * c), w(taps * c), want(n * c);
    for (float& e : in) e = x(rng);
    for (float& e : w) e = x(rng);
    causal_conv_reference(in.data(), w.data(), taps, n, c, want.data());
    for (size_t t = 0; t < n; ++t) {
      for (size_t ch = 0; ch < c; ch += 7) {
        double sum = 0;
        for (size_t i = 0; i < taps; ++i) sum += double{in[(t + i) * c + ch]} * w[i * c + ch];
        EXPECT_NEAR(want[t * c + ch], sum, 1e-5) << "c=" << c << " t=" << t << " ch=" << ch;
      }
    }
    for (Isa isa : testing::simd_isas()) {
      std::vector<float> got(n * c);
      causal_conv_function(isa)(in.data(), w.data(), taps, n, c, got.data());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), n * c * sizeof(float)), 0)
          << isa_name(isa) << " c=" << c;
    }
  }
}

TEST(DeltaNet, SiluRowSimdEqualsTheReference) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> small(-12.0f, 12.0f), wide(-200.0f, 200.0f);
  for (size_t n : {size_t{3}, size_t{16}, size_t{24}, size_t{64}, size_t{8200}}) {
    std::vector<float> row(n), want(n);
    for (size_t i = 0; i < n; ++i) row[i] = i % 97 == 5 ? wide(rng) : small(rng);
    silu_row_reference(row.data(), want.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double exact = row[i] / (1.0 + std::exp(-double{row[i]}));
      EXPECT_NEAR(want[i], exact, 1e-5 * (1 + std::fabs(exact))) << i;
    }
    for (Isa isa : testing::simd_isas()) {
      std::vector<float> got = row;
      silu_row_function(isa)(got.data(), got.data(), n);  // in place
      ASSERT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0)
          << isa_name(isa) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace quip::kernels
