// Generation: a prompt through the forward pass, then tokens drawn one at a
// time until the model ends its turn, a limit is reached, or the caller
// stops. Tokens in, tokens out: text is the caller's business.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/forward.h"
#include "engine/sampler.h"

namespace quip::engine {

// What may come next, for constrained output (grammar/token_constraint.h).
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logits of the tokens that may not come next to -infinity
  // (end-of-generation tokens included); false when no token may.
  virtual bool restrict(std::span<float> logits) = 0;
  // The token drawn, which the last restrict allowed.
  virtual void accept(int32_t id) = 0;
  // Whether the answer is whole and nothing may follow it: generation
  // ends there, without drawing an end token.
  virtual bool complete() const = 0;
};

// Where a generation's forward steps run: on its own Forward by default. A
// server whose callers decode together (serve/batcher.h) runs them for it,
// on the caller's Forward and its cache.
class Stepper {
 public:
  virtual ~Stepper() = default;
  // Evaluates prompt tokens on `fwd` as fwd.eval does; the logits after the
  // last, valid until the next call on `fwd`.
  virtual std::span<const float> prompt(Forward& fwd, std::span<const int32_t> tokens) = 0;
  // Evaluates an answer's token after fwd's cache; the logits after it,
  // valid until the next call on `fwd`.
  virtual std::span<const float> decode(Forward& fwd, int32_t id) = 0;
  // The generation on `fwd` is over: its cache is not stepped any more.
  virtual void done(Forward& fwd) = 0;
};

struct GenerateOptions {
  int64_t max_tokens = -1;  // -1: no limit but the context
  size_t n_ctx = 4096;      // positions available to prompt and answer together
  SamplerSettings sampler;
  int top_logprobs = 0;                 // K: report the K most likely tokens of each step
  std::function<bool(int32_t)> is_end;  // end-of-generation tokens (not part of the answer)
  // Constrained output: only tokens it allows are drawn (top_logprobs
  // still report the model's own distribution). Null: none.
  TokenConstraint* constraint = nullptr;
  // Asked between batches of the prompt (Forward's max_batch tokens each):
  // false stops before the answer, keeping what was evaluated in the cache.
  std::function<bool()> keep_going;
  // Told how far the prompt is: once before its first batch and after each
  // batch, with the prompt positions the cache holds (cached ones
  // included), the prompt's length and the positions it held at the start.
  // Null: none.
  std::function<void(size_t done, size_t total, size_t cached)> on_prompt_progress;
  // The logits after the whole prompt (n_vocab floats), when the cache holds
  // all of the prompt and these were kept with it (the prefix cache): used as
  // they are instead of evaluating the last prompt token again, which alone
  // gives other float orders than the batch that first evaluated it. Empty:
  // that token is evaluated again.
  std::span<const float> prompt_logits;
  // Copy the logits after the prompt into Generation::prompt_logits (for a
  // cache to keep), and with recurrent layers their state there into
  // Generation::prompt_state.
  bool keep_prompt_logits = false;
  // With recurrent layers, a prompt position (beyond the cache's, before
  // the prompt's end) where their state goes to Generation::kept_state:
  // a prompt batch ends there. 0: none.
  size_t keep_state_at = 0;
  // Runs the forward steps; null: `fwd` itself.
  Stepper* stepper = nullptr;
};

struct TokenLogprob {
  int32_t id;
  double logprob;  // log-softmax over the whole vocabulary, before sampling
};

struct Step {
  int32_t id;                     // the token drawn (an end token included)
  std::vector<TokenLogprob> top;  // the top_logprobs most likely, most likely first
};

// Constraint: no token of the vocabulary can continue the constrained answer.
enum class StopReason { End, Length, Context, Caller, Constraint };

struct Generation {
  std::vector<int32_t> tokens;  // the answer; an end token is not included
  std::vector<Step> steps;      // with top_logprobs: one per token drawn
  StopReason stop = StopReason::Length;
  size_t cached_tokens = 0;     // prompt tokens the cache held already
  size_t evaluated_tokens = 0;  // prompt tokens the forward pass computed
  double prompt_ms = 0, generation_ms = 0;
  // With keep_prompt_logits: the logits after the prompt (n_vocab floats),
  // and the recurrent layers' state there (KvCache::save_state; empty
  // without recurrent layers); empty when the prompt was stopped before
  // its end.
  std::vector<float> prompt_logits;
  std::vector<uint8_t> prompt_state;
  // With keep_state_at: the recurrent layers' state there (empty where the
  // prompt was stopped before it, or there was nothing to keep).
  std::vector<uint8_t> kept_state;
};

// Evaluates the prompt tokens beyond what `fwd` already holds (a cache that
// holds the whole prompt uses options.prompt_logits, or without them has its
// last position evaluated again for the logits, which a cache with
// recurrent layers cannot), then generates. on_token(id) is called for each
// answer token as it is drawn; returning false stops generation, as does keep_going returning false
// during the prompt (StopReason::Caller either way). PRECONDITIONS: the cache holds a prefix of
// `prompt` (with recurrent layers, all of it only with options.prompt_logits); prompt is not
// empty and shorter than options.n_ctx; options.sampler is valid.
Generation generate(Forward& fwd, std::span<const int32_t> prompt, const GenerateOptions& options,
                    const std::function<bool(int32_t)>& on_token);

// The k most likely tokens of `logits`, most likely first.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k);

}  // namespace quip::engine
