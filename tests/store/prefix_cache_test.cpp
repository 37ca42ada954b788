// The prefix cache on its own: KV rows of made-up values saved and restored
// byte for byte, prefixes found at segment ends, and every broken, foreign or
// out-of-date file ignored (with one warning) and removed when it is quip's.
#include "store/prefix_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::store {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kLayers = 2, kRowWidth = 8;

KvShape shape(const std::string& fingerprint = "0123456789abcdef",
              const std::string& variant = "") {
  return {fingerprint, kLayers, kRowWidth, 0, variant};
}

// A cache holding `n` positions whose rows are a function of (seed, position).
engine::KvCache filled(size_t n, uint32_t seed = 1) {
  engine::KvCache c(kLayers, kRowWidth);
  c.reserve(n);
  c.grow_to(n);
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (size_t i = 0; i < n * kRowWidth; ++i) {
      c.k(l)[i] = static_cast<uint16_t>(seed * 7919 + l * 104729 + i * 31);
      c.v(l)[i] = static_cast<uint16_t>(seed * 7907 + l * 1299709 + i * 17 + 5);
    }
  }
  return c;
}

std::vector<uint8_t> rows(const engine::KvCache& c, size_t n) {
  std::vector<uint8_t> out;
  c.save(0, n, out);
  return out;
}

std::vector<int32_t> tokens(size_t n, int32_t base = 100) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = base + static_cast<int32_t>(i * 3 % 1000);
  return t;
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class PrefixCacheTest : public ::testing::Test {
 protected:
  fs::path dir() const { return tmp_.path() / "kv"; }
  PrefixCache cache(uint64_t max = kDefaultCacheBytes) const { return {dir(), shape(), max}; }

  // Restores the longest prefix of `t`; checks the rows are the saved ones.
  size_t restore(const std::vector<int32_t>& t, const engine::KvCache& saved,
                 std::vector<std::string>* warnings = nullptr) {
    engine::KvCache c(kLayers, kRowWidth);
    std::vector<std::string> w;
    const size_t n = cache().restore(t, c, w);
    EXPECT_EQ(c.size(), n);
    if (n > 0) {
      EXPECT_EQ(rows(c, n), rows(saved, n)) << "restored rows differ";
    }
    if (warnings != nullptr) {
      *warnings = w;
    } else {
      EXPECT_TRUE(w.empty()) << w.front();
    }
    return n;
  }

  testing::TempDir tmp_;
};

TEST_F(PrefixCacheTest, RestoresWhatWasSavedByteForByte) {
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
  EXPECT_EQ(restore(t, kv), 150u);
  // Segments end at each block and at the end: 64, 128, 150.
  EXPECT_EQ(files_under(dir()).size(), 3u);
}

// Rows computed another way (LongRoPE's long factors) are never restored
// under the model's plain rows, nor the other way round; each variant
// finds its own.
TEST_F(PrefixCacheTest, KeepsVariantsApart) {
  const auto t = tokens(100);
  const engine::KvCache plain = filled(100, 1), variant = filled(100, 2);
  PrefixCache other(dir(), shape("0123456789abcdef", "rope_factors_long"), kDefaultCacheBytes);
  ASSERT_TRUE(cache().save(t, plain, 0, {}).ok());
  engine::KvCache c(kLayers, kRowWidth);
  std::vector<std::string> warnings;
  EXPECT_EQ(other.restore(t, c, warnings), 0u);
  EXPECT_TRUE(warnings.empty());
  ASSERT_TRUE(other.save(t, variant, 0, {}).ok());
  EXPECT_EQ(other.restore(t, c, warnings), 100u);
  EXPECT_EQ(rows(c, 100), rows(variant, 100));
  EXPECT_EQ(restore(t, plain), 100u);  // the plain rows, still
}

