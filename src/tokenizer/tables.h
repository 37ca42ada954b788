// Hash tables for vocabularies: text -> token id, and (left, right) token
// pair -> BPE merge. Open addressing with linear probing over flat arrays:
// built once at load, read-only after (safe to share between threads), and
// several times faster to build than node-based maps for a 128k vocabulary
// with 280k merges (every one-shot call pays the build).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace quip::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// Maps each of a list of strings to its index. Neither the strings nor the
// list are copied: the caller keeps both alive and unchanged (moving a vector
// keeps its buffer, so the owner may be moved).
class StringIndex {
 public:
  // Indexes texts[0..n). On duplicates the first index wins.
  void build(std::span<const std::string_view> texts);

  TokenId find(std::string_view text) const;

 private:
  struct Slot {
    uint32_t hash = 0;
    TokenId id = kNoToken;
  };
  std::span<const std::string_view> texts_;
  std::vector<Slot> slots_;  // size a power of two
  uint64_t mask_ = 0;
};

struct Merge {
  uint32_t rank;   // lower merges first
  TokenId result;  // the token the pair becomes
};

// Maps a pair of token ids to its merge.
class PairIndex {
 public:
  void reserve(size_t n);
  // Adds a merge unless the pair is already present (the first rank wins).
  void insert(TokenId left, TokenId right, Merge merge);
  const Merge* find(TokenId left, TokenId right) const;
  size_t size() const { return count_; }

 private:
  static uint64_t key(TokenId l, TokenId r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  void grow();

  struct Slot {
    uint64_t key = ~uint64_t{0};  // empty
    Merge merge{};
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace quip::tokenizer
