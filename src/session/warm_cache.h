// The caches of calls that have ended, kept in memory for the next call on
// the same model: a resident server's tier above the prefix cache on disk.
// A follow-up to a conversation just answered takes the cache its last call
// left, cut to what the two share, and evaluates only its new turn, with
// nothing read from disk. Bounded in bytes; the least recently kept go
// first.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_cache.h"

namespace quip::session {

class WarmCache {
 public:
  explicit WarmCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Moves into `cache` the kept cache that shares the longest prefix with
  // `tokens` among those kept under `key` (the model's fingerprint and the
  // context, which chooses the keys' rotation), cut to that prefix; returns
  // its positions, or 0 when none shares any (`cache` untouched then). A
  // cache with recurrent layers, whose state cannot be cut, is taken only
  // when all of it is a prefix, and not when it holds all of `tokens`
  // (the logits after them are not kept). When all of `tokens` is found
  // and the logits after them were kept, they go to `logits`.
  size_t take(const std::string& key, std::span<const int32_t> tokens, engine::KvCache& cache,
              std::vector<float>& logits);

  // Keeps `cache`, whose positions hold the first cache.size() of `tokens`
  // (a call's prompt and answer), with the logits after the first
  // `prompt` tokens (empty: none), then drops the least recently kept
  // while over the bound. One larger than the bound is not kept.
  void put(const std::string& key, std::span<const int32_t> tokens, engine::KvCache cache,
           size_t prompt, std::vector<float> logits);

  // Drops every cache kept under a key of the model `fingerprint` (an
  // unloaded model's: its caches would only hold memory).
  void drop_model(const std::string& fingerprint);

  // The key of the caches of model `fingerprint` under a context of n_ctx.
  static std::string key(const std::string& fingerprint, size_t n_ctx);

  struct Stats {
    uint64_t bytes = 0, entries = 0;
    uint64_t hits = 0;           // takes that found a cache
    uint64_t reused_tokens = 0;  // positions those gave
  };
  Stats stats() const;

  // The memory a cache holds (what the bound counts).
  static uint64_t bytes_of(const engine::KvCache& cache);

 private:
  struct Entry {
    std::string key;
    std::vector<int32_t> tokens;  // the cache's positions' tokens
    engine::KvCache cache;
    size_t prompt;              // where `logits` are
    std::vector<float> logits;  // after the prompt, or empty
    uint64_t bytes;
  };
  // Removes an entry, with its bytes and count; the lock held.
  std::list<Entry>::iterator erase(std::list<Entry>::iterator it);

  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;  // most recently kept first
  Stats stats_;
};

}  // namespace quip::session
