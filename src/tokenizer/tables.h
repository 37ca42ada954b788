// Hash tables for vocabularies: text -> token id, and (left, right) token
// pair -> BPE merge. Open addressing with linear probing over flat arrays:
// built once at load, read-only after (safe to share between threads), and
// several times faster to build than node-based maps for a 128k vocabulary
// with 280k merges (every one-shot call pays the build).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/big_alloc.h"

namespace quip::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// Maps strings stored in one arena to their indices. Neither the arena nor
// the texts are copied: the caller keeps them alive and unchanged (a moved
// std::vector keeps its buffer, so the owner may be moved).
class StringIndex {
 public:
  static constexpr size_t kMaxText = 65535;

  // Indexes texts[0..n), each a view into `arena` of at most kMaxText
  // bytes. Returns the first index whose text repeats an earlier one's, or -1
  // if all texts are distinct. Empty texts are not indexed.
  int64_t build(const char* arena, std::span<const std::string_view> texts);

  TokenId find(std::string_view text) const { return find(text, hash(text)); }

  // find() in two steps, so that a caller looking up many texts can prefetch
  // the slots of later texts while it looks up earlier ones.
  static uint64_t hash(std::string_view text);
  void prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask_]);
  }
  TokenId find(std::string_view text, uint64_t hash) const;

 private:
  // The text is kept in the slot (offset into the arena, length), so that a
  // probe touches the slot and the text and nothing between them.
  struct Slot {
    uint32_t hash = 0;
    TokenId id = kNoToken;
    uint32_t offset = 0;
    uint32_t len = 0;
  };

  const char* arena_ = nullptr;
  BigVector<Slot> slots_;  // size a power of two
  uint64_t mask_ = 0;
};

// Maps a pair of token ids to its BPE merge rank. Each slot is one 64-bit
// word, (pair + 1) in the high bits and the rank in the low bits (0: empty),
// so a 280k-merge table is 4 MiB.
class PairIndex {
 public:
  static constexpr uint32_t kNoRank = ~uint32_t{0};

  // Sizes the table for `n_merges` pairs of tokens below `n_vocab`. False if
  // a pair and its rank cannot share 64 bits (vocabularies past ~2^28 tokens).
  [[nodiscard]] bool init(size_t n_vocab, size_t n_merges);

  // Hints that (left, right) will be inserted or looked up soon.
  void prefetch(TokenId left, TokenId right) const {
    __builtin_prefetch(&slots_[mix(key(left, right)) & mask_], 1);
  }

  // Adds the pair with `rank` unless it is present (the first rank wins).
  // PRECONDITIONS: init(); ids below n_vocab; rank below n_merges.
  void insert(TokenId left, TokenId right, uint32_t rank);

  // The rank of the pair, or kNoRank.
  uint32_t find(TokenId left, TokenId right) const;

  // The table as stored, to be saved and adopted again by a later process.
  // Any change to the slot layout or to mix() must change kLayoutVersion.
  static constexpr uint32_t kLayoutVersion = 1;
  std::span<const uint64_t> slots() const { return slots_; }
  // Takes slots saved from a table that init(n_vocab, n_merges) sized; false
  // (and nothing taken) if their number does not fit those sizes.
  [[nodiscard]] bool adopt(BigVector<uint64_t> slots, size_t n_vocab, size_t n_merges);

 private:
  bool size_for(size_t n_vocab, size_t n_merges);
  uint64_t key(TokenId l, TokenId r) const {
    return static_cast<uint64_t>(l) * n_vocab_ + static_cast<uint64_t>(r) + 1;
  }
  // A 64-bit finalizer (splitmix64) to spread keys over the table.
  static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  BigVector<uint64_t> slots_;  // 0: empty
  uint64_t mask_ = 0;
  uint64_t n_vocab_ = 0;
  uint32_t rank_bits_ = 0;
};

}  // namespace quip::tokenizer
