// Attention: the reference kernels against a direct softmax in double, and
// every SIMD kernel against the reference, bit for bit (a query's result
// must not depend on the instruction set). ggml_dot_f16, which the scores
// use, is tested with the other float orders (dot_float_test.cpp).
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// The attention of query q over positions first..n-1 (key and value rows
// of hd halves, stride hd) as a direct softmax in double, the scores
// soft-capped at `softcap` where it is not 0, and a sink's logit (one more
// term of the denominator, of no value) where it is not -infinity.
std::vector<double> exact_attention(const float* q, size_t hd, size_t n,
                                    const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                                    float scale, double softcap = 0, size_t first = 0,
                                    double sink = -INFINITY) {
  std::vector<double> w(n, -INFINITY);
  double max = std::max(-1e300, sink), total = 0;
  for (size_t p = first; p < n; ++p) {
    double s = 0;
    for (size_t d = 0; d < hd; ++d) s += double{q[d]} * f16_to_f32(k[p * hd + d]);
    w[p] = softcap != 0 ? softcap * std::tanh(s * scale / softcap) : s * scale;
    max = std::max(max, w[p]);
  }
  for (double& x : w) total += (x = std::exp(x - max));
  total += std::exp(sink - max);
  std::vector<double> out(hd, 0.0);
  for (size_t d = 0; d < hd; ++d) {
    for (size_t p = 0; p < n; ++p) out[d] += w[p] / total * f16_to_f32(v[p * hd + d]);
  }
  return out;
}

TEST(Attention, ReferenceIsTheSoftmaxWeightedSumOfValues) {
  std::mt19937 rng(6);
  const size_t hd = 32, n = 9;
  const std::vector<uint16_t> k = random_halves(hd * n, rng), v = random_halves(hd * n, rng);
  std::vector<float> q(hd);
  for (float& x : q) x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-1, 1)(rng)));
  std::vector<float> out(hd);
  const float scale = 0.3f;
  for (float softcap : {0.0f, 0.5f}) {
    attend_function(Isa::Reference, hd)(hd, 1, n, q.data(), k.data(), v.data(), hd,
                                        Scores(scale, softcap), out.data(), nullptr);
    const std::vector<double> want = exact_attention(q.data(), hd, n, k, v, scale, softcap);
    for (size_t d = 0; d < hd; ++d) {
      EXPECT_NEAR(out[d], want[d], 4e-3) << d << " softcap " << softcap;  // a half accumulator
    }
  }
}

TEST(Attention, ScoresAreScaledOrSoftCappedAsGgmlComputesThem) {
  EXPECT_EQ(Scores(0.25f)(3.0f), 0.75f);
  // ggml divides the scale by the cap, then caps: c * tanh(dot * (scale / c)).
  const float scale = 0.3f, cap = 7.0f, scaled_by_cap = scale / cap;
  EXPECT_EQ(Scores(scale, cap)(11.0f), cap * std::tanh(11.0f * scaled_by_cap));
  EXPECT_NEAR(Scores(scale, cap)(1e6f), cap, 1e-6);  // capped
  EXPECT_EQ(Scores(scale, cap).softcap(), cap);
}

TEST(Attention, AWindowOfWPositionsStartsWMinusOneBeforeTheQuery) {
  EXPECT_EQ(first_seen(0, 0), 0u);
  EXPECT_EQ(first_seen(100, 0), 0u);    // no window
  EXPECT_EQ(first_seen(15, 16), 0u);    // 16 positions: 0..15
  EXPECT_EQ(first_seen(16, 16), 1u);    // llama.cpp masks 16 - 0 >= 16
  EXPECT_EQ(first_seen(100, 1), 100u);  // itself only
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
        // Whole (normalized) and as a chunk (accumulator, maximum and sum).
        // Scaled, and soft-capped on every other case.
        const Scores scores(0.125f, (hd + n + heads) % 2 == 0 ? 0.0f : 1.5f);
        std::vector<float> want(hd * heads), want_chunk(hd * heads), want_partial(2 * heads);
        for (size_t h = 0; h < heads; ++h) {
          const AttendFn ref = attend_function(Isa::Reference, hd);
          ref(hd, 1, n, q.data() + h * hd, k.data(), v.data(), stride, scores, want.data() + h * hd,
              nullptr);
          ref(hd, 1, n, q.data() + h * hd, k.data(), v.data(), stride, scores,
              want_chunk.data() + h * hd, want_partial.data() + 2 * h);
        }
        for (Isa isa : isas) {
          std::vector<float> got(hd * heads), got_chunk(hd * heads), got_partial(2 * heads);
          attend_function(isa, hd)(hd, heads, n, q.data(), k.data(), v.data(), stride, scores,
                                   got.data(), nullptr);
          attend_function(isa, hd)(hd, heads, n, q.data(), k.data(), v.data(), stride, scores,
                                   got_chunk.data(), got_partial.data());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << isa_name(isa) << " head_dim " << hd << " positions " << n << " heads " << heads;
          EXPECT_EQ(std::memcmp(got_chunk.data(), want_chunk.data(), got.size() * sizeof(float)), 0)
              << isa_name(isa) << " chunk, head_dim " << hd << " positions " << n;
          EXPECT_EQ(got_partial, want_partial) << isa_name(isa) << " head_dim " << hd;
        }
      }
    }
  }
}

