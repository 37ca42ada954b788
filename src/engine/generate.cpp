#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "engine/forward_ref.h"

namespace quip::engine {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k) {
  const std::vector<double> lp = log_softmax(logits);
  std::vector<int32_t> ids(lp.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const auto n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), ids.size());
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
      [&](int32_t a, int32_t b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
  std::vector<TokenLogprob> out;
  for (size_t i = 0; i < n; ++i) out.push_back({ids[i], lp[ids[i]]});
  return out;
}

Generation generate(Forward& fwd, std::span<const int32_t> prompt, const GenerateOptions& options,
                    const std::function<bool(int32_t)>& on_token) {
  CHECK(!prompt.empty() && prompt.size() < options.n_ctx);
  CHECK(fwd.position() <= prompt.size());
  Generation g;
  auto sampler = Sampler::create(options.sampler);
  CHECK(sampler.ok());

  const auto start = std::chrono::steady_clock::now();
  const size_t n_vocab = fwd.model().hparams().n_vocab;
  std::span<const float> logits;
  if (fwd.position() == prompt.size()) {
    if (options.prompt_logits.size() == n_vocab) {
      logits = options.prompt_logits;  // kept with the cache: nothing to evaluate
    } else {
      // The logits after the prompt need its last token evaluated here.
      fwd.cache().truncate(prompt.size() - 1);
    }
  }
  g.cached_tokens = fwd.position();
  const size_t first = fwd.position();
  // The stepper's, or fwd's own, steps; a stepper hears when they end.
  const auto eval = [&](std::span<const int32_t> tokens) {
    return options.stepper ? options.stepper->prompt(fwd, tokens) : fwd.eval(tokens);
  };
  const auto decode = [&](int32_t id) {
    return options.stepper ? options.stepper->decode(fwd, id) : fwd.eval({&id, 1});
  };
  struct Done {
    Stepper* stepper;
    Forward& fwd;
    ~Done() {
      if (stepper) stepper->done(fwd);
    }
  } done{options.stepper, fwd};
  // With recurrent layers, a batch ends where their state is to be kept.
  const size_t keep_at = fwd.cache().has_recurrent() && options.keep_state_at > first &&
                                 options.keep_state_at < prompt.size()
                             ? options.keep_state_at - first
                             : 0;
  const std::span<const int32_t> rest = prompt.subspan(first);
  const auto progress = [&](size_t begin) {
    if (options.on_prompt_progress) options.on_prompt_progress(first + begin, prompt.size(), first);
  };
  if (!rest.empty()) progress(0);
  for (size_t begin = 0; begin < rest.size();) {
    if (options.keep_going && !options.keep_going()) {
      g.stop = StopReason::Caller;
      g.prompt_ms = ms_since(start);
      return g;
    }
    size_t n = std::min(fwd.max_batch(), rest.size() - begin);
    if (begin < keep_at) n = std::min(n, keep_at - begin);
    logits = eval(rest.subspan(begin, n));
    g.evaluated_tokens += n;
    begin += n;
    if (begin == keep_at) fwd.cache().save_state(g.kept_state);
    progress(begin);
  }
  g.prompt_ms = ms_since(start);
  if (options.keep_prompt_logits) {
    g.prompt_logits.assign(logits.begin(), logits.end());
    fwd.cache().save_state(g.prompt_state);
  }

  const auto gen_start = std::chrono::steady_clock::now();
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  const auto limit_reached = [&] {
    return options.max_tokens >= 0 && g.tokens.size() >= static_cast<uint64_t>(options.max_tokens);
  };
  std::vector<float> allowed;  // with a constraint: the logits it leaves
  while (!limit_reached()) {
    std::span<const float> draw_from = logits;
    if (options.constraint) {
      if (options.constraint->complete()) {
        g.stop = StopReason::End;
        break;
      }
      allowed.assign(logits.begin(), logits.end());
      if (!options.constraint->restrict(allowed)) {
        g.stop = StopReason::Constraint;
        break;
      }
      draw_from = allowed;
    }
    const int32_t id = sampler->sample(draw_from, history);
    if (options.top_logprobs > 0)
      g.steps.push_back({id, top_logprobs(logits, options.top_logprobs)});
    if (options.is_end && options.is_end(id)) {
      g.stop = StopReason::End;
      break;
    }
    if (options.constraint) options.constraint->accept(id);
    g.tokens.push_back(id);
    history.push_back(id);
    if (!on_token(id)) {
      g.stop = StopReason::Caller;
      break;
    }
    if (limit_reached()) break;  // no need for the logits after the last token
    if (history.size() >= options.n_ctx) {
      g.stop = StopReason::Context;
      break;
    }
    logits = decode(id);
  }
  g.generation_ms = ms_since(gen_start);
  return g;
}

}  // namespace quip::engine
