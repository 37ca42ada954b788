#include "cli/generate.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <variant>

#include "base/text.h"
#include "chat/chat_template.h"
#include "chat/turn_prompt.h"
#include "cli/config.h"
#include "cli/conversation.h"
#include "cli/exit_status.h"
#include "cli/loaded_model.h"
#include "cli/prompt_input.h"
#include "cli/usage.h"
#include "engine/generate.h"
#include "base/paths.h"
#include "gguf/fingerprint.h"
#include "kernels/thread_pool.h"
#include "store/prefix_cache.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

const char* stop_name(engine::StopReason r) {
  switch (r) {
    case engine::StopReason::End: return "end";
    case engine::StopReason::Length: return "length";
    case engine::StopReason::Context: return "context";
    case engine::StopReason::Caller: return "interrupted";
  }
  return "?";
}

// A failure of the call: the one line for stderr and the exit status.
struct Failure {
  int status;
  std::string message;
};

template <class T>
using Outcome = std::variant<T, Failure>;

// "1 2 3" -> ids; errors name the word that is not an id of the vocabulary.
Result<std::vector<int32_t>> parse_ids(const std::string& text, uint32_t n_vocab) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v >= n_vocab) {
      return Error{"--tokens: '" + printable(word) + "' is not a token id in [0, " +
                   std::to_string(n_vocab) + ")"};
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return Error{"--tokens: no token ids given"};
  return ids;
}

// The command line, as given: unset options leave the config's say.
struct Flags {
  std::optional<std::string> model, config, cid, file, template_file, tokens;
  std::vector<std::string> words;
  bool raw = false, resume = false, print_prompt = false, ignore_eos = false, json = false,
       stats = false, no_cache = false;
  std::optional<std::string> cache_max_size;
  Settings settings;
  int logprobs = 0;
};

void add_options(CLI::App& app, Flags& f) {
  Settings& s = f.settings;
  app.add_option("PROMPT", f.words,
                 "the prompt (words are joined by spaces); stdin, when not a terminal, comes "
                 "first as context; '-' makes stdin the prompt");
  app.add_option("-m,--model", f.model, "GGUF model file or config alias");
  app.add_flag("-c,--continue", f.resume, "continue the last conversation of this terminal");
  app.add_option("--cid", f.cid, "continue conversation ID; ID@N forks it after turn N");
  app.add_option("-f,--file", f.file, "read the prompt from FILE");
  app.add_option("--system", f.settings.system, "the system message of a new conversation");
  app.add_option("--template", f.template_file, "a Jinja chat template instead of the model's");
  app.add_flag("--raw", f.raw, "feed the prompt as it is, without the chat template");
  app.add_option("--tokens", f.tokens, "with --raw: the prompt as token ids \"ID ID ...\"");
  app.add_flag("--print-prompt", f.print_prompt,
               "print the prompt the call would send (with --json: and its token ids); no answer");
  app.add_option("-n,--n-predict", s.n_predict, "stop after N tokens (-1: at the end of the turn)");
  app.add_option("--temp", s.temp, "temperature; 0 is greedy (default 0)");
  app.add_option("--top-k", s.top_k, "keep the K most likely tokens (0: all; default 40)");
  app.add_option("--top-p", s.top_p, "keep the most likely tokens up to probability P (0.95)");
  app.add_option("--min-p", s.min_p, "drop tokens below P times the most likely (0.05)");
  app.add_option("--repeat-penalty", s.repeat_penalty, "penalty for recent tokens (1: none)");
  app.add_option("-s,--seed", s.seed, "random seed (default: a fresh one, reported by --json)");
  app.add_option("-t,--threads", s.threads, "threads (default: the physical cores)");
  app.add_option("--ctx-size", s.ctx_size, "context positions (default: the model's)");
  app.add_flag("--ignore-eos", f.ignore_eos, "go on past the end of the turn");
  app.add_option("--logprobs", f.logprobs, "with --json: the K most likely tokens of each step");
  app.add_flag("--json", f.json, "print one JSON object instead of the text");
  app.add_flag("--stats", f.stats, "print token counts and timings as one line on stderr");
  app.add_flag("--no-cache", f.no_cache, "neither restore nor save evaluated prefixes");
  app.add_option("--cache-max-size", f.cache_max_size,
                 "the prefix cache's size limit, e.g. 4GiB (default: config, else 4GiB)");
  app.add_option("--config", f.config, "the config file (default: ~/.config/quip/config.toml)");
}