// Latent attention's cache holds key rows alone (its values are their
// first part): v is k, a position is half the bytes, and its segments
// round-trip, are whole to cache_stats, and are never read as rows of keys
// and values (nor those as theirs).
TEST_F(PrefixCacheTest, KeysOnlyRowsRoundTripAndStayApart) {
  const size_t n = 100;
  engine::KvCache keys(kLayers, kRowWidth, /*values_in_keys=*/true);
  keys.reserve(n);
  keys.grow_to(n);
  for (uint32_t l = 0; l < kLayers; ++l) {
    EXPECT_EQ(keys.v(l), keys.k(l));
    for (size_t i = 0; i < n * kRowWidth; ++i) keys.k(l)[i] = static_cast<uint16_t>(l * 977 + i);
  }
  EXPECT_EQ(keys.position_bytes(), kLayers * kRowWidth * sizeof(uint16_t));
  KvShape keys_shape = shape();
  keys_shape.values_in_keys = true;
  PrefixCache keys_cache(dir(), keys_shape, kDefaultCacheBytes);
  const auto t = tokens(n);
  ASSERT_TRUE(keys_cache.save(t, keys, 0, {}).ok());
  std::multiset<uint64_t> sizes, want;  // segments of 64 positions and of the rest
  for (const fs::path& f : files_under(dir())) sizes.insert(fs::file_size(f));
  for (uint64_t positions : {uint64_t{64}, uint64_t{n - 64}}) {
    want.insert(72 + positions * (4 + keys.position_bytes()));
  }
  EXPECT_EQ(sizes, want);
  auto stats = cache_stats(dir());
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->broken.empty()) << stats->broken.front().problem;

  engine::KvCache back(kLayers, kRowWidth, /*values_in_keys=*/true);
  std::vector<std::string> warnings;
  EXPECT_EQ(keys_cache.restore(t, back, warnings), n);
  EXPECT_EQ(rows(back, n), rows(keys, n));
  EXPECT_TRUE(warnings.empty());

  engine::KvCache both(kLayers, kRowWidth);
  EXPECT_EQ(cache().restore(t, both, warnings), 0u);
  EXPECT_EQ(both.size(), 0u);
}

// A hybrid model's cache: layers 0 and 2 recurrent (no rows; floats that
// are the whole sequence's), layer 1 with rows.
constexpr engine::RecurrentShape kRecurrent{.conv_floats = 6, .state_floats = 10};
engine::KvCache hybrid() {
  return engine::KvCache(3, kRowWidth, false, {1, 0, 1}, kRecurrent);
}

// A hybrid cache of n positions whose rows and state are functions of
// (seed, n): the state after n positions differs from the state after any
// other count.
engine::KvCache hybrid_filled(size_t n, uint32_t seed = 1) {
  engine::KvCache c = hybrid();
  c.reserve(n);
  c.grow_to(n);
  for (size_t i = 0; i < n * kRowWidth; ++i) {
    c.k(1)[i] = static_cast<uint16_t>(seed * 7919 + i * 31);
    c.v(1)[i] = static_cast<uint16_t>(seed * 7907 + i * 17 + 5);
  }
  for (uint32_t l : {0u, 2u}) {
    for (size_t i = 0; i < kRecurrent.conv_floats; ++i) c.conv(l)[i] = float(seed + n * 10 + i);
    for (size_t i = 0; i < kRecurrent.state_floats; ++i) c.state(l)[i] = float(l) - float(n) / 8;
  }
  return c;
}

// The prefix cache's shape of hybrid() caches (logits of n_vocab floats).
KvShape hybrid_shape(uint32_t n_vocab) {
  KvShape shape{"0123456789abcdef", 1, kRowWidth, n_vocab, ""};
  shape.state_bytes = hybrid().state_bytes();
  return shape;
}

std::vector<uint8_t> state_of(const engine::KvCache& c) {
  std::vector<uint8_t> out;
  c.save_state(out);
  return out;
}

TEST(KvCacheRecurrent, RowsOnlyInAttentionLayersAndTheStateWhole) {
  engine::KvCache c = hybrid();
  EXPECT_EQ(c.n_layer(), 3u);
  EXPECT_EQ(c.row_layers(), 1u);
  EXPECT_TRUE(c.has_recurrent());
  EXPECT_EQ(c.position_bytes(), 2 * kRowWidth * sizeof(uint16_t));
  EXPECT_EQ(c.state_bytes(), 2 * (6 + 10) * sizeof(float));
  EXPECT_EQ(state_of(c), std::vector<uint8_t>(c.state_bytes(), 0));  // starts at zero

  const engine::KvCache a = hybrid_filled(20);
  engine::KvCache b = hybrid();
  std::vector<uint8_t> bytes;
  a.save(0, 20, bytes);
  ASSERT_TRUE(b.restore(bytes, 20).ok());
  ASSERT_TRUE(b.restore_state(state_of(a)).ok());
  EXPECT_EQ(rows(b, 20), rows(a, 20));
  EXPECT_EQ(state_of(b), state_of(a));
  EXPECT_FALSE(b.restore_state(std::vector<uint8_t>(3)).ok());
  // Cut back to nothing, the state starts anew.
  b.truncate(0);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(state_of(b), std::vector<uint8_t>(b.state_bytes(), 0));
}

