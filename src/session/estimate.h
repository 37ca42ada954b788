// What a call would cost, found without running the model (--estimate):
// the prompt's tokens, how many of them the prefix cache would restore, the
// memory the call needs beyond the mapped weights, and the speeds measured
// on earlier turns with the same model, from which a time follows.
//
// Read only: the prefix cache and the conversation database are looked at,
// never changed. Nothing here prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv_cache.h"
#include "session/loaded_model.h"
#include "session/outcome.h"
#include "session/session.h"
#include "store/prefix_cache.h"

namespace quip::session {

struct Estimate {
  size_t prompt_tokens = 0;
  // Restored from the prefix cache (as Usage::cached_tokens would say),
  // and left for the forward pass.
  size_t cached_tokens = 0, evaluated_tokens = 0;
  size_t n_ctx = 0;
  // KV positions the call may fill: the prompt and Request::n_predict
  // tokens, at most the context (all of it without n_predict).
  size_t positions = 0;
  uint64_t kv_bytes = 0;       // the KV cache for `positions` (and recurrent state)
  uint64_t scratch_bytes = 0;  // the forward pass's buffers (about)
  uint64_t weights_bytes = 0;  // the model file: mapped, shared between processes
  // Tokens per second measured by the newest turn with this model that
  // evaluated (generated) any; empty: none yet.
  std::optional<double> prompt_tokens_per_s, generation_tokens_per_s;
  // The time for the prompt (0 when the cache holds it all) and for
  // n_predict tokens, from those speeds; empty where a speed or n_predict
  // is missing.
  std::optional<double> prompt_seconds, generation_seconds;
  std::vector<std::string> warnings;  // a database that cannot be read, ...
};

// The estimate for `prompt` (from build_prompt for `request`).
// Failures: Usage (the prompt does not fit the context).
Outcome<Estimate> estimate(const LoadedModel& model, const Request& request, const Prompt& prompt);

// The prefix cache's key for `model`'s rows in `cache` (a Forward's) with
// context n_ctx: what generate stores under and estimate looks up.
store::KvShape kv_shape(const LoadedModel& model, const engine::KvCache& cache, size_t n_ctx);

}  // namespace quip::session
