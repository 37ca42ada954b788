// One call of the model, without a command line: a request (the model
// already chosen and loaded, the messages or raw text or token ids, the
// sampler settings and limits, the conversation continued) goes through
//
//   prompt -> (prefix cache) -> forward -> sampler -> tokens -> record
//
// and comes back as a result: the answer's tokens and text, why it stopped,
// usage counts and timings, the turn recorded (or why it was not), and
// warnings. Used by the `quip` command and by a resident server alike.
//
// Nothing here prints or picks an exit status: failures come back as an
// Outcome whose kind the caller maps (session/outcome.h); warnings and a
// store that cannot take the turn come back in the result, because they cost
// the record or later speed, not the answer.
// Thread safety: a call uses only its own state and the loaded model (read
// only), so calls on one LoadedModel may run on several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning.h"
#include "engine/generate.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "kernels/dot.h"
#include "session/conversation.h"
#include "session/loaded_model.h"
#include "session/outcome.h"
#include "session/warm_cache.h"
#include "store/prefix_cache.h"
#include "store/store.h"

namespace quip::session {

struct Request {
  // The model, already chosen and loaded by the caller; recorded as given
  // (made absolute).
  std::filesystem::path model_path;

  // The prompt. Chat: `messages` (what this call adds, e.g. a system and a
  // user message) through the chat template. Raw: `raw_text` as it is, or
  // `raw_tokens` as ids (checked against the vocabulary).
  bool raw = false;
  nlohmann::json messages = nlohmann::json::array();
  std::string raw_text;
  std::optional<std::vector<int64_t>> raw_tokens;
  // Chat: a Jinja template instead of the model's own (ChatML when the
  // model has none), and the file it came from, which errors name. The
  // caller reads the file: what a user's file may be is its rule.
  std::optional<std::string> template_text;
  std::optional<std::filesystem::path> template_file;
  // The conversation continued, or none for a new one.
  std::optional<Base> base;

  // Generation.
  engine::SamplerSettings sampler;  // valid (engine::Sampler::create accepts it)
  int64_t n_predict = -1;           // -1: until the end of the turn or of the context
  size_t n_ctx = 0;                 // positions for prompt and answer; 0: the model's
  int threads = 1;
  kernels::Isa isa = kernels::Isa::Reference;
  bool ignore_eos = false;  // go on past end-of-generation tokens
  int logprobs = 0;         // report the K most likely tokens of each step
  // The reasoning of a model that thinks before it answers (chat only):
  // told apart from the answer (Answer::reasoning) unless Inline; Off asks
  // the template not to think (enable_thinking=false) or closes the section
  // in the prompt. Templates see enable_thinking=true otherwise, as
  // llama.cpp passes it.
  chat::ThinkMode think = chat::ThinkMode::Hide;
  // Constrained output: the answer is drawn as a sentence of this grammar
  // (and its reasoning is not told apart: the caller turns thinking off).
  // Null: free text.
  std::shared_ptr<const grammar::Grammar> grammar;

  // The prefix cache: `cache_dir`/kv, unless no_cache or there is no folder.
  bool no_cache = false;
  std::optional<std::filesystem::path> cache_dir;
  uint64_t cache_max_bytes = store::kDefaultCacheBytes;

  // The record: a turn in `database` (none: the result says why not),
  // made in `session` (what -c finds).
  std::optional<std::filesystem::path> database;
  std::string session;