// Segments carry the state where it was known (the cache's own end, and
// the caller's snapshots); a prefix is restored only to such an end, with
// that state, and a whole sequence only with its logits.
TEST_F(PrefixCacheTest, HybridPrefixesEndOnlyWhereAStateWasKept) {
  constexpr uint32_t kVocab = 11;
  const engine::KvCache kv = hybrid_filled(150), at_100 = hybrid_filled(100);
  PrefixCache c(dir(), hybrid_shape(kVocab), kDefaultCacheBytes);
  const auto t = tokens(200);
  const std::vector<uint8_t> snapshot = state_of(at_100);
  const EndState states[] = {{100, snapshot}};
  const std::vector<float> logits(kVocab, 0.5f);
  ASSERT_TRUE(c.save(std::span(t).first(150), kv, 0, {}, {100, logits}, states).ok());
  // Ends at 64 and 128 (blocks, no state), 100 and 150 (states).
  std::multiset<uint64_t> sizes, want;
  for (const fs::path& f : files_under(dir())) sizes.insert(fs::file_size(f));
  const uint64_t row = 4 + kv.position_bytes(), state = kv.state_bytes();
  want = {72 + 64 * row, 72 + 36 * row + state + kVocab * 4, 72 + 28 * row, 72 + 22 * row + state};
  EXPECT_EQ(sizes, want);
  auto stats = cache_stats(dir());
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->broken.empty()) << stats->broken.front().problem;

  // Restores `n` tokens of t; returns the length and checks rows and state.
  const auto restore_hybrid = [&](size_t n, bool with_logits) {
    engine::KvCache r = hybrid();
    std::vector<std::string> w;
    std::vector<float> got_logits;
    const size_t got = c.restore(std::span(t).first(n), r, w, with_logits ? &got_logits : nullptr);
    EXPECT_TRUE(w.empty()) << w.front();
    EXPECT_EQ(r.size(), got);
    EXPECT_EQ(rows(r, got), rows(kv, got));
    if (got != 0) {
      EXPECT_EQ(state_of(r), state_of(hybrid_filled(got))) << got;
    }
    return got;
  };
  EXPECT_EQ(restore_hybrid(200, true), 150u);  // a follow-up: from the end's state
  EXPECT_EQ(restore_hybrid(140, true), 100u);  // 128 kept no state
  EXPECT_EQ(restore_hybrid(150, true), 100u);  // all of it: no logits after 150
  EXPECT_EQ(restore_hybrid(100, true), 100u);  // all of it, with its logits
  EXPECT_EQ(restore_hybrid(100, false), 0u);   // ... which the caller must take
  EXPECT_EQ(restore_hybrid(90, true), 0u);     // only 64 below: no state there
}

// A segment stored without a state (a block's end) is written again by a
// call that has the state there, so a hybrid prefix can end there after.
TEST_F(PrefixCacheTest, HybridStateIsAddedToAStoredSegment) {
  const engine::KvCache kv = hybrid_filled(100), at_64 = hybrid_filled(64);
  PrefixCache c(dir(), hybrid_shape(0), kDefaultCacheBytes);
  const auto t = tokens(101);
  const auto restore_64 = [&] {
    engine::KvCache r = hybrid();
    std::vector<std::string> w;
    const size_t got = c.restore(std::span(t).first(65), r, w);
    EXPECT_TRUE(w.empty()) << w.front();
    return got == 64 && state_of(r) == state_of(at_64);
  };
  ASSERT_TRUE(c.save(std::span(t).first(100), kv, 0, {}).ok());
  EXPECT_FALSE(restore_64());  // 64 ends a block, without a state
  const std::vector<uint8_t> snapshot = state_of(at_64);
  const EndState states[] = {{64, snapshot}};
  ASSERT_TRUE(c.save(std::span(t).first(100), kv, 0, {}, {}, states).ok());
  EXPECT_TRUE(restore_64());
  EXPECT_EQ(files_under(dir()).size(), 2u);
}

