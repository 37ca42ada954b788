// The loops that measure the machine's limits do the work they count: the
// stream reads every word, the peak loop every multiply-add.
#include "kernels/limits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/dot_x86.h"
#include "simd_isas.h"

namespace quip::kernels {
namespace {

TEST(Limits, SumWordsIsTheWrappingSumOfEveryWord) {
  std::mt19937_64 rng(7);
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 1000u}) {
    SCOPED_TRACE(n);
    std::vector<uint64_t> words(n);
    for (uint64_t& w : words) w = rng();
    EXPECT_EQ(sum_words(words), std::accumulate(words.begin(), words.end(), uint64_t{0}));
    if (n > 0) {  // every word counts, the last one included
      std::vector<uint64_t> changed = words;
      ++changed.back();
      EXPECT_EQ(sum_words(changed), sum_words(words) + 1);
    }
  }
}

TEST(Limits, BufferIsLargerThanTheCaches) {
  EXPECT_GE(bandwidth_buffer_bytes(), size_t{256} << 20);
}

TEST(Limits, ReadBandwidthIsAPositiveRate) {
  ThreadPool pool(2);
  const double rate = read_bandwidth(pool, size_t{4} << 20, 2);
  EXPECT_GT(rate, 0);
  EXPECT_TRUE(std::isfinite(rate));
}

// Each round is int8_madds_per_round() products of 3 and -5, summed into
// 32-bit lanes: the lanes' sum is -15 per product, modulo 2^32.
TEST(Limits, PeakLoopDoesEveryMultiplyAdd) {
  for (Isa isa : testing::simd_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const bool wide = isa == Isa::Avx512;
    const uint64_t per_round = wide ? avx512::int8_madds_per_round() : avx2::int8_madds_per_round();
    EXPECT_EQ(per_round, wide ? 1024u : 256u);
    for (uint64_t rounds : {0u, 1u, 1000u, 3000000u}) {
      const uint64_t sum = wide ? avx512::int8_madd_rounds(rounds) : avx2::int8_madd_rounds(rounds);
      const auto expected = static_cast<uint32_t>(static_cast<int64_t>(-15) *
                                                  static_cast<int64_t>(per_round * rounds));
      EXPECT_EQ(sum, expected) << rounds;
    }
  }
}

TEST(Limits, Int8PeakIsAPositiveRateWithSimdAndNoneWithout) {
  ThreadPool pool(2);
  for (Isa isa : testing::simd_isas()) {
    const double peak = int8_peak(isa, pool, 1);
    EXPECT_GT(peak, 0) << isa_name(isa);
    EXPECT_TRUE(std::isfinite(peak)) << isa_name(isa);
  }
  EXPECT_EQ(int8_peak(Isa::Reference, pool, 1), 0);
}

}  // namespace
}  // namespace quip::kernels