// The model file and the settings that apply to it: flags over the alias's
// table over the config's top level.
struct ModelChoice {
  fs::path path;
  Settings settings;
};

Outcome<ModelChoice> choose_model(const Flags& f, const Config& config, const Base* base) {
  ModelChoice c;
  std::optional<std::string> name = f.model;
  if (!name && base != nullptr) name = base->turns.back().model_path;
  if (!name) name = config.default_model;
  if (!name) {
    return Failure{kExitUsage,
                   "no model: give -m/--model MODEL (a .gguf file or an alias), or set 'model' in " +
                       (config.file.empty() ? std::string("config.toml") : config.file.string())};
  }
  Settings alias_settings;
  if (auto it = config.models.find(*name); it != config.models.end()) {
    c.path = it->second.path;
    alias_settings = it->second.settings;
  } else {
    c.path = *name;
  }
  c.settings = merged(merged(config.settings, alias_settings), f.settings);
  return c;
}

Outcome<engine::SamplerSettings> sampler_settings(const Settings& s) {
  engine::SamplerSettings out;
  if (s.temp) out.temperature = static_cast<float>(*s.temp);
  if (s.top_k) {
    if (*s.top_k < 0 || *s.top_k > std::numeric_limits<int32_t>::max()) {
      return Failure{kExitUsage, "--top-k " + std::to_string(*s.top_k) + " is not in [0, 2^31)"};
    }
    out.top_k = static_cast<int32_t>(*s.top_k);
  }
  if (s.top_p) out.top_p = static_cast<float>(*s.top_p);
  if (s.min_p) out.min_p = static_cast<float>(*s.min_p);
  if (s.repeat_penalty) out.repeat_penalty = static_cast<float>(*s.repeat_penalty);
  out.seed = s.seed ? static_cast<uint64_t>(*s.seed) : std::random_device{}();
  if (auto check = engine::Sampler::create(out); !check) {
    return Failure{kExitUsage, check.error().message};
  }
  return out;
}

nlohmann::json sampler_json(const engine::SamplerSettings& s, int64_t n_predict, size_t n_ctx) {
  return {{"temp", s.temperature}, {"top_k", s.top_k},   {"top_p", s.top_p},
          {"min_p", s.min_p},      {"repeat_penalty", s.repeat_penalty},
          {"seed", s.seed},        {"n_predict", n_predict}, {"ctx_size", n_ctx}};
}