// A changed byte of a snapshot fails the checksum: the segment goes with a
// warning, and a shorter prefix with a sound state is restored.
TEST_F(PrefixCacheTest, HybridBrokenStateIsNeverRestored) {
  const engine::KvCache kv = hybrid_filled(150), at_100 = hybrid_filled(100);
  PrefixCache c(dir(), hybrid_shape(0), kDefaultCacheBytes);
  const auto t = tokens(200);
  const std::vector<uint8_t> snapshot = state_of(at_100);
  const EndState states[] = {{100, snapshot}};
  ASSERT_TRUE(c.save(std::span(t).first(150), kv, 0, {}, {}, states).ok());
  const uint64_t last = 72 + 22 * (4 + kv.position_bytes()) + kv.state_bytes();
  for (const fs::path& f : files_under(dir())) {
    if (fs::file_size(f) != last) continue;
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(last - 3));
    io.put('\x7f');
  }
  engine::KvCache r = hybrid();
  std::vector<std::string> warnings;
  EXPECT_EQ(c.restore(t, r, warnings), 100u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("checksum mismatch"), std::string::npos) << warnings[0];
  EXPECT_EQ(state_of(r), snapshot);
}

TEST_F(PrefixCacheTest, FindsTheLongestStoredPrefix) {
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  ASSERT_TRUE(cache().save(t, kv, 0, std::vector<size_t>{100}).ok());
  auto longer = t;
  longer.push_back(7);
  longer.push_back(8);
  EXPECT_EQ(restore(longer, kv), 150u);  // a continuation
  auto shorter = std::vector<int32_t>(t.begin(), t.begin() + 100);
  EXPECT_EQ(restore(shorter, kv), 100u);  // the mark
  auto other_end = std::vector<int32_t>(t.begin(), t.begin() + 120);
  other_end.push_back(9);
  EXPECT_EQ(restore(other_end, kv), 100u);  // the best segment end before the difference
  auto differs_early = t;
  differs_early[70] = 1;
  EXPECT_EQ(restore(differs_early, kv), 64u);  // the shared first block
  differs_early[3] = 1;
  EXPECT_EQ(restore(differs_early, kv), 0u);
}

// A follow-up stores only its new rows, linked to what it extends.
TEST_F(PrefixCacheTest, FollowUpsStoreOnlyTheirNewRows) {
  auto t = tokens(300);
  const engine::KvCache kv = filled(300);
  engine::KvCache first(kLayers, kRowWidth);
  first.reserve(100);
  ASSERT_TRUE(first.restore(rows(kv, 100), 100).ok());
  ASSERT_TRUE(cache().save(t, first, 0, {}).ok());
  const auto stats1 = cache_stats(dir());
  ASSERT_TRUE(stats1.ok());

  engine::KvCache second(kLayers, kRowWidth);
  std::vector<std::string> w;
  ASSERT_EQ(cache().restore(t, second, w), 100u);
  // The follow-up evaluated positions 100..300.
  engine::KvCache extended(kLayers, kRowWidth);
  ASSERT_TRUE(extended.restore(rows(kv, 300), 300).ok());
  ASSERT_TRUE(cache().save(t, extended, 100, {}).ok());
  const auto stats2 = cache_stats(dir());
  ASSERT_TRUE(stats2.ok());
  const uint64_t position_bytes = kv.position_bytes() + sizeof(int32_t);
  EXPECT_LT(stats2->bytes - stats1->bytes, 200 * position_bytes + 5 * 128)
      << "the follow-up stored more than its 200 new positions";
  EXPECT_EQ(restore(t, kv), 300u);
}

