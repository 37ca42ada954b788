#include "session/warm_cache.h"

#include <algorithm>

namespace quip::session {

uint64_t WarmCache::bytes_of(const engine::KvCache& cache) {
  return uint64_t{cache.capacity()} * cache.position_bytes() + cache.state_bytes();
}

size_t WarmCache::take(const std::string& key, std::span<const int32_t> tokens,
                       engine::KvCache& cache, std::vector<float>& logits) {
  std::lock_guard lock(mu_);
  auto best = entries_.end();
  size_t best_shared = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    const size_t limit = std::min(tokens.size(), it->tokens.size());
    const size_t shared = static_cast<size_t>(
        std::mismatch(tokens.begin(), tokens.begin() + static_cast<long>(limit), it->tokens.begin())
            .first -
        tokens.begin());
    if (it->cache.has_recurrent() && (shared != it->tokens.size() || shared == tokens.size())) {
      continue;
    }
    if (shared > best_shared) best = it, best_shared = shared;
  }
  if (best_shared == 0) return 0;
  cache = std::move(best->cache);
  cache.truncate(best_shared);
  if (best_shared == tokens.size() && best->prompt == best_shared) {
    logits = std::move(best->logits);
  }
  ++stats_.hits;
  stats_.reused_tokens += best_shared;
  erase(best);
  return best_shared;
}

void WarmCache::put(const std::string& key, std::span<const int32_t> tokens, engine::KvCache cache,
                    size_t prompt, std::vector<float> logits) {
  const uint64_t bytes = bytes_of(cache) + logits.size() * sizeof(float);
  if (bytes > max_bytes_ || cache.size() == 0 || cache.size() > tokens.size()) return;
  std::lock_guard lock(mu_);
  entries_.push_front(
      {key, std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<long>(cache.size())),
       std::move(cache), prompt, std::move(logits), bytes});
  stats_.bytes += bytes;
  ++stats_.entries;
  while (stats_.bytes > max_bytes_) erase(std::prev(entries_.end()));
}

std::string WarmCache::key(const std::string& fingerprint, size_t n_ctx) {
  return fingerprint + "/" + std::to_string(n_ctx);
}

void WarmCache::drop_model(const std::string& fingerprint) {
  const std::string prefix = fingerprint + "/";
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->key.starts_with(prefix) ? erase(it) : std::next(it);
  }
}

std::list<WarmCache::Entry>::iterator WarmCache::erase(std::list<Entry>::iterator it) {
  stats_.bytes -= it->bytes;
  --stats_.entries;
  return entries_.erase(it);
}

WarmCache::Stats WarmCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace quip::session
