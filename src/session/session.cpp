#include "session/session.h"

#include <algorithm>

#include "base/text.h"
#include "chat/chat_template.h"
#include "chat/turn_prompt.h"
#include "engine/forward.h"
#include "grammar/token_constraint.h"
#include "session/estimate.h"
#include "tokenizer/tokenizer.h"

namespace quip::session {

namespace {

namespace fs = std::filesystem;

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The template source: the request's, the model's own, else ChatML.
Outcome<std::string> template_source(const Request& r, const LoadedModel& m) {
  if (r.template_text) return *r.template_text;
  auto own = m.file->get_optional<std::string_view>("tokenizer.chat_template");
  if (!own) return failure(FailureKind::BadData, own.error());
  if (*own) return std::string(**own);
  return std::string(chat::chatml_template());
}

// Where a template came from, for its errors: "FILE" or
// "MODEL: tokenizer.chat_template".
std::string template_name(const Request& r, const LoadedModel& m) {
  if (r.template_text) {
    return r.template_file ? r.template_file->string() : std::string("the request's template");
  }
  return m.file->name() + ": tokenizer.chat_template";
}

Outcome<Prompt> build_raw_prompt(const LoadedModel& m, const Request& r) {
  Prompt p;
  const tokenizer::Tokenizer& tok = m.tokenizer;
  const Base* base = r.base ? &*r.base : nullptr;
  if (base != nullptr && !base->raw) {
    return Failure{FailureKind::Usage, "conversation " + std::to_string(base->conversation) +
                                           " is a chat; continue it without --raw"};
  }
  std::vector<int32_t> stored = base != nullptr ? base->tokens() : std::vector<int32_t>{};
  if (base != nullptr && base->turns.back().model_fingerprint != m.fingerprint) {
    return Failure{FailureKind::Usage, "conversation " + std::to_string(base->conversation) +
                                           " was made with another model; a --raw conversation "
                                           "continues only with its own"};
  }
  std::vector<int32_t> added;
  std::string text;
  if (r.raw_tokens) {
    const uint32_t n_vocab = m.model.hparams().n_vocab;
    for (int64_t id : *r.raw_tokens) {
      if (id < 0 || id >= n_vocab) {
        return Failure{FailureKind::Usage, "--tokens: '" + std::to_string(id) +
                                               "' is not a token id in [0, " +
                                               std::to_string(n_vocab) + ")"};
      }
      added.push_back(static_cast<int32_t>(id));
    }
    if (added.empty()) return Failure{FailureKind::Usage, "--tokens: no token ids given"};
    text = tok.decode(added, {.special = true, .strip_leading_space = false});
  } else {
    text = r.raw_text;
    added = tok.encode(text, {.add_special = stored.empty(), .parse_special = true});
  }
  p.added = raw_messages(r.raw_tokens ? "" : text);
  const tokenizer::TokenId bos = tok.vocab().bos();
  if (!r.raw_tokens && stored.empty() && !added.empty() && added[0] == bos && bos >= 0 &&
      !text.starts_with(tok.vocab().text(bos))) {
    text.insert(0, tok.vocab().text(bos));  // the BOS the vocabulary added
  }
  p.text = tok.decode(stored, {.special = true, .strip_leading_space = false}) + text;
  p.tokens = std::move(stored);
  p.tokens.insert(p.tokens.end(), added.begin(), added.end());
  return p;
}

Outcome<Prompt> build_chat_prompt(const LoadedModel& m, const Request& r) {
  Prompt p;
  const tokenizer::Tokenizer& tok = m.tokenizer;
  const Base* base = r.base ? &*r.base : nullptr;
  if (base != nullptr && base->raw) {
    return Failure{FailureKind::Usage, "conversation " + std::to_string(base->conversation) +
                                           " is a --raw one; continue it with --raw"};
  }
  auto source = template_source(r, m);
  if (!source) return source.failure();
  auto tmpl = chat::ChatTemplate::parse(*source);
  // A template that fails is the model's data (BadData) or the caller's
  // (Usage); a raise_exception() refuses the messages, which are the
  // caller's in either case.
  const bool own = !r.template_text;
  if (!tmpl) {
    return Failure{own ? FailureKind::BadData : FailureKind::Usage,
                   template_name(r, m) + ": " + tmpl.error().message};
  }
  chat::RenderOptions options;
  chat::set_special_tokens(tok, options);
  options.extra["enable_thinking"] = r.think != chat::ThinkMode::Off;
  p.added = r.messages;

  // Turns that hold reasoning are rendered again, as the template expects
  // to see them (Qwen3's drops an earlier turn's thinking), rather than
  // continued from their stored tokens, which hold it: the prefix cache
  // then restores up to the first answer with reasoning.
  const bool rerender_reasoning =
      base != nullptr && r.think != chat::ThinkMode::Inline &&
      std::any_of(base->turns.begin(), base->turns.end(),
                  [](const store::TurnRecord& t) { return !t.reasoning.empty(); });
  Result<chat::TurnPrompt> turn = Error{""};
  if (base != nullptr && base->turns.back().model_fingerprint == m.fingerprint &&
      !rerender_reasoning) {
    turn = chat::next_turn_prompt(*tmpl, tok, base->history(), base->tokens(), p.added, options);
  } else {
    // A new conversation, one continued with another model (its stored
    // tokens mean nothing to this one) or one with reasoning: the whole
    // history is rendered.
    nlohmann::json messages = base != nullptr ? base->history() : nlohmann::json::array();
    for (const auto& msg : p.added) messages.push_back(msg);
    turn = chat::first_turn_prompt(*tmpl, tok, messages, options);
  }
  if (!turn) {
    const bool refused = chat::raised_by_template(turn.error());
    return Failure{own && !refused ? FailureKind::BadData : FailureKind::Usage,
                   template_name(r, m) + ": " + turn.error().message};
  }
  p.text = tok.decode(std::span(turn->tokens).first(turn->stored),
                      {.special = true, .strip_leading_space = false}) +
           turn->text;
  p.tokens = std::move(turn->tokens);
  p.shared = turn->shared;
  if (r.think != chat::ThinkMode::Inline) {
    p.reasoning = chat::reasoning_style(*source, tok.vocab());
    if (r.think == chat::ThinkMode::Off) {
      // A template that ignores enable_thinking: the section closed here.
      const std::string prefill = chat::no_reasoning_prefill(p.reasoning, p.text);
      const std::vector<int32_t> ids =
          tok.encode(prefill, {.add_special = false, .parse_special = true});
      p.tokens.insert(p.tokens.end(), ids.begin(), ids.end());
      p.text += prefill;
    }
    p.starts_in_reasoning = chat::answer_starts_in_reasoning(p.reasoning, p.text);
  }
  return p;
}

// Records the turn of a call on `m`.
void record(const LoadedModel& m, const Request& r, const Prompt& prompt, size_t n_ctx, Answer& a) {
  store::TurnRecord turn;
  std::error_code ec;
  const fs::path absolute = fs::absolute(r.model_path, ec);
  turn.model_path = (ec ? r.model_path : absolute).string();
  turn.model_fingerprint = m.fingerprint;
  turn.sampler_json = sampler_json(r.sampler, r.n_predict, n_ctx).dump();
  turn.messages_json = prompt.added.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  turn.prompt_tokens = prompt.tokens;
  turn.answer_tokens = a.tokens;
  record_turn(r, std::move(turn), a);
}

}  // namespace

const char* stop_name(engine::StopReason r) {
  switch (r) {
    case engine::StopReason::End: return "end";
    case engine::StopReason::Length: return "length";
    case engine::StopReason::Context: return "context";
    case engine::StopReason::Caller: return "interrupted";
    case engine::StopReason::Constraint: return "constraint";
  }
  return "?";
}

nlohmann::json sampler_json(const engine::SamplerSettings& s, int64_t n_predict, size_t n_ctx) {
  return {{"temp", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repeat_penalty},
          {"seed", s.seed},
          {"n_predict", n_predict},
          {"ctx_size", n_ctx}};
}

nlohmann::json timings_json(const Answer& a) {
  const Timings& t = a.timings;
  return {
      {"load_ms", t.load_ms},
      {"prompt_ms", t.prompt_ms},
      {"generation_ms", t.generation_ms},
      {"prompt_tokens_per_s",
       t.prompt_ms > 0 ? 1000.0 * static_cast<double>(a.usage.evaluated_tokens) / t.prompt_ms : 0},
      {"generation_tokens_per_s",
       t.generation_ms > 0
           ? 1000.0 * static_cast<double>(a.usage.generated_tokens) / t.generation_ms
           : 0}};
}

size_t context_size(const LoadedModel& model, const Request& request) {
  return request.n_ctx > 0 ? request.n_ctx : model.model.hparams().n_ctx_train;
}

void record_turn(const Request& r, store::TurnRecord turn, Answer& a) {
  const Base* base = r.base ? &*r.base : nullptr;
  turn.answer = a.text;
  turn.reasoning = a.reasoning;
  turn.timings_json = timings_json(a).dump();
  turn.interrupted = a.interrupted;
  turn.session = r.session;
  if (!r.database) {
    a.store_error = "no folder for the conversation database (set HOME or QUIP_HOME)";
    return;
  }
  auto store = store::Store::open(*r.database);
  if (!store) {
    a.store_error = store.error().message;
    return;
  }
  Result<store::TurnRecord> recorded = Error{};
  if (base == nullptr) {
    recorded = store->record_turn(std::move(turn));
  } else {
    // The turn was computed from the base's last turn: it follows that
    // turn, in a branch when asked (--cid ID@N) or when the conversation
    // moved on meanwhile.
    const int after = base->turns.back().turn;
    turn.conversation = base->conversation;
    recorded = store->record_continuation(std::move(turn), after, base->fork_turn.has_value());
    if (recorded && recorded->conversation != base->conversation) {
      a.forked_from = std::pair(base->conversation, after);
      a.branched = !base->fork_turn;
    }
  }
  if (recorded) {
    a.recorded = std::move(*recorded);
  } else {
    a.store_error = recorded.error().message;
  }
}

Outcome<Prompt> build_prompt(const LoadedModel& model, const Request& request) {
  // A continuation with the model that made it reuses the stored tokens:
  // they come from a file and are checked as input.
  if (request.base && !request.base->turns.empty() &&
      request.base->turns.back().model_fingerprint == model.fingerprint) {
    if (auto ok =
            check_stored_tokens(*request.base, model.model.hparams().n_vocab, model.file->name());
        !ok) {
      return failure(FailureKind::BadData, ok.error());
    }
  }
  return request.raw ? build_raw_prompt(model, request) : build_chat_prompt(model, request);
}

Outcome<Answer> generate(const LoadedModel& m, const Request& r, const Prompt& prompt,
                         const Callbacks& callbacks) {
  const size_t n_ctx = context_size(m, r);
  if (prompt.tokens.size() >= n_ctx) {
    return Failure{FailureKind::Usage, "the prompt has " + std::to_string(prompt.tokens.size()) +
                                           " tokens; the context holds " + std::to_string(n_ctx) +
                                           " (see --ctx-size)"};
  }
  Answer a;
  engine::Forward fwd(m.model, {.n_threads = r.threads, .isa = r.isa, .n_ctx = n_ctx});
  // The longest prefix an earlier call evaluated comes from the cache.
  std::optional<store::PrefixCache> prefix_cache;
  size_t restored = 0;
  // The logits after the restored prefix, when they were kept with it: a
  // prompt found whole is then answered exactly as the call that stored it
  // answered, without evaluating its last token again.
  std::vector<float> cached_logits;
  // The memory tier's key: the model, and the context that chose how its
  // keys were rotated.
  const std::string warm_key = WarmCache::key(m.fingerprint, n_ctx);
  if (callbacks.warm && !r.no_cache) {
    restored = callbacks.warm->take(warm_key, prompt.tokens, fwd.cache(), cached_logits);
  }
  const bool warm_taken = restored > 0;
  if (!r.no_cache && r.cache_dir) {
    prefix_cache.emplace(*r.cache_dir / "kv", kv_shape(m, fwd.cache(), n_ctx), r.cache_max_bytes);
    if (restored == 0) {
      std::vector<std::string> warnings;
      restored = prefix_cache->restore(prompt.tokens, fwd.cache(), warnings, &cached_logits);
      for (std::string& w : warnings) a.warnings.push_back(std::move(w));
    }
  }
  const auto keep_going = [&] { return !callbacks.keep_going || callbacks.keep_going(); };
  engine::GenerateOptions options{
      .max_tokens = r.n_predict,
      .n_ctx = n_ctx,
      .sampler = r.sampler,
      .top_logprobs = r.logprobs,
      .is_end = {},
      // A stop is heard between prompt batches too.
      .keep_going = keep_going,
      .on_prompt_progress = callbacks.on_prompt_progress,
      .prompt_logits = {},
      .keep_prompt_logits = prefix_cache.has_value() || callbacks.warm != nullptr,
      // A recurrent state is kept where the last message
      // begins too (see the marks below).
      .keep_state_at = prefix_cache ? prompt.shared : 0,
      .stepper = callbacks.stepper};
  if (restored == prompt.tokens.size()) options.prompt_logits = cached_logits;
  const tokenizer::Vocab& vocab = m.tokenizer.vocab();
  if (!r.ignore_eos) options.is_end = [&](int32_t id) { return vocab.is_eog(id); };

  std::optional<grammar::GrammarConstraint> constraint;
  if (r.grammar) {
    // The tokens options.is_end stops at (none with ignore_eos).
    std::vector<int32_t> end_tokens;
    if (!r.ignore_eos) end_tokens = vocab.end_of_generation();
    constraint.emplace(r.grammar, token_trie(m), std::move(end_tokens));
    options.constraint = &*constraint;
  }
  // Loading ends here: the vocabulary's trie (built on a model's first
  // constrained call) counts with the model's load, as it is one of its parts.
  const auto t_loaded = std::chrono::steady_clock::now();

  tokenizer::StreamDecoder decoder(m.tokenizer);
  // A constrained answer is the grammar's sentence whole: nothing of it is
  // taken for reasoning.
  chat::ReasoningSplitter splitter(r.grammar ? chat::ReasoningStyle::None : prompt.reasoning,
                                   !r.grammar && prompt.starts_in_reasoning);
  bool caller_stopped = false;
  // Each piece split into the answer's and the reasoning's parts, each
  // passed on as it comes.
  std::string answer_part, reasoning_part;
  const auto pass_on = [&](int32_t id) {
    a.text += answer_part;
    a.reasoning += reasoning_part;
    if (!reasoning_part.empty() && callbacks.on_reasoning) callbacks.on_reasoning(reasoning_part);
    bool more = true;
    // (Every token drawn, as the callback's contract says; the end's
    // remainder only where there is one.)
    if ((id >= 0 || !answer_part.empty()) && callbacks.on_token) {
      more = callbacks.on_token(id, answer_part);
    }
    answer_part.clear(), reasoning_part.clear();
    return more;
  };
  engine::Generation g = engine::generate(fwd, prompt.tokens, options, [&](int32_t id) {
    splitter.push(decoder.push(id), answer_part, reasoning_part);
    const bool more = pass_on(id);
    if (!more) caller_stopped = true;
    return more && keep_going();
  });
  splitter.push(decoder.flush(), answer_part, reasoning_part);
  splitter.finish(answer_part, reasoning_part);
  pass_on(-1);
  a.interrupted = caller_stopped || !keep_going();

  a.tokens = std::move(g.tokens);
  a.steps = std::move(g.steps);
  a.stop = g.stop;
  if (constraint) a.valid = constraint->accepting();
  a.usage = {.prompt_tokens = prompt.tokens.size(),
             .cached_tokens = g.cached_tokens,
             .evaluated_tokens = g.evaluated_tokens,
             .generated_tokens = a.tokens.size()};
  a.timings = {.load_ms = ms_between(r.start, t_loaded),
               .prompt_ms = g.prompt_ms,
               .generation_ms = g.generation_ms};

  // Keep what was evaluated for the next call; a cache that cannot take it
  // costs speed later, not this answer.
  const bool keep_warm = callbacks.warm && !r.no_cache;
  std::vector<int32_t> sequence;  // the positions' tokens, for either tier
  if (prefix_cache || keep_warm) {
    sequence = prompt.tokens;
    sequence.insert(sequence.end(), a.tokens.begin(), a.tokens.end());
  }
  if (prefix_cache) {
    // Segments end where the prompt does (the same call again finds it
    // whole) and where its last message begins (a call with the same
    // system prompt and another question finds that part).
    const size_t marks[] = {prompt.tokens.size(), prompt.shared};
    // An interrupted prompt may leave the cache short of what was restored.
    // What the memory tier gave, the disk may hold less of: its files are
    // written from the end of what they hold.
    const size_t from =
        std::min(warm_taken ? prefix_cache->find(sequence).length : restored, fwd.cache().size());
    // The prompt's end keeps the logits after it, for the same call again,
    // and the recurrent layers' state there (their state at the answer's
    // end the cache gives itself), for a follow-up.
    const store::EndLogits end_logits{prompt.tokens.size(), g.prompt_logits};
    std::vector<store::EndState> states;
    if (!g.prompt_state.empty()) states.push_back({prompt.tokens.size(), g.prompt_state});
    if (!g.kept_state.empty()) states.push_back({prompt.shared, g.kept_state});
    if (auto saved = prefix_cache->save(sequence, fwd.cache(), from, marks, end_logits, states);
        !saved) {
      a.warnings.push_back("prefix cache: " + saved.error().message);
    }
  }
  if (keep_warm) {
    callbacks.warm->put(warm_key, sequence, std::move(fwd.cache()), prompt.tokens.size(),
                        std::move(g.prompt_logits));
  }
  record(m, r, prompt, n_ctx, a);
  return a;
}

}  // namespace quip::session