TEST_F(PrefixCacheTest, BrokenFilesAreIgnoredWithAWarningAndRemoved) {
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  struct Breakage {
    const char* name;
    void (*apply)(const fs::path&);
    bool foreign = false;  // no longer quip's format: ignored, but left to its owner
  };
  const Breakage breakages[] = {
      {"a flipped row byte",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(-3, std::ios::end);
         f.put('\x55');
       }},
      {"a flipped token",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(72);
         f.put('\x01');
       }},
      {"truncated", [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 10); }},
      {"truncated to its header", [](const fs::path& p) { fs::resize_file(p, 40); }},
      {"empty", [](const fs::path& p) { fs::resize_file(p, 0); }},
      {"padded",
       [](const fs::path& p) {
         std::ofstream f(p, std::ios::app | std::ios::binary);
         f << "extra";
       }},
      {"the version before logits (1), its checksum not matching",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(8);
         f.put('\x01');
       }},
      {"a later version",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(8);
         f.put('\x63');
       }},
      {"garbage", [](const fs::path& p) { testing::write_bytes(p, std::string(5000, 'x')); }, true},
      {"large garbage", [](const fs::path& p) { testing::write_bytes(p, std::string(50000, 'x')); },
       true},
  };
  for (const Breakage& b : breakages) {
    SCOPED_TRACE(b.name);
    ASSERT_TRUE(clear_cache(dir()).ok());
    ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
    const auto files = files_under(dir());
    ASSERT_EQ(files.size(), 3u);
    // Break the middle segment (positions 64..128).
    const fs::path victim = [&] {
      for (const auto& f : files) {
        if (fs::file_size(f) == 72 + 64 * (4 + kv.position_bytes())) {
          std::ifstream in(f, std::ios::binary);
          std::vector<char> h(72);
          in.read(h.data(), 72);
          uint32_t begin;
          std::memcpy(&begin, h.data() + 56, 4);
          if (begin == 64) return f;
        }
      }
      return fs::path();
    }();
    ASSERT_FALSE(victim.empty());
    b.apply(victim);
    std::vector<std::string> warnings;
    EXPECT_EQ(restore(t, kv, &warnings), 64u) << "only the part before the broken segment";
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(victim.filename().string()), std::string::npos) << warnings[0];
    if (b.foreign) {
      EXPECT_NE(warnings[0].find("not a quip cache file"), std::string::npos) << warnings[0];
      ASSERT_TRUE(fs::exists(victim)) << "quip removed a file it did not write";
      fs::remove(victim);
    }
    EXPECT_FALSE(fs::exists(victim));
    // The call computes normally; saving again repairs the cache.
    engine::KvCache c(kLayers, kRowWidth);
    std::vector<std::string> w;
    ASSERT_EQ(cache().restore(t, c, w), 64u);
    ASSERT_TRUE(cache().save(t, kv, 64, {}).ok());
    EXPECT_EQ(restore(t, kv), 150u);
  }
}

// The logits after a prompt's end are kept with the segment that ends there
// and come back, bit for bit, with a restore of exactly that prefix; other
// ends have none, and a file whose logits are cut or flipped is refused.
TEST_F(PrefixCacheTest, KeepsTheLogitsAfterAPromptEnd) {
  constexpr uint32_t kVocab = 37;
  const KvShape with_vocab{"0123456789abcdef", kLayers, kRowWidth, kVocab, ""};
  PrefixCache c(dir(), with_vocab, kDefaultCacheBytes);
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  std::vector<float> logits(kVocab);
  for (uint32_t i = 0; i < kVocab; ++i)
    logits[i] = std::ldexp(1.0f + i, -static_cast<int>(i % 9)) - 3;
  logits[5] = std::numeric_limits<float>::denorm_min();
  const size_t mark = 100;
  ASSERT_TRUE(c.save(t, kv, 0, {&mark, 1}, {mark, logits}).ok());

  const auto restore_logits = [&](size_t n, std::vector<float>& out) {
    engine::KvCache r(kLayers, kRowWidth);
    std::vector<std::string> w;
    out.assign(3, 1.0f);  // emptied when there are none
    const size_t got = c.restore(std::span(t).first(n), r, w, &out);
    EXPECT_TRUE(w.empty()) << w.front();
    EXPECT_EQ(rows(r, got), rows(kv, got));
    return got;
  };
  std::vector<float> got;
  EXPECT_EQ(restore_logits(100, got), 100u);
  ASSERT_EQ(got.size(), kVocab);
  EXPECT_EQ(std::memcmp(got.data(), logits.data(), kVocab * sizeof(float)), 0);
  EXPECT_EQ(restore_logits(150, got), 150u);  // the answer's end: none
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(restore_logits(64, got), 64u);  // a block boundary: none
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(restore_logits(120, got), 100u);  // a longer prompt restores to the mark
  EXPECT_EQ(got.size(), kVocab);              // (the caller uses them only for a whole prompt)

  // The segment [64, 100) with its logits: cut them short, or flip one.
  fs::path with_logits;
  for (const auto& f : files_under(dir())) {
    if (fs::file_size(f) == 72 + 36 * (4 + kv.position_bytes()) + kVocab * 4) with_logits = f;
  }
  ASSERT_FALSE(with_logits.empty());
  const std::string good = testing::read_file(with_logits);
  for (int breakage = 0; breakage < 2; ++breakage) {
    std::string bad = good;
    if (breakage == 0) {
      bad.resize(bad.size() - 4);
    } else {
      bad[bad.size() - 7] ^= 0x10;
    }
    testing::write_bytes(with_logits, bad);
    engine::KvCache r(kLayers, kRowWidth);
    std::vector<std::string> w;
    std::vector<float> out;
    EXPECT_EQ(c.restore(std::span(t).first(100), r, w, &out), 64u) << breakage;
    EXPECT_TRUE(out.empty());
    ASSERT_EQ(w.size(), 1u);
    EXPECT_FALSE(fs::exists(with_logits));
    ASSERT_TRUE(c.save(t, kv, 64, {&mark, 1}, {mark, logits}).ok());  // repaired
  }
}