// The template source: --template, the config's, the model's own, else ChatML.
Outcome<std::string> template_source(const Settings& s, const LoadedModel& m) {
  if (s.template_file) {
    std::ifstream in(*s.template_file, std::ios::binary);
    if (!in) {
      return Failure{kExitUsage, s.template_file->string() + ": cannot read the template: " +
                                     std::strerror(errno)};
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  auto own = m.file->get_optional<std::string_view>("tokenizer.chat_template");
  if (!own) return Failure{kExitBadData, own.error().message};
  if (*own) return std::string(**own);
  return std::string(chat::chatml_template());
}

// The whole prompt of this call and the messages it adds.
struct Prompt {
  std::vector<int32_t> tokens;
  size_t shared = 0;  // chat::TurnPrompt::shared: a prefix the cache keeps whole
  std::string text;  // for --print-prompt: the text of every token
  nlohmann::json added;
};

Outcome<Prompt> build_prompt(const Flags& f, const Settings& s, const LoadedModel& m,
                             const std::string& fingerprint, const Base* base,
                             const std::vector<std::string>& parts) {
  Prompt p;
  const tokenizer::Tokenizer& tok = m.tokenizer;
  const auto whole_text = [&](std::span<const int32_t> stored, const std::string& added) {
    return tok.decode(stored, {.special = true, .strip_leading_space = false}) + added;
  };
  if (f.raw) {
    if (base != nullptr && !base->raw) {
      return Failure{kExitUsage, "conversation " + std::to_string(base->conversation) +
                                     " is a chat; continue it without --raw"};
    }
    std::vector<int32_t> stored = base != nullptr ? base->tokens() : std::vector<int32_t>{};
    if (base != nullptr && base->turns.back().model_fingerprint != fingerprint) {
      return Failure{kExitUsage, "conversation " + std::to_string(base->conversation) +
                                     " was made with another model; a --raw conversation "
                                     "continues only with its own"};
    }
    std::vector<int32_t> added;
    std::string text;
    if (f.tokens) {
      auto ids = parse_ids(*f.tokens, m.model.hparams().n_vocab);
      if (!ids) return Failure{kExitUsage, ids.error().message};
      added = std::move(*ids);
      text = tok.decode(added, {.special = true, .strip_leading_space = false});
    } else {
      text = join_raw(parts);
      added = tok.encode(text, {.add_special = stored.empty(), .parse_special = true});
    }
    p.added = raw_messages(f.tokens ? "" : text);
    const tokenizer::TokenId bos = tok.vocab().bos();
    if (!f.tokens && stored.empty() && !added.empty() && added[0] == bos && bos >= 0 &&
        !text.starts_with(tok.vocab().text(bos))) {
      text.insert(0, tok.vocab().text(bos));  // the BOS the vocabulary added
    }
    p.text = whole_text(stored, text);
    p.tokens = std::move(stored);
    p.tokens.insert(p.tokens.end(), added.begin(), added.end());
    return p;
  }

  if (base != nullptr && base->raw) {
    return Failure{kExitUsage, "conversation " + std::to_string(base->conversation) +
                                   " is a --raw one; continue it with --raw"};
  }
  auto source = template_source(s, m);
  if (auto* fail = std::get_if<Failure>(&source)) return *fail;
  auto tmpl = chat::ChatTemplate::parse(std::get<std::string>(source));
  if (!tmpl) {
    const bool own = !s.template_file;
    return Failure{own ? kExitBadData : kExitUsage,
                   (own ? m.file->name() + ": tokenizer.chat_template: "
                        : s.template_file->string() + ": ") +
                       tmpl.error().message};
  }
  chat::RenderOptions options;
  chat::set_special_tokens(tok, options);
  p.added = nlohmann::json::array();
  if (base == nullptr && s.system) p.added.push_back({{"role", "system"}, {"content", *s.system}});
  p.added.push_back({{"role", "user"}, {"content", join_for_chat(parts)}});

  Result<chat::TurnPrompt> turn = Error{""};
  if (base != nullptr && base->turns.back().model_fingerprint == fingerprint) {
    turn = chat::next_turn_prompt(*tmpl, tok, base->history(), base->tokens(), p.added, options);
  } else {
    // A new conversation, or one continued with another model: its stored
    // tokens mean nothing to this one, so the whole history is rendered.
    nlohmann::json messages = base != nullptr ? base->history() : nlohmann::json::array();
    for (const auto& msg : p.added) messages.push_back(msg);
    turn = chat::first_turn_prompt(*tmpl, tok, messages, options);
  }
  if (!turn) return Failure{kExitUsage, "chat template: " + turn.error().message};
  p.text = whole_text(std::span(turn->tokens).first(turn->stored), turn->text);
  p.tokens = std::move(turn->tokens);
  p.shared = turn->shared;
  return p;
}

}  // namespace

std::string generate_options_help() {
  CLI::App app{"", "quip"};
  Flags f;
  add_options(app, f);
  std::string help = app.help();
  // Only the options: the overview says the rest.
  const size_t at = help.find("Options:");
  return at == std::string::npos ? help : help.substr(at);
}

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const auto t_start = std::chrono::steady_clock::now();
  CLI::App app{"Answer a prompt with a local GGUF model; the answer streams to stdout.", "quip"};
  Flags f;
  add_options(app, f);
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  const auto fail = [&](const Failure& failure) {
    err << "quip: " << failure.message << '\n';
    return failure.status;
  };
  if (f.template_file) f.settings.template_file = *f.template_file;

  if (f.tokens && !f.raw) return fail({kExitUsage, "--tokens goes with --raw"});
  if (f.tokens && (!f.words.empty() || f.file)) {
    return fail({kExitUsage, "give either a PROMPT or --tokens, not both"});
  }
  if (f.resume && f.cid) return fail({kExitUsage, "give -c or --cid, not both"});
  if (f.settings.system && (f.resume || f.cid)) {
    return fail({kExitUsage, "--system sets the start of a new conversation; a continued one "
                             "keeps its own"});
  }
  if (f.logprobs < 0 || f.logprobs > 1000) {
    return fail({kExitUsage, "--logprobs " + std::to_string(f.logprobs) + " is not in [0, 1000]"});
  }
  if (f.settings.threads && (*f.settings.threads < 1 || *f.settings.threads > 1024)) {
    return fail({kExitUsage, "--threads " + std::to_string(*f.settings.threads) +
                                 " is not in [1, 1024]"});
  }

  auto config = load_config(f.config ? std::optional<fs::path>(*f.config) : std::nullopt);
  if (!config) return fail({kExitUsage, config.error().message});

  // The conversation this call continues.
  std::optional<Base> base;
  if (f.resume || f.cid) {
    std::optional<ConversationRef> ref;
    if (f.cid) {
      auto parsed = parse_conversation_ref(*f.cid);
      if (!parsed) return fail({kExitUsage, parsed.error().message});
      ref = *parsed;
    }
    auto db = store_path();
    if (!db) return fail({kExitFailure, db.error().message});
    std::error_code ec;
    if (!fs::exists(*db, ec)) {  // nothing recorded yet
      return fail({kExitFailure, ref ? "no conversation " + std::to_string(ref->id)
                                     : std::string("no conversation to continue in this "
                                                   "terminal session")});
    }
    auto store = store::Store::open_read_only(*db);
    if (!store) return fail({kExitFailure, store.error().message});
    auto found = find_base(*store, f.cid);
    if (!found) return fail({kExitFailure, found.error().message});
    base = std::move(*found);
  }

  auto choice = choose_model(f, *config, base ? &*base : nullptr);
  if (auto* failure = std::get_if<Failure>(&choice)) return fail(*failure);
  const ModelChoice& model = std::get<ModelChoice>(choice);
  const Settings& s = model.settings;
  auto sampler = sampler_settings(s);
  if (auto* failure = std::get_if<Failure>(&sampler)) return fail(*failure);
  const engine::SamplerSettings& sampling = std::get<engine::SamplerSettings>(sampler);

  std::vector<std::string> parts;
  if (!f.tokens) {
    auto read = read_prompt_parts({.words = f.words, .file = f.file, .read_stdin = true});
    if (!read) return fail({kExitUsage, read.error().message});
    parts = std::move(*read);
    if (parts.empty()) return fail({kExitUsage, "no prompt: give PROMPT words, -f FILE or stdin"});
  }

  auto loaded = load_model(model.path.string());
  if (!loaded) return fail({kExitBadData, loaded.error().message});
  for (const std::string& w : loaded->tokenizer.vocab().warnings()) {
    err << "quip: warning: " << w << '\n';
  }
  auto isa = kernels::chosen_isa();
  if (!isa) return fail({kExitUsage, isa.error().message});
  const std::string fingerprint = gguf::fingerprint(*loaded->file);

  auto built = build_prompt(f, s, *loaded, fingerprint, base ? &*base : nullptr, parts);
  if (auto* failure = std::get_if<Failure>(&built)) return fail(*failure);
  Prompt& prompt = std::get<Prompt>(built);

  if (f.print_prompt) {
    if (f.json) {
      out << nlohmann::json{{"text", escape_invalid_utf8(prompt.text)}, {"tokens", prompt.tokens}}
                 .dump()
          << '\n';
    } else {
      out << prompt.text;
    }
    return kExitOk;
  }

  const engine::Hparams& hp = loaded->model.hparams();
  const size_t n_ctx = s.ctx_size && *s.ctx_size > 0 ? static_cast<size_t>(*s.ctx_size)
                                                     : hp.n_ctx_train;
  if (prompt.tokens.size() >= n_ctx) {
    return fail({kExitUsage, "the prompt has " + std::to_string(prompt.tokens.size()) +
                                 " tokens; the context holds " + std::to_string(n_ctx) +
                                 " (see --ctx-size)"});
  }
  uint64_t max_cache_bytes = config->cache_max_size.value_or(store::kDefaultCacheBytes);
  if (f.cache_max_size) {
    auto size = store::parse_size(*f.cache_max_size);
    if (!size) return fail({kExitUsage, "--cache-max-size: " + size.error().message});
    max_cache_bytes = *size;
  }
  const int threads = s.threads ? static_cast<int>(*s.threads) : kernels::physical_cores();
  const int64_t n_predict = s.n_predict.value_or(-1);

  engine::Forward fwd(loaded->model, {.n_threads = threads, .isa = *isa});
  // The longest prefix an earlier call evaluated comes from the cache.
  std::optional<store::PrefixCache> prefix_cache;
  size_t restored = 0;
  if (!f.no_cache) {
    if (auto dir = cache_dir()) {
      prefix_cache.emplace(*dir / "kv",
                           store::KvShape{fingerprint, fwd.cache().n_layer(),
                                          fwd.cache().row_width()},
                           max_cache_bytes);
      std::vector<std::string> warnings;
      restored = prefix_cache->restore(prompt.tokens, fwd.cache(), warnings);
      for (const std::string& w : warnings) err << "quip: warning: " << w << '\n';
    }
  }
  const auto t_loaded = std::chrono::steady_clock::now();
  engine::GenerateOptions options{.max_tokens = n_predict,
                                  .n_ctx = n_ctx,
                                  .sampler = sampling,
                                  .top_logprobs = f.json ? f.logprobs : 0,
                                  .is_end = {},
                                  // Ctrl-C is heard between prompt batches too.
                                  .keep_going = [] { return g_interrupted == 0; }};
  const tokenizer::Vocab& vocab = loaded->tokenizer.vocab();
  if (!f.ignore_eos) options.is_end = [&](int32_t id) { return vocab.is_eog(id); };

  std::signal(SIGINT, on_sigint);
  std::signal(SIGPIPE, SIG_IGN);
  tokenizer::StreamDecoder decoder(loaded->tokenizer);
  std::string text;
  // stdout failing: EPIPE means the reader went away (end quietly); anything
  // else (a full disk) is an error.
  bool reader_gone = false;
  int write_errno = 0;
  const engine::Generation g = engine::generate(fwd, prompt.tokens, options, [&](int32_t id) {
    const std::string piece = decoder.push(id);
    text += piece;
    if (!f.json && !piece.empty()) {
      out << piece << std::flush;
      if (!out) {
        reader_gone = true;
        write_errno = errno;
      }
    }
    return g_interrupted == 0 && !reader_gone;
  });
  const std::string tail = decoder.flush();
  text += tail;
  if (!f.json && !reader_gone) out << tail << std::flush;  // stdout holds exactly the answer
  // On a terminal, the shell's prompt starts on a line of its own (a pipe
  // or $(...) gets the answer as it is).
  if (!f.json && !reader_gone && &out == &std::cout && isatty(STDOUT_FILENO) != 0 &&
      !text.empty() && text.back() != '\n') {
    out << '\n' << std::flush;
  }
  const bool interrupted = g_interrupted != 0 || reader_gone;

  const nlohmann::json timings = {
      {"load_ms", ms_between(t_start, t_loaded)},
      {"prompt_ms", g.prompt_ms},
      {"generation_ms", g.generation_ms},
      {"prompt_tokens_per_s", g.prompt_ms > 0 ? 1000.0 * g.evaluated_tokens / g.prompt_ms : 0},
      {"generation_tokens_per_s",
       g.generation_ms > 0 ? 1000.0 * g.tokens.size() / g.generation_ms : 0}};

  // Keep what was evaluated for the next call; a cache that cannot take it
  // costs speed later, not this answer.
  if (prefix_cache) {
    std::vector<int32_t> sequence = prompt.tokens;
    sequence.insert(sequence.end(), g.tokens.begin(), g.tokens.end());
    // Segments end where the prompt does (the same call again finds it
    // whole) and where its last message begins (a call with the same
    // system prompt and another question finds that part).
    const size_t marks[] = {prompt.tokens.size(), prompt.shared};
    // An interrupted prompt may leave the cache short of what was restored.
    const size_t from = std::min(restored, fwd.cache().size());
    if (auto saved = prefix_cache->save(sequence, fwd.cache(), from, marks); !saved) {
      err << "quip: warning: prefix cache: " << saved.error().message << '\n';
    }
  }

  // Record the turn; a store that cannot take it costs the record, not the answer.
  std::optional<store::TurnRecord> recorded;
  std::string store_error;
  {
    store::TurnRecord turn;
    turn.conversation = base && !base->fork_turn ? base->conversation : 0;
    std::error_code ec;
    const fs::path absolute = fs::absolute(model.path, ec);
    turn.model_path = (ec ? model.path : absolute).string();
    turn.model_fingerprint = fingerprint;
    turn.sampler_json = sampler_json(sampling, n_predict, n_ctx).dump();
    turn.messages_json = prompt.added.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    turn.answer = text;
    turn.timings_json = timings.dump();
    turn.prompt_tokens = prompt.tokens;
    turn.answer_tokens = g.tokens;
    turn.interrupted = interrupted;
    turn.session = session_scope();
    auto db = store_path();
    auto store = db ? store::Store::open(*db) : Result<store::Store>(db.error());
    if (store && base && base->fork_turn) {
      auto forked = store->fork(base->conversation, *base->fork_turn, turn.session);
      if (forked) {
        turn.conversation = *forked;
      } else {
        store = forked.error();
      }
    }
    if (store) {
      auto r = store->record_turn(std::move(turn));
      if (r) {
        recorded = std::move(*r);
      } else {
        store_error = r.error().message;
      }
    } else {
      store_error = store.error().message;
    }
  }
  if (reader_gone) {
    // main() reports the failed output from this errno (and keeps quiet
    // about EPIPE: the reader went away).
    errno = write_errno;
    return write_errno == EPIPE ? kExitOk : kExitFailure;
  }

  const nlohmann::json usage = {{"prompt_tokens", prompt.tokens.size()},
                                {"cached_tokens", g.cached_tokens},
                                {"evaluated_tokens", g.evaluated_tokens},
                                {"generated_tokens", g.tokens.size()}};
  if (f.json) {
    nlohmann::json j;
    j["conversation"] = recorded ? nlohmann::json(recorded->conversation) : nlohmann::json();
    j["turn"] = recorded ? nlohmann::json(recorded->turn) : nlohmann::json();
    j["text"] = escape_invalid_utf8(text);
    j["tokens"] = g.tokens;
    j["prompt_tokens"] = prompt.tokens;
    j["usage"] = usage;
    j["stop"] = stop_name(g.stop);
    j["seed"] = sampling.seed;
    if (f.logprobs > 0) {
      nlohmann::json steps = nlohmann::json::array();
      for (const engine::Step& st : g.steps) {
        nlohmann::json top = nlohmann::json::array();
        for (const engine::TokenLogprob& t : st.top) top.push_back({t.id, t.logprob});
        steps.push_back({{"id", st.id}, {"top", top}});
      }
      j["steps"] = steps;
    }
    j["timings"] = timings;
    out << j.dump() << '\n';
  }
  if (f.stats) {
    err << "quip: conversation "
        << (recorded ? std::to_string(recorded->conversation) + " turn " +
                           std::to_string(recorded->turn)
                     : std::string("(not recorded)"))
        << ", prompt " << prompt.tokens.size() << " tokens (" << g.cached_tokens
        << " cached, " << g.evaluated_tokens << " evaluated in " << std::lround(g.prompt_ms)
        << " ms), " << g.tokens.size() << " generated in " << std::lround(g.generation_ms)
        << " ms, load " << std::lround(ms_between(t_start, t_loaded)) << " ms\n";
  }
  if (!store_error.empty()) {
    err << "quip: the answer was not recorded: " << store_error << '\n';
    if (!interrupted) return kExitFailure;
  }
  return interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace quip::cli
