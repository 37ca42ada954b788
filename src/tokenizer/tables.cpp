#include "tokenizer/tables.h"

#include <xxhash.h>

#include <bit>

#include "base/check.h"

namespace quip::tokenizer {

namespace {

uint64_t hash_text(std::string_view s) {
  return XXH3_64bits(s.data(), s.size());
}

// A 64-bit finalizer (splitmix64) to spread pair keys over the table.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

size_t table_size(size_t n) {
  return std::bit_ceil(std::max<size_t>(16, n * 2));
}

}  // namespace

void StringIndex::build(std::span<const std::string_view> texts) {
  texts_ = texts;
  slots_.assign(table_size(texts.size()), Slot{});
  mask_ = slots_.size() - 1;
  for (size_t i = 0; i < texts.size(); ++i) {
    const uint64_t h = hash_text(texts[i]);
    const auto h32 = static_cast<uint32_t>(h >> 32);
    for (uint64_t p = h & mask_;; p = (p + 1) & mask_) {
      Slot& s = slots_[p];
      if (s.id == kNoToken) {
        s = Slot{h32, static_cast<TokenId>(i)};
        break;
      }
      if (s.hash == h32 && texts[static_cast<size_t>(s.id)] == texts[i]) break;  // first wins
    }
  }
}

TokenId StringIndex::find(std::string_view text) const {
  if (slots_.empty()) return kNoToken;
  const uint64_t h = hash_text(text);
  const auto h32 = static_cast<uint32_t>(h >> 32);
  for (uint64_t p = h & mask_;; p = (p + 1) & mask_) {
    const Slot& s = slots_[p];
    if (s.id == kNoToken) return kNoToken;
    if (s.hash == h32 && texts_[static_cast<size_t>(s.id)] == text) return s.id;
  }
}

void PairIndex::reserve(size_t n) {
  if (table_size(n) > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(table_size(n), Slot{});
    mask_ = slots_.size() - 1;
    count_ = 0;
    for (const Slot& s : old) {
      if (s.key != ~uint64_t{0}) {
        insert(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key & 0xFFFFFFFF),
               s.merge);
      }
    }
  }
}

void PairIndex::grow() {
  reserve(count_ * 2 + 16);
}

void PairIndex::insert(TokenId left, TokenId right, Merge merge) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t k = key(left, right);
  for (uint64_t p = mix(k) & mask_;; p = (p + 1) & mask_) {
    Slot& s = slots_[p];
    if (s.key == ~uint64_t{0}) {
      s = Slot{k, merge};
      ++count_;
      return;
    }
    if (s.key == k) return;
  }
}

const Merge* PairIndex::find(TokenId left, TokenId right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t k = key(left, right);
  for (uint64_t p = mix(k) & mask_;; p = (p + 1) & mask_) {
    const Slot& s = slots_[p];
    if (s.key == k) return &s.merge;
    if (s.key == ~uint64_t{0}) return nullptr;
  }
}

}  // namespace quip::tokenizer