// A sound file of format version 1 (before logits): not used, removed
// without a warning, and stored anew by the call.
TEST_F(PrefixCacheTest, FilesOfTheFormerVersionGoQuietly) {
  const auto t = tokens(100);
  const engine::KvCache kv = filled(100);
  ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
  const auto files = files_under(dir());
  ASSERT_EQ(files.size(), 2u);
  // Version 1's layout is version 2's without logits: rewrite the version
  // and the checksum as quip 1 wrote them.
  const fs::path old_file = files[0];
  std::string bytes = testing::read_file(old_file);
  bytes[8] = 1;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, bytes.data(), 64);
  XXH3_64bits_update(state, bytes.data() + 72, bytes.size() - 72);
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  std::memcpy(bytes.data() + 64, &sum, 8);
  testing::write_bytes(old_file, bytes);

  engine::KvCache c(kLayers, kRowWidth);
  std::vector<std::string> w;
  const size_t n = cache().restore(t, c, w);
  EXPECT_LT(n, 100u);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_FALSE(fs::exists(old_file));
  ASSERT_TRUE(cache().save(t, kv, n, {}).ok());
  EXPECT_EQ(restore(t, kv), 100u);
}

// Files of another model, or of another KV shape, are never used, even when
// copied under this model's folder.
TEST_F(PrefixCacheTest, ForeignFilesAreNeverUsed) {
  const auto t = tokens(100);
  const engine::KvCache kv = filled(100, 2);
  PrefixCache other(dir(), shape("fedcba9876543210"), kDefaultCacheBytes);
  ASSERT_TRUE(other.save(t, kv, 0, {}).ok());
  EXPECT_EQ(restore(t, kv), 0u);  // another folder, other names
  // Swapped in under the names this model's own segments have.
  ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
  const auto own = files_under(dir() / "0123456789abcdef");
  const auto foreign = files_under(dir() / "fedcba9876543210");
  ASSERT_EQ(own.size(), 2u);
  ASSERT_EQ(foreign.size(), 2u);
  for (const auto& f : own) {
    for (const auto& g : foreign) {
      if (fs::file_size(f) == fs::file_size(g))
        fs::copy_file(g, f, fs::copy_options::overwrite_existing);
    }
  }
  std::vector<std::string> warnings;
  EXPECT_EQ(restore(t, kv, &warnings), 0u);
  EXPECT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("another model"), std::string::npos) << warnings[0];
  EXPECT_TRUE(files_under(dir() / "0123456789abcdef").empty());

  PrefixCache wide(dir(), {"0123456789abcdef", kLayers, kRowWidth * 2, 0, ""}, kDefaultCacheBytes);
  engine::KvCache w(kLayers, kRowWidth * 2);
  w.reserve(100);
  w.grow_to(100);
  ASSERT_TRUE(wide.save(t, w, 0, {}).ok());
  EXPECT_EQ(restore(t, kv, &warnings), 0u);
}