// The tiled path (a batch of 64 queries or more) against a direct causal
// softmax in double: query i sees positions first_seen(pos0 + i,
// window)..pos0 + i; with and without a window and a soft cap.
TEST(Attention, TiledReferenceIsTheCausalSoftmaxWeightedSumOfValues) {
  std::mt19937 rng(8);
  const size_t hd = 32, pos0 = 70, n_q = 80, n = pos0 + n_q;
  const std::vector<uint16_t> k = random_halves(hd * n, rng), v = random_halves(hd * n, rng);
  std::vector<float> q(n_q * hd), out(n_q * hd);
  for (float& x : q) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  const float scale = 0.3f;
  ASSERT_TRUE(attends_in_tiles(n_q, hd));
  for (size_t window : {size_t{0}, size_t{1}, size_t{20}, size_t{100}}) {
    for (float softcap : {0.0f, 0.5f}) {
      attend_tiles_function(Isa::Reference)(hd, n_q, pos0, q.data(), hd, k.data(), v.data(), hd,
                                            Scores(scale, softcap), window, out.data(), hd,
                                            nullptr);
      for (size_t i = 0; i < n_q; ++i) {
        const std::vector<double> want =
            exact_attention(q.data() + i * hd, hd, pos0 + i + 1, k, v, scale, softcap,
                            first_seen(pos0 + i, window));
        for (size_t d = 0; d < hd; ++d) {
          ASSERT_NEAR(out[i * hd + d], want[d], 1e-5)
              << "query " << i << " d " << d << " window " << window << " softcap " << softcap;
        }
      }
    }
  }
}

