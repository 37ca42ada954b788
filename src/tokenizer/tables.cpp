#include "tokenizer/tables.h"

#define XXH_INLINE_ALL  // short keys: an inlined hash beats a call into the shared library
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "base/check.h"

namespace quip::tokenizer {

namespace {

uint64_t hash_text(std::string_view s) {
  return XXH3_64bits(s.data(), s.size());
}

// Most tokens are a few bytes long: a plain loop beats a call to memcmp.
bool equal(const char* a, std::string_view b) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// At most 3/4 full, so probes stay short.
size_t table_size(size_t n) {
  return std::bit_ceil(std::max<size_t>(16, n + n / 3 + 1));
}

}  // namespace

int64_t StringIndex::build(const char* arena, std::span<const std::string_view> texts) {
  arena_ = arena;
  slots_.assign(table_size(texts.size()), Slot{});
  mask_ = slots_.size() - 1;
  int64_t duplicate = -1;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string_view t = texts[i];
    CHECK(t.size() <= kMaxText);
    if (t.empty()) continue;
    const uint64_t h = hash_text(t);
    const auto h32 = static_cast<uint32_t>(h >> 32);
    for (uint64_t p = h & mask_;; p = (p + 1) & mask_) {
      Slot& s = slots_[p];
      if (s.id == kNoToken) {
        s = Slot{h32, static_cast<TokenId>(i), static_cast<uint32_t>(t.data() - arena),
                 static_cast<uint32_t>(t.size())};
        break;
      }
      if (s.hash == h32 && s.len == t.size() && equal(arena + s.offset, t)) {
        if (duplicate < 0) duplicate = static_cast<int64_t>(i);  // the first index keeps it
        break;
      }
    }
  }
  return duplicate;
}

uint64_t StringIndex::hash(std::string_view text) {
  return hash_text(text);
}

TokenId StringIndex::find(std::string_view text, uint64_t h) const {
  if (slots_.empty()) return kNoToken;
  const auto h32 = static_cast<uint32_t>(h >> 32);
  for (uint64_t p = h & mask_;; p = (p + 1) & mask_) {
    const Slot& s = slots_[p];
    if (s.id == kNoToken) return kNoToken;
    if (s.hash == h32 && s.len == text.size() && equal(arena_ + s.offset, text)) return s.id;
  }
}

bool PairIndex::size_for(size_t n_vocab, size_t n_merges) {
  const uint64_t max_key = static_cast<uint64_t>(n_vocab) * n_vocab + 1;
  if (n_vocab > (uint64_t{1} << 31) || std::bit_width(max_key) >= 64) return false;
  const auto rank_bits = 64 - static_cast<uint32_t>(std::bit_width(max_key));
  if (n_merges > (uint64_t{1} << rank_bits)) return false;
  n_vocab_ = n_vocab;
  rank_bits_ = rank_bits;
  mask_ = table_size(n_merges) - 1;
  return true;
}

bool PairIndex::init(size_t n_vocab, size_t n_merges) {
  if (!size_for(n_vocab, n_merges)) return false;
  slots_.assign(mask_ + 1, 0);
  return true;
}

bool PairIndex::adopt(BigVector<uint64_t> slots, size_t n_vocab, size_t n_merges) {
  if (!size_for(n_vocab, n_merges) || slots.size() != mask_ + 1) {
    slots_.clear();
    return false;
  }
  slots_ = std::move(slots);
  return true;
}

void PairIndex::insert(TokenId left, TokenId right, uint32_t rank) {
  const uint64_t k = key(left, right);
  for (uint64_t p = mix(k) & mask_;; p = (p + 1) & mask_) {
    uint64_t& s = slots_[p];
    if (s == 0) {
      s = (k << rank_bits_) | rank;
      return;
    }
    if ((s >> rank_bits_) == k) return;
  }
}

uint32_t PairIndex::find(TokenId left, TokenId right) const {
  if (slots_.empty()) return kNoRank;
  const uint64_t k = key(left, right);
  for (uint64_t p = mix(k) & mask_;; p = (p + 1) & mask_) {
    const uint64_t s = slots_[p];
    if (s == 0) return kNoRank;
    if ((s >> rank_bits_) == k) return static_cast<uint32_t>(s & ((uint64_t{1} << rank_bits_) - 1));
  }
}

}  // namespace quip::tokenizer