TEST_F(PrefixCacheTest, EvictsTheLeastRecentlyUsedBeyondTheLimit) {
  const engine::KvCache kv = filled(64);
  const uint64_t one = 72 + 64 * (4 + kv.position_bytes());
  PrefixCache small(dir(), shape(), 3 * one);
  std::vector<std::vector<int32_t>> seqs;
  for (int i = 0; i < 5; ++i) {
    seqs.push_back(tokens(64, 1000 * (i + 1)));
    ASSERT_TRUE(small.save(seqs.back(), kv, 0, {}).ok());
    usleep(20000);  // file times are the LRU clock: make each save distinctly later
  }
  auto stats = cache_stats(dir());
  ASSERT_TRUE(stats.ok());
  EXPECT_LE(stats->bytes, 3 * one);
  EXPECT_EQ(stats->files, 3u);
  EXPECT_EQ(restore(seqs[4], kv), 64u);  // the newest stays
  EXPECT_EQ(restore(seqs[0], kv), 0u);   // the oldest went

  auto removed = prune_cache(dir(), 0);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 3 * one);
  EXPECT_EQ(cache_stats(dir())->files, 0u);
}

// Processes saving and restoring the same and different sequences at once:
// every restore gives the saved rows (restore() checks them).
TEST_F(PrefixCacheTest, ConcurrentProcessesKeepTheCacheValid) {
  const engine::KvCache kv = filled(200);
  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      bool ok = true;
      for (int round = 0; round < 20; ++round) {
        const auto t = tokens(200, 100 * (round % 3));
        engine::KvCache c(kLayers, kRowWidth);
        std::vector<std::string> w;
        const size_t n = cache().restore(t, c, w);
        ok = ok && w.empty() && (n == 0 || rows(c, n) == rows(kv, n));
        ok = ok && cache().save(t, kv, n, {}).ok();
      }
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(restore(tokens(200, 0), kv), 200u);
}

// A segment file of the model folder, by the position its rows begin at.
fs::path segment_beginning_at(const fs::path& model_dir, uint32_t begin) {
  for (const auto& e : fs::directory_iterator(model_dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<char> h(72);
    if (!in.read(h.data(), 72)) continue;
    uint32_t b;
    std::memcpy(&b, h.data() + 56, 4);
    if (b == begin) return e.path();
  }
  return {};
}

// `quip cache clear` removes quip's files only: segments (whole or broken)
// and temporary files, by their names in quip's model folders. Everything
// else stays and is listed.
TEST_F(PrefixCacheTest, ClearRemovesOnlyQuipsFiles) {
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
  const fs::path model = dir() / "0123456789abcdef";
  ASSERT_EQ(files_under(model).size(), 3u);
  // Quip's, broken: zero-length, truncated (the start of a real segment).
  testing::write_bytes(model / "00000000000000aa.kv", "");
  std::ifstream in(segment_beginning_at(model, 0), std::ios::binary);
  std::string head(40, '\0');
  in.read(head.data(), 40);
  testing::write_bytes(model / "00000000000000bb.kv", head);
  testing::write_bytes(model / "tmp-1-2.part", "half a file");
  // Not quip's.
  const std::vector<fs::path> foreign = {
      dir() / "README",
      dir() / "other" / "data.bin",
      model / "notes.txt",
      model / "00000000000000cc.kv",  // a segment's name, another format
      model / "00000000000000dd.kv",  // a FIFO
      dir() / "fedcba9876543210x"};
  fs::create_directories(dir() / "other");
  testing::write_bytes(foreign[0], "mine");
  testing::write_bytes(foreign[1], "mine");
  testing::write_bytes(foreign[2], "mine");
  testing::write_bytes(foreign[3], "not a cache file");
  ASSERT_EQ(::mkfifo(foreign[4].c_str(), 0600), 0);
  testing::write_bytes(foreign[5], "mine");

  auto report = clear_cache(dir());
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->files, 6u) << "3 segments, 2 broken ones, 1 temporary file";
  for (const fs::path& f : foreign) EXPECT_TRUE(fs::exists(fs::symlink_status(f))) << f;
  for (const auto& e : fs::recursive_directory_iterator(dir())) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name == "tmp-1-2.part" || name == "00000000000000aa.kv" ||
                 name == "00000000000000bb.kv")
        << e.path();
  }
  EXPECT_EQ(report->left.size(), 6u);  // other/ counts as one
  EXPECT_TRUE(report->failed.empty());
  // A model folder left empty goes.
  fs::remove(foreign[2]);
  fs::remove(foreign[3]);
  fs::remove(foreign[4]);
  ASSERT_TRUE(clear_cache(dir()).ok());
  EXPECT_FALSE(fs::exists(model));
  EXPECT_TRUE(fs::exists(dir()));
}