// Every SIMD tiled kernel against the reference, bit for bit, for head
// sizes, batch sizes and starting positions that end inside and on tiles.
TEST(Attention, SimdTiledKernelsEqualTheReferenceBitForBit) {
  const std::vector<Isa> isas = testing::simd_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has no SIMD kernels";
  std::mt19937 rng(9);
  for (size_t hd : {size_t{16}, size_t{64}, size_t{128}}) {
    for (size_t n_q : {size_t{64}, size_t{100}}) {
      for (size_t pos0 : {size_t{0}, size_t{37}, size_t{128}}) {
        const size_t n = pos0 + n_q, stride = hd + 16;  // rows with a gap between them
        const std::vector<uint16_t> k = random_halves(stride * n, rng);
        const std::vector<uint16_t> v = random_halves(stride * n, rng);
        std::vector<float> q(n_q * stride), want(n_q * stride), got(n_q * stride);
        for (float& x : q) x = std::uniform_real_distribution<float>(-2, 2)(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        // No window, one that ends inside a tile and one that spans tiles;
        // soft-capped on every other case.
        for (size_t window : {size_t{0}, size_t{17}, size_t{100}}) {
          const Scores scores(scale, (window + pos0) % 2 == 0 ? 0.0f : 2.0f);
          // Normalized, and as states (accumulator, maximum and sum) on
          // every other case.
          const bool states = window == 17;
          std::vector<float> want_states(2 * n_q), got_states(2 * n_q);
          attend_tiles_function(Isa::Reference)(hd, n_q, pos0, q.data(), stride, k.data(), v.data(),
                                                stride, scores, window, want.data(), stride,
                                                states ? want_states.data() : nullptr);
          for (Isa isa : isas) {
            attend_tiles_function(isa)(hd, n_q, pos0, q.data(), stride, k.data(), v.data(), stride,
                                       scores, window, got.data(), stride,
                                       states ? got_states.data() : nullptr);
            for (size_t i = 0; i < n_q; ++i) {
              ASSERT_EQ(std::memcmp(want.data() + i * stride, got.data() + i * stride, hd * 4), 0)
                  << isa_name(isa) << " hd " << hd << " n_q " << n_q << " pos0 " << pos0
                  << " window " << window << " query " << i;
            }
            EXPECT_EQ(got_states, want_states) << isa_name(isa) << " hd " << hd;
          }
        }
      }
    }
  }
}

// Latent attention's heads: keys of dk halves whose first dv are the
// values (one row serves both). The reference is the softmax-weighted sum
// of those prefixes, one query and tiled; the SIMD kernels equal it bit
// for bit, DeepSeek's 576/512 included.
TEST(Attention, ValuesThatArePrefixesOfTheKeys) {
  std::mt19937 rng(11);
  const std::vector<Isa> isas = testing::simd_isas();
  for (auto [dk, dv] : {std::pair<size_t, size_t>{80, 64}, {576, 512}}) {
    const HeadDims dims(dk, dv);
    const size_t n = 70, heads = 3, pos0 = n - 64;
    const std::vector<uint16_t> kv = random_halves(dk * n, rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
    // In double: the query against the first `seen` keys, weighing their
    // first dv halves.
    const auto exact = [&](const float* q, size_t seen) {
      std::vector<double> w(seen), out(dv, 0.0);
      double max = -1e300, total = 0;
      for (size_t p = 0; p < seen; ++p) {
        double dot = 0;
        for (size_t d = 0; d < dk; ++d) dot += double{q[d]} * f16_to_f32(kv[p * dk + d]);
        max = std::max(max, w[p] = dot * scale);
      }
      for (double& x : w) total += (x = std::exp(x - max));
      for (size_t p = 0; p < seen; ++p) {
        for (size_t d = 0; d < dv; ++d) out[d] += w[p] / total * f16_to_f32(kv[p * dk + d]);
      }
      return out;
    };
    std::vector<float> q(dk * heads), queries(64 * dk);
    for (float& x : q)
      x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-1, 1)(rng)));
    for (float& x : queries) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<float> want(dv * heads), want_tiles(64 * dv);
    attend_function(Isa::Reference, dims)(dims, heads, n, q.data(), kv.data(), kv.data(), dk,
                                          Scores(scale), want.data(), nullptr);
    ASSERT_TRUE(attends_in_tiles(64, dv));
    attend_tiles_function(Isa::Reference)(dims, 64, pos0, queries.data(), dk, kv.data(), kv.data(),
                                          dk, Scores(scale), 0, want_tiles.data(), dv, nullptr);
    for (size_t h = 0; h < heads; ++h) {
      const std::vector<double> v = exact(q.data() + h * dk, n);
      for (size_t d = 0; d < dv; ++d) {
        ASSERT_NEAR(want[h * dv + d], v[d], 4e-3) << dk << "/" << dv << " head " << h << " d " << d;
      }
    }
    for (size_t i = 0; i < 64; i += 21) {
      const std::vector<double> v = exact(queries.data() + i * dk, pos0 + i + 1);
      for (size_t d = 0; d < dv; ++d) {
        ASSERT_NEAR(want_tiles[i * dv + d], v[d], 1e-5) << dk << "/" << dv << " query " << i;
      }
    }
    for (Isa isa : isas) {
      std::vector<float> got(dv * heads), got_tiles(64 * dv);
      attend_function(isa, dims)(dims, heads, n, q.data(), kv.data(), kv.data(), dk, Scores(scale),
                                 got.data(), nullptr);
      EXPECT_EQ(got, want) << isa_name(isa) << " " << dk << "/" << dv;
      attend_tiles_function(isa)(dims, 64, pos0, queries.data(), dk, kv.data(), kv.data(), dk,
                                 Scores(scale), 0, got_tiles.data(), dv, nullptr);
      EXPECT_EQ(got_tiles, want_tiles) << isa_name(isa) << " tiled " << dk << "/" << dv;
    }
  }
}

TEST(Attention, BatchesOf64QueriesOrMoreWithHeadsOf16nAttendInTiles) {
  EXPECT_TRUE(attends_in_tiles(64, 64));
  EXPECT_TRUE(attends_in_tiles(512, 16));
  EXPECT_FALSE(attends_in_tiles(63, 64));
  EXPECT_FALSE(attends_in_tiles(64, 8));
  EXPECT_FALSE(attends_in_tiles(100, 40));
}

