#include "session/estimate.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/forward.h"
#include "store/store.h"

namespace quip::session {

namespace {

// Enough turns back to find one that evaluated or generated something.
constexpr int kTurnsLookedAt = 50;

// The newest positive rate of `field` in the timings of `turns`.
std::optional<double> newest_rate(const std::vector<std::string>& turns, const char* field) {
  for (const std::string& text : turns) {
    // A turn stores what its caller wrote; one that does not parse is
    // passed over, not an error.
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains(field) || !j[field].is_number()) continue;
    const double rate = j[field].get<double>();
    if (rate > 0) return rate;
  }
  return std::nullopt;
}

}  // namespace

store::KvShape kv_shape(const LoadedModel& m, const engine::KvCache& cache, size_t n_ctx) {
  return store::KvShape{.fingerprint = m.fingerprint,
                        .n_layer = cache.row_shape().n_layer,
                        .row_width = cache.row_shape().row_width,
                        .n_vocab = m.model.hparams().n_vocab,
                        .variant = std::string(m.model.kv_variant(n_ctx)),
                        .values_in_keys = cache.values_in_keys(),
                        .state_bytes = cache.state_bytes()};
}

Outcome<Estimate> estimate(const LoadedModel& m, const Request& r, const Prompt& prompt) {
  Estimate e;
  e.n_ctx = context_size(m, r);
  e.prompt_tokens = prompt.tokens.size();
  if (e.prompt_tokens >= e.n_ctx) {
    return Failure{FailureKind::Usage, "the prompt has " + std::to_string(e.prompt_tokens) +
                                           " tokens; the context holds " + std::to_string(e.n_ctx) +
                                           " (see --ctx-size)"};
  }
  // A Forward as the call makes it, for its cache's shape and its scratch;
  // nothing is evaluated.
  const engine::Forward fwd(m.model, {.n_threads = 1, .isa = r.isa, .n_ctx = e.n_ctx});
  if (!r.no_cache && r.cache_dir) {
    const store::PrefixCache cache(*r.cache_dir / "kv", kv_shape(m, fwd.cache(), e.n_ctx),
                                   r.cache_max_bytes);
    const store::PrefixCache::Found found = cache.find(prompt.tokens);
    // Without the logits after a whole prompt, the call evaluates its last
    // token again (engine::generate).
    e.cached_tokens = found.length == e.prompt_tokens && !found.logits && found.length > 0
                          ? found.length - 1
                          : found.length;
  }
  e.evaluated_tokens = e.prompt_tokens - e.cached_tokens;

  e.positions = r.n_predict >= 0
                    ? std::min(e.n_ctx, e.prompt_tokens + static_cast<size_t>(r.n_predict))
                    : e.n_ctx;
  e.kv_bytes = uint64_t{e.positions} * fwd.cache().position_bytes() + fwd.cache().state_bytes();
  e.scratch_bytes = fwd.scratch_bytes(std::min(fwd.max_batch(), e.evaluated_tokens));
  e.weights_bytes = m.file->total_size();

  std::error_code ec;
  if (r.database && std::filesystem::exists(*r.database, ec)) {
    auto store = store::Store::open_read_only(*r.database);
    auto timings = store ? store->recent_timings(m.fingerprint, kTurnsLookedAt)
                         : Result<std::vector<std::string>>(store.error());
    if (timings) {
      e.prompt_tokens_per_s = newest_rate(*timings, "prompt_tokens_per_s");
      e.generation_tokens_per_s = newest_rate(*timings, "generation_tokens_per_s");
    } else {
      e.warnings.push_back("no measured speed: " + timings.error().message);
    }
  }
  if (e.evaluated_tokens == 0) {
    e.prompt_seconds = 0.0;
  } else if (e.prompt_tokens_per_s) {
    e.prompt_seconds = static_cast<double>(e.evaluated_tokens) / *e.prompt_tokens_per_s;
  }
  if (r.n_predict >= 0 && e.generation_tokens_per_s) {
    e.generation_seconds = static_cast<double>(r.n_predict) / *e.generation_tokens_per_s;
  }
  return e;
}

}  // namespace quip::session