// A zero-length or truncated segment is reported by cache_stats (no call
// finds it unless it needs that prefix), and prune removes it.
TEST_F(PrefixCacheTest, StatsReportBrokenSegmentsAndPruneRemovesThem) {
  const auto t = tokens(150);
  const engine::KvCache kv = filled(150);
  ASSERT_TRUE(cache().save(t, kv, 0, {}).ok());
  const fs::path model = dir() / "0123456789abcdef";
  const fs::path middle = segment_beginning_at(model, 64);
  ASSERT_FALSE(middle.empty());
  fs::resize_file(middle, fs::file_size(middle) - 10);
  const uint64_t cut = fs::file_size(middle);
  testing::write_bytes(model / "00000000000000aa.kv", "");
  auto stats = cache_stats(dir());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->files, 2u);
  ASSERT_EQ(stats->broken.size(), 2u);
  std::map<std::string, std::string> problems;
  for (const BrokenCacheFile& b : stats->broken) problems[b.path.filename().string()] = b.problem;
  EXPECT_EQ(problems["00000000000000aa.kv"], "zero-length");
  EXPECT_EQ(problems[middle.filename().string()].substr(0, 9), "truncated");
  EXPECT_EQ(stats->foreign, 0u);

  auto removed = prune_cache(dir(), kDefaultCacheBytes, /*remove_broken=*/true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, cut);  // the two broken files (one is empty), nothing else
  EXPECT_FALSE(fs::exists(middle));
  EXPECT_FALSE(fs::exists(model / "00000000000000aa.kv"));
  stats = cache_stats(dir());
  EXPECT_TRUE(stats->broken.empty());
  EXPECT_EQ(stats->files, 2u);
}

// Segments are 0600 and the folders 0700, the cache folder above kv/
// included; looser ones (an older quip's) are repaired by the next save.
TEST_F(PrefixCacheTest, FilesArePrivate) {
  const mode_t old = ::umask(022);
  const auto mode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  };
  const fs::path model = dir() / "0123456789abcdef";
  ASSERT_TRUE(cache().save(tokens(100), filled(100), 0, {}).ok());
  for (const fs::path& f : files_under(dir())) EXPECT_EQ(mode(f), 0600u) << f;
  for (const fs::path& d : {model, dir(), tmp_.path()}) EXPECT_EQ(mode(d), 0700u) << d;
  for (const fs::path& f : files_under(dir())) ::chmod(f.c_str(), 0644);
  for (const fs::path& d : {model, dir(), tmp_.path()}) ::chmod(d.c_str(), 0755);
  ASSERT_TRUE(cache().save(tokens(100, 7), filled(100), 0, {}).ok());
  for (const fs::path& f : files_under(dir())) EXPECT_EQ(mode(f), 0600u) << f;
  for (const fs::path& d : {model, dir(), tmp_.path()}) EXPECT_EQ(mode(d), 0700u) << d;
  ::umask(old);
}

TEST(ParseSize, UnitsAndErrors) {
  EXPECT_EQ(*parse_size("1000"), 1000u);
  EXPECT_EQ(*parse_size("4GiB"), uint64_t{4} << 30);
  EXPECT_EQ(*parse_size("4G"), uint64_t{4} << 30);
  EXPECT_EQ(*parse_size("10GB"), 10000000000u);
  EXPECT_EQ(*parse_size("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*parse_size("0"), 0u);
  for (const char* bad : {"", "G", "4X", "-1", "4 GiBs", "99999999999999999999", "16777216T"}) {
    EXPECT_FALSE(parse_size(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace quip::store