// A split attention merged is the attention of all positions: against a
// direct softmax in double; and where ggml splits.
TEST(Attention, MergedChunksAreTheSoftmaxWeightedSumOfValues) {
  std::mt19937 rng(10);
  const size_t hd = 32, n = 300, split = 256;
  const std::vector<uint16_t> k = random_halves(hd * n, rng), v = random_halves(hd * n, rng);
  std::vector<float> q(hd);
  for (float& x : q) x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-1, 1)(rng)));
  const Scores scale(0.3f);
  std::vector<float> accs(2 * hd), partials(4), out(hd);
  const AttendFn attend = attend_function(Isa::Reference, hd);
  attend(hd, 1, split, q.data(), k.data(), v.data(), hd, scale, accs.data(), partials.data());
  attend(hd, 1, n - split, q.data(), k.data() + split * hd, v.data() + split * hd, hd, scale,
         accs.data() + hd, partials.data() + 2);
  merge_attention_chunks(hd, 2, partials.data(), 2, accs.data(), hd, out.data());
  const std::vector<double> want = exact_attention(q.data(), hd, n, k, v, 0.3f);
  for (size_t d = 0; d < hd; ++d) EXPECT_NEAR(out[d], want[d], 4e-3) << d;

  EXPECT_EQ(split_attention_chunk(1), 0u);
  EXPECT_EQ(split_attention_chunk(256), 0u);
  EXPECT_EQ(split_attention_chunk(257), 256u);  // 512 positions in two chunks
  EXPECT_EQ(split_attention_chunk(700), 384u);  // 768
}

// A sink (gpt-oss) joins the denominator and adds no value, whichever path
// the attention takes: one query, the tiles, and a split whose first chunk
// takes it; against a direct softmax in double, for sinks below the
// scores, among them, and above them all.
TEST(Attention, ASinkJoinsTheDenominatorAndAddsNoValue) {
  std::mt19937 rng(11);
  const size_t hd = 32, n = 300, split = 256, n_q = 64, pos0 = n - n_q;
  const std::vector<uint16_t> k = random_halves(hd * n, rng), v = random_halves(hd * n, rng);
  std::vector<float> q(hd * n_q);
  for (float& x : q) x = f16_to_f32(f32_to_f16(std::uniform_real_distribution<float>(-1, 1)(rng)));
  const float scale = 0.3f;
  const AttendFn attend = attend_function(Isa::Reference, hd);
  for (float sink : {-5.0f, 0.4f, 30.0f}) {
    // One query over every position.
    std::vector<float> out(hd), state(2);
    attend(hd, 1, n, q.data(), k.data(), v.data(), hd, Scores(scale), out.data(), state.data());
    add_sink(hd, sink, state.data(), out.data());
    finish_head(hd, state.data(), out.data(), out.data());
    std::vector<double> want = exact_attention(q.data(), hd, n, k, v, scale, 0, 0, sink);
    for (size_t d = 0; d < hd; ++d) EXPECT_NEAR(out[d], want[d], 4e-3) << d << " sink " << sink;

    // Split in two, the sink on the first chunk, merged.
    std::vector<float> accs(2 * hd), partials(4);
    attend(hd, 1, split, q.data(), k.data(), v.data(), hd, Scores(scale), accs.data(),
           partials.data());
    attend(hd, 1, n - split, q.data(), k.data() + split * hd, v.data() + split * hd, hd,
           Scores(scale), accs.data() + hd, partials.data() + 2);
    add_sink(hd, sink, partials.data(), accs.data());
    merge_attention_chunks(hd, 2, partials.data(), 2, accs.data(), hd, out.data());
    for (size_t d = 0; d < hd; ++d) EXPECT_NEAR(out[d], want[d], 4e-3) << d << " split " << sink;

    // The tiles: the last n_q positions' queries, causal.
    std::vector<float> tiled(n_q * hd), states(2 * n_q);
    attend_tiles_function(Isa::Reference)(hd, n_q, pos0, q.data(), hd, k.data(), v.data(), hd,
                                          Scores(scale), 0, tiled.data(), hd, states.data());
    for (size_t i = 0; i < n_q; ++i) {
      add_sink(hd, sink, states.data() + 2 * i, tiled.data() + i * hd);
      finish_head(hd, states.data() + 2 * i, tiled.data() + i * hd, tiled.data() + i * hd);
      want = exact_attention(q.data() + i * hd, hd, pos0 + i + 1, k, v, scale, 0, 0, sink);
      for (size_t d = 0; d < hd; ++d) {
        ASSERT_NEAR(tiled[i * hd + d], want[d], 1e-5) << "query " << i << " sink " << sink;
      }
    }
  }
}

}  // namespace
}  // namespace quip::kernels
