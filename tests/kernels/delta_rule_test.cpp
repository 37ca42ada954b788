// The gated delta rule's step: the reference against the rule it states
// (in double precision), and every SIMD version against the reference, bit
// for bit, state and output, over several tokens and head sizes (64-wide
// vector parts, their leftovers, and heads narrower than one vector).
#include "kernels/delta_rule.h"

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

}  // namespace
}  // namespace quip::kernels
