// The sampler against its definitions: greedy is the argmax, truncations keep
// exactly the sets their definitions give, draws follow the softmax, and a
// seed fixes the sequence.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace quip::engine {
namespace {

Sampler make(const SamplerSettings& s) {
  auto r = Sampler::create(s);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return std::move(r).value();
}

// Settings with every truncation off.
SamplerSettings plain(float temperature, uint64_t seed = 1) {
  return {.temperature = temperature,
          .top_k = 0,
          .top_p = 1.0f,
          .min_p = 0.0f,
          .repeat_penalty = 1.0f,
          .repeat_last_n = 64,
          .seed = seed};
}

std::vector<float> random_logits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> l(n);
  for (float& v : l) v = d(rng);
  return l;
}

// How often each token is drawn in `n` samples.
std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) ++h[s.sample(logits, {})];
  return h;
}

TEST(Sampler, GreedyIsTheArgmax) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> l = random_logits(1000, seed);
    Sampler s = make(plain(0.0f));
    EXPECT_EQ(s.sample(l, {}), std::max_element(l.begin(), l.end()) - l.begin());
  }
}

TEST(Sampler, RepetitionPenaltyScalesRecentTokensOnce) {
  // Token 0 leads; penalized by 2 it falls below token 1. A negative logit
  // moves further down.
  const std::vector<float> l = {4.0f, 3.0f, -1.0f};
  SamplerSettings s = plain(0.0f);
  s.repeat_penalty = 2.0f;
  Sampler penalized = make(s);
  const std::vector<int32_t> history = {0, 0, 0};  // repeated: still divided once
  EXPECT_EQ(penalized.sample(l, history), 1);
  s.repeat_last_n = 2;
  Sampler window = make(s);
  EXPECT_EQ(window.sample(l, std::vector<int32_t>{0, 2, 2}), 0);  // 0 is outside the last 2
  // Out-of-range ids in the history are ignored, not read.
  EXPECT_EQ(window.sample(l, std::vector<int32_t>{-5, 99}), 0);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  const std::vector<float> l = random_logits(500, 3);
  SamplerSettings s = plain(5.0f);
  s.top_k = 1;
  Sampler sampler = make(s);
  const auto argmax = std::max_element(l.begin(), l.end()) - l.begin();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.sample(l, {}), argmax);
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  const std::vector<float> l = {1.0f, 0.0f, -1.0f, 2.0f};
  for (float temperature : {0.5f, 1.0f, 2.0f}) {
    Sampler s = make(plain(temperature, 42));
    const int n = 200000;
    const auto h = histogram(s, l, n);
    double z = 0;
    for (float v : l) z += std::exp(v / temperature);
    for (int32_t id = 0; id < 4; ++id) {
      const double p = std::exp(l[static_cast<size_t>(id)] / temperature) / z;
      const double got = h.count(id) ? h.at(id) / double{n} : 0.0;
      EXPECT_NEAR(got, p, 5 * std::sqrt(p * (1 - p) / n)) << "token " << id << " T " << temperature;
    }
  }
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (logits log2-spaced).
  const std::vector<float> l = {std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  for (auto [top_p, allowed] :
       {std::pair{0.5f, 1}, std::pair{0.6f, 2}, std::pair{0.75f, 2}, std::pair{0.8f, 3}}) {
    SamplerSettings s = plain(1.0f, 9);
    s.top_p = top_p;
    Sampler sampler = make(s);
    const auto h = histogram(sampler, l, 4000);
    EXPECT_EQ(static_cast<int>(h.size()), allowed) << "top_p " << top_p;
    for (const auto& [id, count] : h) EXPECT_LT(id, allowed);
  }
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  const std::vector<float> l = {0.0f, std::log(0.5f), std::log(0.2f), std::log(0.05f)};
  SamplerSettings s = plain(1.0f, 5);
  s.min_p = 0.1f;  // keeps p >= 0.1 * p_max: the first three
  Sampler sampler = make(s);
  const auto h = histogram(sampler, l, 20000);
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(h.count(3), 0u);
}

TEST(Sampler, TheSeedFixesTheSequence) {
  const std::vector<float> l = random_logits(32000, 11);
  SamplerSettings s{.temperature = 0.8f,
                    .top_k = 40,
                    .top_p = 0.95f,
                    .min_p = 0.05f,
                    .repeat_penalty = 1.1f,
                    .repeat_last_n = 64,
                    .seed = 1234};
  const auto run = [&](uint64_t seed) {
    s.seed = seed;
    Sampler sampler = make(s);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(sampler.sample(l, out));
    return out;
  };
  EXPECT_EQ(run(1234), run(1234));
  EXPECT_NE(run(1234), run(1235));
}

TEST(Sampler, BadSettingsAreErrorsNamingTheSetting) {
  const auto error = [](SamplerSettings s) {
    auto r = Sampler::create(s);
    return r.ok() ? std::string() : r.error().message;
  };
  SamplerSettings s;
  s.temperature = -0.5f;
  EXPECT_NE(error(s).find("temperature is -0.5"), std::string::npos) << error(s);
  s = {};
  s.temperature = NAN;
  EXPECT_NE(error(s).find("temperature"), std::string::npos);
  s = {};
  s.top_k = -1;
  EXPECT_NE(error(s).find("top_k is -1"), std::string::npos);
  s = {};
  s.top_p = 0.0f;
  EXPECT_NE(error(s).find("top_p is 0"), std::string::npos);
  s = {};
  s.top_p = 1.5f;
  EXPECT_NE(error(s).find("expected a number in (0, 1]"), std::string::npos);
  s = {};
  s.min_p = 2.0f;
  EXPECT_NE(error(s).find("min_p"), std::string::npos);
  s = {};
  s.repeat_penalty = 0.0f;
  EXPECT_NE(error(s).find("repeat_penalty"), std::string::npos);
  s = {};
  s.repeat_last_n = -3;
  EXPECT_NE(error(s).find("repeat_last_n is -3"), std::string::npos);
  EXPECT_EQ(error(SamplerSettings{}), "");
}

}  // namespace
}  // namespace quip::engine