  // When the call began, for the load time reported (the caller's start,
  // so that it includes reading its options and loading the model).
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// The whole prompt of a call and the messages it adds to the conversation.
struct Prompt {
  std::vector<int32_t> tokens;
  size_t shared = 0;     // chat::TurnPrompt::shared: a prefix the cache keeps whole
  std::string text;      // the text of every token (what --print-prompt shows)
  nlohmann::json added;  // the messages this turn records
  // How the model writes its reasoning (None where it is not told apart),
  // and whether the answer begins inside it (the prompt opened it).
  chat::ReasoningStyle reasoning = chat::ReasoningStyle::None;
  bool starts_in_reasoning = false;
};

struct Usage {
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;     // restored from the prefix cache
  size_t evaluated_tokens = 0;  // computed by this call
  size_t generated_tokens = 0;
};

struct Timings {
  double load_ms = 0;  // from Request::start to the first evaluation
  double prompt_ms = 0, generation_ms = 0;
};

struct Answer {
  std::vector<int32_t> tokens;  // an end token is not included
  std::string text;             // their text (may end inside a character when cut short)
  // The model's reasoning before its answer, apart from `text` (which is then
  // the answer alone); empty where the model wrote none or it is not told apart.
  std::string reasoning;
  std::vector<engine::Step> steps;  // with logprobs: one per token drawn
  engine::StopReason stop = engine::StopReason::Length;
  bool interrupted = false;  // stopped by the caller (on_token or keep_going)
  // With Request::grammar: whether the answer is a whole sentence of it
  // (not when cut short by -n, the context or the caller).
  std::optional<bool> valid;
  Usage usage;
  Timings timings;
  // The turn as recorded (conversation and turn numbers filled), or why it
  // was not recorded.
  std::optional<store::TurnRecord> recorded;
  std::string store_error;
  // Recorded in a new conversation forked from (conversation, turn): asked
  // for (Base::fork_turn), or `branched` because the conversation moved on
  // while this call ran (another call recorded a turn), so that the record
  // shows the history the model actually saw.
  std::optional<std::pair<int64_t, int>> forked_from;
  bool branched = false;
  std::vector<std::string> warnings;  // one line each (an unusable cache file, ...)
};

// The prompt `request` sends to `model`, without running it.
// Failures: Usage (a prompt that does not fit the conversation, a template
// file that cannot be read or parsed, token ids out of the vocabulary),
// BadData (the model's own template is broken).
Outcome<Prompt> build_prompt(const LoadedModel& model, const Request& request);

struct Callbacks {
  // Each answer token as it is drawn, with the text it completes (may be
  // empty: part of a character); false stops the answer. After the last
  // token, called once more with id -1 and the decoder's remaining text
  // when there is any (its return value is then ignored).
  std::function<bool(int32_t id, std::string_view text)> on_token;
  // The reasoning's text as it comes (Prompt::reasoning); on_token then
  // sees the answer's alone (an empty text for a token of the reasoning).
  std::function<void(std::string_view text)> on_reasoning;
  // Asked between prompt batches and before each token: false stops
  // (Ctrl-C, a client gone). Null: never.
  std::function<bool()> keep_going;
  // How far the prompt's evaluation is (engine::GenerateOptions::
  // on_prompt_progress): once before its first batch, then after each.
  // Not called when nothing of the prompt is left to evaluate. Null: none.
  std::function<void(size_t done, size_t total, size_t cached)> on_prompt_progress;
  // Where the forward steps run (a server's batcher); null: the call's own
  // forward pass.
  engine::Stepper* stepper = nullptr;
  // Caches kept in memory by earlier calls (a server's), tried before the
  // prefix cache on disk; this call's cache goes there at its end. Null:
  // none.
  WarmCache* warm = nullptr;
};

// Runs `prompt` (from build_prompt for the same request) and records the
// turn. Failures: Usage (the prompt does not fit the context).
Outcome<Answer> generate(const LoadedModel& model, const Request& request, const Prompt& prompt,
                         const Callbacks& callbacks);

// Records the turn of a call that `a` answers (in this process or by a
// remote backend): `turn` holds what only the caller knows (the model's path
// and fingerprint, the settings, the messages added, the exact tokens where
// there are any); the answer's text, reasoning, timings and interruption
// come from `a`, the session and the conversation continued from `r`. A
// store that cannot take the turn costs the record, not the answer: the
// failure comes back in a.store_error; a.recorded (and a.forked_from,
// a.branched) say where it went.
void record_turn(const Request& r, store::TurnRecord turn, Answer& a);

// The sampler settings and limits as a turn records them and --json reports.
nlohmann::json sampler_json(const engine::SamplerSettings& s, int64_t n_predict, size_t n_ctx);
// The timings as a turn records them and --json reports, with the rates.
nlohmann::json timings_json(const Answer& answer);

// "end", "length", "context", "interrupted", "constraint".
const char* stop_name(engine::StopReason r);

// The context a request gets on `model`: Request::n_ctx, else the model's.
size_t context_size(const LoadedModel& model, const Request& request);

}  // namespace quip::session
