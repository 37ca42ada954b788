// The memory tier of the prefix cache (session/warm_cache.h): the longest
// shared prefix is taken and cut, keys keep models apart, recurrent caches
// are taken only whole, logits come back only for a whole prompt, and the
// bound drops the least recently kept; an unloaded model's caches go.
#include "session/warm_cache.h"

#include <gtest/gtest.h>

#include <numeric>

namespace quip::session {
namespace {

// A cache of `n` positions (2 layers, rows of 4 halves), each position's
// halves its index, so that what was taken can be told apart.
engine::KvCache filled(size_t n, const std::vector<uint8_t>& recurrent = {}) {
  engine::KvCache c(2, 4, false, recurrent, {.conv_floats = 3, .state_floats = 5});
  c.reserve(n);
  for (uint32_t l = 0; l < 2; ++l) {
    if (!recurrent.empty() && recurrent[l]) continue;
    for (size_t p = 0; p < n * 4; ++p) c.k(l)[p] = c.v(l)[p] = static_cast<uint16_t>(p / 4);
  }
  c.grow_to(n);
  return c;
}

std::vector<int32_t> range(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(WarmCache, TakesTheLongestSharedPrefixCutToIt) {
  WarmCache warm(1u << 20);
  std::vector<float> logits;
  std::vector<int32_t> a = range(0, 10), b = range(0, 6);
  b.push_back(99), b.push_back(98);  // shares 6 with a's
  warm.put("m", a, filled(10), 10, {});
  warm.put("m", b, filled(8), 8, {});
  std::vector<int32_t> asked = range(0, 9);
  asked.push_back(50);  // shares 9 with a, 6 with b
  engine::KvCache got(2, 4);
  EXPECT_EQ(warm.take("other", asked, got, logits), 0u);  // another model's key
  EXPECT_EQ(got.size(), 0u);
  EXPECT_EQ(warm.take("m", asked, got, logits), 9u);
  EXPECT_EQ(got.size(), 9u);
  EXPECT_EQ(got.k(1)[8 * 4], 8);
  EXPECT_TRUE(logits.empty());
  // Taken: it is not there any more; b's is.
  engine::KvCache again(2, 4);
  EXPECT_EQ(warm.take("m", asked, again, logits), 6u);
  EXPECT_EQ(warm.stats().hits, 2u);
  EXPECT_EQ(warm.stats().reused_tokens, 15u);
  EXPECT_EQ(warm.stats().entries, 0u);
  EXPECT_EQ(warm.stats().bytes, 0u);
  engine::KvCache none(2, 4);
  EXPECT_EQ(warm.take("m", asked, none, logits), 0u);
}

TEST(WarmCache, GivesTheLogitsOnlyForTheWholePromptTheyFollow) {
  WarmCache warm(1u << 20);
  const std::vector<int32_t> seq = range(0, 12);  // a prompt of 8, an answer of 4
  std::vector<float> logits;
  warm.put("m", seq, filled(11), 8, {1.0f, 2.0f});
  engine::KvCache c(2, 4);
  EXPECT_EQ(warm.take("m", range(0, 8), c, logits), 8u);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 2.0f}));
  logits.clear();
  warm.put("m", seq, filled(11), 8, {1.0f, 2.0f});
  engine::KvCache d(2, 4);
  EXPECT_EQ(warm.take("m", range(0, 7), d, logits), 7u);  // a prompt shorter than the one kept
  EXPECT_TRUE(logits.empty());
}

TEST(WarmCache, RecurrentCachesAreTakenOnlyWhole) {
  const std::vector<uint8_t> recurrent = {1, 0};
  WarmCache warm(1u << 20);
  std::vector<float> logits;
  warm.put("m", range(0, 10), filled(10, recurrent), 10, {});
  engine::KvCache c(2, 4, false, recurrent, {.conv_floats = 3, .state_floats = 5});
  EXPECT_EQ(warm.take("m", range(0, 8), c, logits), 0u);   // would cut the state
  EXPECT_EQ(warm.take("m", range(0, 10), c, logits), 0u);  // all of it, without logits
  std::vector<int32_t> longer = range(0, 12);
  EXPECT_EQ(warm.take("m", longer, c, logits), 10u);
  EXPECT_EQ(c.size(), 10u);
}

TEST(WarmCache, TheBoundDropsTheLeastRecentlyKept) {
  const uint64_t one = WarmCache::bytes_of(filled(10));
  WarmCache warm(2 * one + one / 2);
  std::vector<float> logits;
  for (int32_t i = 0; i < 3; ++i) warm.put("m", range(100 * i, 10), filled(10), 10, {});
  EXPECT_EQ(warm.stats().entries, 2u);
  EXPECT_EQ(warm.stats().bytes, 2 * one);
  engine::KvCache c(2, 4);
  EXPECT_EQ(warm.take("m", range(0, 10), c, logits), 0u);  // the first, dropped
  EXPECT_EQ(warm.take("m", range(200, 10), c, logits), 10u);
  WarmCache tiny(one - 1);
  tiny.put("m", range(0, 10), filled(10), 10, {});
  EXPECT_EQ(tiny.stats().entries, 0u);
}

TEST(WarmCache, DroppingAModelDropsEveryContextOfItAndNothingElse) {
  const uint64_t one = WarmCache::bytes_of(filled(4));
  WarmCache warm(10 * one);
  // "ab" is a prefix of "abc": only whole fingerprints match.
  warm.put(WarmCache::key("ab", 512), range(0, 4), filled(4), 4, {});
  warm.put(WarmCache::key("ab", 4096), range(0, 4), filled(4), 4, {});
  warm.put(WarmCache::key("abc", 512), range(0, 4), filled(4), 4, {});
  warm.drop_model("ab");
  EXPECT_EQ(warm.stats().entries, 1u);
  EXPECT_EQ(warm.stats().bytes, one);
  std::vector<float> logits;
  engine::KvCache c(2, 4);
  EXPECT_EQ(warm.take(WarmCache::key("ab", 512), range(0, 4), c, logits), 0u);
  EXPECT_EQ(warm.take(WarmCache::key("abc", 512), range(0, 4), c, logits), 4u);
  EXPECT_EQ(warm.stats().bytes, 0u);
}

}  // namespace
}  // namespace quip::session
