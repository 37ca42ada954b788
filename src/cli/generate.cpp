#include "cli/generate.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <variant>

#include "base/paths.h"
#include "base/text.h"
#include "cli/config.h"
#include "cli/conversation.h"
#include "cli/estimate.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/prompt_input.h"
#include "cli/remote_call.h"
#include "cli/report.h"
#include "cli/stop_signals.h"
#include "cli/usage.h"
#include "grammar/gbnf_text.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "kernels/thread_pool.h"
#include "serve/attach.h"
#include "session/estimate.h"
#include "session/session.h"

namespace quip::cli {

namespace {

// Whether an environment variable is set to something other than "" or "0".
bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// Whether two descriptors are one open file, pipe or terminal.
bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

namespace {

namespace fs = std::filesystem;
using session::FailureKind;

// A failure of the call: the one line for stderr and the exit status.
struct Failure {
  int status;
  std::string message;
};

int exit_status(FailureKind kind) {
  switch (kind) {
    case FailureKind::Usage: return kExitUsage;
    case FailureKind::BadData: return kExitBadData;
    case FailureKind::Runtime: return kExitFailure;
  }
  return kExitFailure;
}

Failure from(const session::Failure& f) {
  return Failure{exit_status(f.kind), f.message};
}

// "1 2 3" -> ids; errors name the word that is not a number. Whether each
// is a token id of the vocabulary is the session's to say.
Result<std::vector<int64_t>> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
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
    if (used != word.size() || v < 0) {
      return Error{"--tokens: '" + printable(word) + "' is not a token id"};
    }
    ids.push_back(v);
  }
  if (ids.empty()) return Error{"--tokens: no token ids given"};
  return ids;
}

// The command line, as given: unset options leave the config's say.
struct Flags {
  std::optional<std::string> model, config, cid, file, template_file, tokens, backend;
  std::vector<std::string> words;
  bool raw = false, resume = false, print_prompt = false, ignore_eos = false, json = false,
       stats = false, no_cache = false, estimate = false, local = false;
  std::optional<std::string> cache_max_size;
  Settings settings;
  // The numeric settings as typed, by flag ("--temp"): read by
  // set_from_flag with config.toml's ranges, never clamped by the parser.
  std::map<std::string, std::optional<std::string>> numbers;
  std::optional<std::string> logprobs_text;
  int logprobs = 0;
  // Constrained output: at most one of these.
  std::optional<std::string> grammar_file, json_schema, choice;
};

void add_options(CLI::App& app, Flags& f) {
  app.add_option("PROMPT", f.words,
                 "the prompt (words are joined by spaces); stdin, when not a terminal, comes "
                 "first as context; '-' makes stdin the prompt");
  app.add_option("-m,--model", f.model, "GGUF model file or config alias");
  app.add_option("--backend", f.backend,
                 "send the conversation to this OpenAI-compatible server (http[s]://HOST[:PORT]); "
                 "-m names its model (default: $QUIP_BACKEND)");
  app.add_flag("-c,--continue", f.resume, "continue the last conversation of this terminal");
  app.add_option("--cid", f.cid, "continue conversation ID; ID@N forks it after turn N");
  app.add_option("-f,--file", f.file, "read the prompt from FILE");
  app.add_option("--system", f.settings.system, "the system message of a new conversation");
  app.add_option("--template", f.template_file, "a Jinja chat template instead of the model's");
  app.add_flag("--raw", f.raw, "feed the prompt as it is, without the chat template");
  app.add_option("--tokens", f.tokens, "with --raw: the prompt as token ids \"ID ID ...\"");
  app.add_flag("--print-prompt", f.print_prompt,
               "print the prompt the call would send (with --json: and its token ids); no answer");
  app.add_flag("--estimate", f.estimate,
               "print, without running the model, the prompt's tokens, how many the prefix cache "
               "holds, the memory the call needs and a time from earlier speeds; no answer");
  const auto number = [&](const std::string& names, const std::string& flag, const char* help) {
    // Parsed as text (set_from_flag, with the ranges and messages of
    // config.toml), shown as the kind of number it is; not "INT", which
    // usage.cpp checks as CLI11 reads it.
    app.add_option(names, f.numbers[flag], help)
        ->type_name(real_limit(flag) != nullptr ? "NUMBER" : "INTEGER");
  };
  number("-n,--n-predict", "--n-predict",
         "stop after N tokens, N in [0, 2^31); -1 (the default): at the end of the turn");
  number("--temp", "--temp", "temperature in [0, 100]; 0 is greedy (default 0)");
  number("--top-k", "--top-k", "keep the K most likely tokens (0: all; default 40)");
  number("--top-p", "--top-p", "keep the most likely tokens up to probability P in (0, 1] (0.95)");
  number("--min-p", "--min-p", "drop tokens below P times the most likely, P in [0, 1] (0.05)");
  number("--repeat-penalty", "--repeat-penalty", "penalty for recent tokens in (0, 100] (1: none)");
  number("-s,--seed", "--seed",
         "random seed in [0, 2^63); -1 (the default): a fresh one, reported by --json");
  number("-t,--threads", "--threads", "threads in [1, 1024] (default: the physical cores)");
  number("--ctx-size", "--ctx-size",
         "context positions in [1, 2^31); 0 (the default): the model's training context");
  app.add_flag("--ignore-eos", f.ignore_eos, "go on past the end of the turn");
  app.add_option("--logprobs", f.logprobs_text,
                 "with --json: the K most likely tokens of each step, K in [0, 1000]")
      ->type_name("INT");
  app.add_option("--think", f.settings.think,
                 "a thinking model's reasoning: hide (default; recorded, not printed), show (also "
                 "on stderr when it is a terminal), off (ask the model not to think), inline (as "
                 "part of the answer)");
  app.add_option("--grammar", f.grammar_file,
                 "the answer is a sentence of this GBNF grammar (llama.cpp's grammar files)");
  app.add_option("--json-schema", f.json_schema,
                 "the answer is JSON valid under this JSON Schema (a file, or the schema itself)");
  app.add_option("--choice", f.choice,
                 "the answer is exactly one of these comma-separated strings, and a newline");
  app.add_flag("--json", f.json, "print one JSON object instead of the text");
  app.add_flag("--stats", f.stats, "print token counts and timings as one line on stderr");
  app.add_flag("--local", f.local,
               "answer in this process even when a quip server is running (as QUIP_NO_SERVE=1)");
  app.add_flag("--no-cache", f.no_cache, "neither restore nor save evaluated prefixes");
  app.add_option("--cache-max-size", f.cache_max_size,
                 "the prefix cache's size limit, e.g. 4GiB (default: config, else 4GiB)");
  app.add_option("--config", f.config, "the config file (default: ~/.config/quip/config.toml)");
}

// The first option given that only a local model can honour, or null: a
// remote backend is refused such a call rather than answering it otherwise.
const char* local_only_option(const Flags& f) {
  const std::pair<bool, const char*> options[] = {
      {f.raw, "--raw"},
      {f.tokens.has_value(), "--tokens"},
      {f.template_file.has_value(), "--template"},
      {f.grammar_file.has_value(), "--grammar"},
      {f.json_schema.has_value(), "--json-schema"},
      {f.choice.has_value(), "--choice"},
      {f.print_prompt, "--print-prompt"},
      {f.estimate, "--estimate"},
      {f.logprobs_text.has_value(), "--logprobs"},
      {f.ignore_eos, "--ignore-eos"},
      {f.numbers.at("--top-k").has_value(), "--top-k"},
      {f.numbers.at("--min-p").has_value(), "--min-p"},
      {f.numbers.at("--repeat-penalty").has_value(), "--repeat-penalty"},
      {f.numbers.at("--ctx-size").has_value(), "--ctx-size"}};
  for (const auto& [given, name] : options) {
    if (given) return name;
  }
  return nullptr;
}

// The model file and the settings that apply to it: flags over the alias's
// table over the config's top level.
struct ModelChoice {
  fs::path path;
  Settings settings;
};

std::variant<ModelChoice, Failure> choose_model(const Flags& f, const Config& config,
                                                const session::Base* base) {
  ModelChoice c;
  std::optional<std::string> name = f.model;
  if (!name && base != nullptr) name = base->turns.back().model_path;
  if (!name) name = config.default_model;
  if (!name) {
    return Failure{kExitUsage,
                   "no model: give -m/--model MODEL (a .gguf file, an alias, or a name 'quip "
                   "models' lists), or set 'model' in " +
                       (config.file.empty() ? std::string("config.toml") : config.file.string())};
  }
  auto resolved = resolve_model_name(*name, config, session::store_roots());
  if (auto* e = std::get_if<ModelNameError>(&resolved)) return Failure{e->status, e->message};
  const ModelFile& file = std::get<ModelFile>(resolved);
  c.path = file.path;
  const Settings alias_settings = file.alias != nullptr ? file.alias->settings : Settings{};
  c.settings = merged(merged(config.settings, alias_settings), f.settings);
  return c;
}

std::variant<engine::SamplerSettings, Failure> sampler_settings(const Settings& s) {
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
  // -1 (or none): a fresh seed, which --json reports.
  out.seed = s.seed && *s.seed >= 0 ? static_cast<uint64_t>(*s.seed) : std::random_device{}();
  if (auto check = engine::Sampler::create(out); !check) {
    return Failure{kExitUsage, check.error().message};
  }
  return out;
}

// The grammar of --grammar, --json-schema or --choice, compiled and as its
// GBNF text (which an attached call sends to the server).
struct OutputGrammar {
  std::shared_ptr<const grammar::Grammar> grammar;  // null: free text
  std::string gbnf;
};

// What cannot be compiled is a usage error that names the place.
std::variant<OutputGrammar, Failure> output_grammar(const Flags& f) {
  const int given = (f.grammar_file ? 1 : 0) + (f.json_schema ? 1 : 0) + (f.choice ? 1 : 0);
  if (given == 0) return OutputGrammar{};
  if (given > 1) return Failure{kExitUsage, "give one of --grammar, --json-schema, --choice"};
  std::string gbnf, what;
  if (f.grammar_file) {
    what = "--grammar " + printable(*f.grammar_file);
    auto text = read_input_file(*f.grammar_file);
    if (!text) return Failure{kExitUsage, "--grammar: " + text.error().message};
    gbnf = std::move(*text);
  } else if (f.choice) {
    what = "--choice";
    std::vector<std::string> choices;
    for (size_t begin = 0;;) {
      const size_t comma = f.choice->find(',', begin);
      choices.push_back(f.choice->substr(begin, comma - begin));
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
    for (const std::string& c : choices) {
      if (c.empty())
        return Failure{kExitUsage, "--choice: an empty choice in '" + printable(*f.choice) + "'"};
      std::vector<uint32_t> code_points;
      if (!grammar::decode_utf8(c, code_points))
        return Failure{kExitUsage, "--choice: '" + printable(c) + "' is not valid UTF-8"};
      gbnf += gbnf.empty() ? "root ::= " : " | ";
      gbnf += grammar::gbnf_literal(c);
    }
    gbnf += '\n';
  } else {
    what = "--json-schema";
    // The schema itself, or the file that holds it.
    std::string text = *f.json_schema;
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || (text[first] != '{' && text != "true" && text != "false")) {
      auto read = read_input_file(text);
      if (!read) return Failure{kExitUsage, "--json-schema: " + read.error().message};
      text = std::move(*read);
    }
    nlohmann::ordered_json schema;
    try {
      schema = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      // "[json.exception.parse_error.101] parse error at line 1, ...": the part after "] ".
      const std::string m = e.what();
      const size_t cut = m.find("] ");
      return Failure{kExitUsage,
                     "--json-schema: the schema is not JSON: " +
                         printable(cut == std::string::npos ? m : m.substr(cut + 2), 200)};
    }
    auto converted = grammar::json_schema_to_gbnf(schema);
    if (!converted) return Failure{kExitUsage, "--json-schema: " + converted.error().message};
    gbnf = std::move(*converted);
  }
  auto compiled = grammar::compile_gbnf(gbnf);
  if (!compiled) return Failure{kExitUsage, what + ": " + compiled.error().message};
  return OutputGrammar{*compiled, std::move(gbnf)};
}

nlohmann::json json_result(const session::Request& request,
                           const std::vector<int32_t>& prompt_tokens, const std::string& engine,
                           const session::Answer& a) {
  nlohmann::json j;
  j["conversation"] = a.recorded ? nlohmann::json(a.recorded->conversation) : nlohmann::json();
  j["turn"] = a.recorded ? nlohmann::json(a.recorded->turn) : nlohmann::json();
  j["forked_from"] = a.forked_from ? nlohmann::json{{"conversation", a.forked_from->first},
                                                    {"turn", a.forked_from->second}}
                                   : nlohmann::json();
  j["text"] = escape_invalid_utf8(a.text);
  j["reasoning"] = escape_invalid_utf8(a.reasoning);
  j["tokens"] = a.tokens;
  j["prompt_tokens"] = prompt_tokens;
  j["usage"] = {{"prompt_tokens", a.usage.prompt_tokens},
                {"cached_tokens", a.usage.cached_tokens},
                {"evaluated_tokens", a.usage.evaluated_tokens},
                {"generated_tokens", a.usage.generated_tokens}};
  j["stop"] = session::stop_name(a.stop);
  if (a.valid) j["valid"] = *a.valid;
  j["seed"] = request.sampler.seed;
  if (request.logprobs > 0) {
    nlohmann::json steps = nlohmann::json::array();
    for (const engine::Step& st : a.steps) {
      nlohmann::json top = nlohmann::json::array();
      for (const engine::TokenLogprob& t : st.top) top.push_back({t.id, t.logprob});
      steps.push_back({{"id", st.id}, {"top", top}});
    }
    j["steps"] = steps;
  }
  j["timings"] = session::timings_json(a);
  j["engine"] = engine;
  return j;
}

// Produces the answer with the callbacks given: in this process, through a
// running `quip serve`, or from a remote backend.
using Runner = std::function<session::Outcome<session::Answer>(const session::Callbacks&)>;

// Streams the answer that `run` produces as the call's options say (the
// text on stdout, reasoning and progress on a terminal's stderr, or one JSON
// object), reports what went wrong, and returns the call's exit status.
// `prompt_tokens`: the prompt's ids for --json (a runner may fill them).
// `engine`: which engine answered ("local" or "serve"; a runner may set it).
int answer_call(const Flags& f, const session::Request& request,
                const std::vector<int32_t>& prompt_tokens, const std::string& engine,
                const Runner& run, std::ostream& out, std::ostream& err) {
  const auto fail = [&](const Failure& failure) {
    print_error(err, "quip", failure.message);
    return failure.status;
  };
  catch_stop_signals({SIGPIPE});
  // stdout failing: EPIPE means the reader went away (end quietly); anything
  // else (a full disk) is an error.
  bool reader_gone = false;
  int write_errno = 0;
  session::Callbacks callbacks;
  // --think=show: the reasoning on stderr, where a person reads it, and a
  // line break before the answer.
  const bool show_reasoning = request.think == chat::ThinkMode::Show && !f.json &&
                              &err == &std::cerr && isatty(STDERR_FILENO) != 0;
  bool reasoning_open = false;
  // A long prompt's progress, on stderr where a person waits for it; erased
  // before anything else is written there.
  std::optional<PromptProgress> progress;
  if (!f.json && &err == &std::cerr && isatty(STDERR_FILENO) != 0) {
    progress.emplace(err, PromptProgress::from_environment());
    callbacks.on_prompt_progress = [&](size_t done, size_t total, size_t cached) {
      progress->update(done, total, cached);
    };
  }
  if (show_reasoning) {
    callbacks.on_reasoning = [&](std::string_view piece) {
      if (progress) progress->clear();
      err << piece << std::flush;
      reasoning_open = true;
    };
  }
  // A constrained answer goes to a pipe or file only once it is whole, so
  // that a script never reads a cut-short one; a terminal sees it come.
  const bool hold_answer = request.grammar && !(&out == &std::cout && isatty(STDOUT_FILENO) != 0);
  callbacks.on_token = [&](int32_t, std::string_view piece) {
    if (progress) progress->clear();
    if (reasoning_open && !piece.empty()) {
      err << "\n" << std::flush;
      reasoning_open = false;
    }
    if (!f.json && !hold_answer && !piece.empty() && !reader_gone) {
      out << piece << std::flush;
      if (!out) {
        reader_gone = true;
        write_errno = errno;
      }
    }
    return !reader_gone;
  };
  // A stop signal is heard between prompt batches too.
  callbacks.keep_going = [] { return stop_signal() == 0; };
  auto generated = run(callbacks);
  if (progress) progress->clear();
  if (!generated) return fail(from(generated.failure()));
  const session::Answer& answer = *generated;
  // --choice: the choice on a line of its own, wherever it goes.
  const bool choice_line = f.choice && !f.json && answer.valid == true;
  if (hold_answer && !f.json && answer.valid == true) {
    out << answer.text << (choice_line ? "\n" : "") << std::flush;
    if (!out) {
      reader_gone = true;
      write_errno = errno;
    }
  }
  // On a terminal, the shell's prompt starts on a line of its own (a pipe
  // or $(...) gets the answer as it is).
  const bool open_line = !f.json && !answer.text.empty() && answer.text.back() != '\n' &&
                         !(choice_line && hold_answer);
  if (open_line && !reader_gone && &out == &std::cout && isatty(STDOUT_FILENO) != 0) {
    out << '\n' << std::flush;
  } else if (open_line && &out == &std::cout && &err == &std::cerr && same_file(1, 2)) {
    // stdout and stderr go to one file or pipe (2>&1): what quip says next
    // starts on a line of its own, through stderr, so stdout stays the answer.
    out << std::flush;
    err << '\n';
  }
  for (const std::string& w : answer.warnings) print_warning(err, "quip", w);
  if (!f.json && answer.text.empty() && !answer.reasoning.empty() &&
      request.think == chat::ThinkMode::Hide) {
    print_warning(
        err, "quip",
        std::string("the answer ended inside the model's reasoning (stop: ") +
            session::stop_name(answer.stop) +
            "); --think=show prints the reasoning, --think=inline keeps it in the answer");
  }
  if (reader_gone) {
    // main() reports the failed output from this errno (and keeps quiet
    // about EPIPE: the reader went away).
    errno = write_errno;
    return write_errno == EPIPE ? kExitOk : kExitFailure;
  }

  if (answer.branched && answer.recorded) {
    err << "quip: note: conversation " << answer.forked_from->first
        << " moved on while this call ran; its turn is recorded as conversation "
        << answer.recorded->conversation << ", a branch after turn " << answer.forked_from->second
        << '\n';
  }
  if (f.json) out << json_result(request, prompt_tokens, engine, answer).dump() << '\n';
  if (answer.valid == false && !answer.interrupted) {
    std::string why = answer.stop == engine::StopReason::Length
                          ? "reached -n " + std::to_string(request.n_predict)
                      : answer.stop == engine::StopReason::Context
                          ? "filled the context (" +
                                std::to_string(answer.usage.prompt_tokens + answer.tokens.size()) +
                                " tokens)"
                          : "could not be continued by any token of the vocabulary";
    print_error(err, "quip",
                "the constrained answer " + why + " before it was complete" +
                    (hold_answer && !f.json ? "; nothing was printed" : ""));
    return kExitFailure;
  }
  if (f.stats) {
    const auto& u = answer.usage;
    const auto& t = answer.timings;
    err << "quip: conversation "
        << (answer.recorded ? std::to_string(answer.recorded->conversation) + " turn " +
                                  std::to_string(answer.recorded->turn)
                            : std::string("(not recorded)"))
        << ", prompt " << u.prompt_tokens << " tokens (" << u.cached_tokens << " cached, "
        << u.evaluated_tokens << " evaluated in " << std::lround(t.prompt_ms) << " ms), "
        << u.generated_tokens << " generated in " << std::lround(t.generation_ms) << " ms, load "
        << std::lround(t.load_ms) << " ms\n";
  }
  // 128 + the signal, as a shell reports a command the signal ended.
  const int interrupted_status =
      stop_signal() != 0 ? kExitSignal + stop_signal() : kExitInterrupted;
  if (!answer.store_error.empty()) {
    print_error(err, "quip", "the answer was not recorded: " + answer.store_error);
    if (!answer.interrupted) return kExitFailure;
  }
  return answer.interrupted ? interrupted_status : kExitOk;
}

}  // namespace

int generate_help(std::ostream& out, std::ostream& err) {
  CLI::App app{"", "quip"};
  Flags f;
  add_options(app, f);
  return print_command_help(app, out, err);
}

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  session::Request request;  // its start: now, so the load time counts everything
  CLI::App app{"Answer a prompt with a local GGUF model; the answer streams to stdout.", "quip"};
  Flags f;
  add_options(app, f);
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  const auto fail = [&](const Failure& failure) {
    print_error(err, "quip", failure.message);
    return failure.status;
  };
  if (f.template_file) f.settings.template_file = *f.template_file;
  // llama-cli's -c is the context size: "-c 4096 ..." here would continue a
  // conversation with the prompt "4096 ...".
  for (size_t i = 0; i + 1 < args.size() && args[i] != "--"; ++i) {
    const std::string& next = args[i + 1];
    if (args[i] == "-c" && !next.empty() &&
        next.find_first_not_of("0123456789") == std::string::npos) {
      return fail(
          {kExitUsage, "-c continues a conversation; for the context size use --ctx-size " + next});
    }
  }

  if (f.tokens && !f.raw) return fail({kExitUsage, "--tokens goes with --raw"});
  if (f.tokens && (!f.words.empty() || f.file)) {
    return fail({kExitUsage, "give either a PROMPT or --tokens, not both"});
  }
  if (f.resume && f.cid) return fail({kExitUsage, "give -c or --cid, not both"});
  if (f.settings.system && (f.resume || f.cid)) {
    return fail({kExitUsage,
                 "--system sets the start of a new conversation; a continued one "
                 "keeps its own"});
  }
  for (const auto& [flag, text] : f.numbers) {
    if (!text) continue;
    if (auto set = set_from_flag(flag, *text, f.settings); !set) {
      return fail({kExitUsage, set.error().message});
    }
  }
  if (f.logprobs_text) {
    const std::string& t = *f.logprobs_text;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), f.logprobs);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size() || f.logprobs < 0 ||
        f.logprobs > 1000) {
      return fail(
          {kExitUsage, "--logprobs '" + printable(t, 40) + "' is not an integer in [0, 1000]"});
    }
  }
  auto constrained = output_grammar(f);
  if (auto* failure = std::get_if<Failure>(&constrained)) return fail(*failure);
  const OutputGrammar& output = std::get<OutputGrammar>(constrained);
  request.grammar = output.grammar;
  std::optional<std::vector<int64_t>> token_ids;
  if (f.tokens) {
    auto ids = parse_ids(*f.tokens);
    if (!ids) return fail({kExitUsage, ids.error().message});
    token_ids = std::move(*ids);
  }

  auto config = load_config(f.config ? std::optional<fs::path>(*f.config) : std::nullopt);
  if (!config) return fail({kExitUsage, config.error().message});

  auto db = store_path();
  request.database = db ? std::optional<fs::path>(*db) : std::nullopt;
  request.session = session_scope();
  // The conversation this call continues.
  if (f.resume || f.cid) {
    std::optional<session::ConversationRef> ref;
    if (f.cid) {
      auto parsed = parse_conversation_ref(*f.cid);
      if (!parsed) return fail({kExitUsage, parsed.error().message});
      ref = *parsed;
    }
    auto found = session::find_base(request.database, ref, request.session);
    if (!found) return fail(from(found.failure()));
    request.base = std::move(*found);
  }

  auto choice = choose_model(f, *config, request.base ? &*request.base : nullptr);
  // A remote backend answers instead of a local model (cli/remote_call.h).
  auto backend =
      choose_backend(f.backend, f.model, request.base ? &*request.base : nullptr, *config);
  if (!backend) return fail({kExitUsage, backend.error().message});
  if (*backend) {
    if (const char* option = local_only_option(f)) {
      return fail({kExitUsage, std::string(option) + " needs a local model, not a backend"});
    }
    auto call = prepare_remote_call(
        **backend,
        {merged(config->settings, f.settings), f.settings.think.has_value(), f.words, f.file},
        request);
    if (!call) return fail({kExitUsage, call.error().message});
    return answer_call(
        f, request, {}, "remote",
        [&](const session::Callbacks& c) { return run_remote_call(*call, request, c); }, out, err);
  }
  // A running server of this user (unless told to run here) answers; with
  // no model named anywhere, it answers with its own default model.
  std::optional<fs::path> socket;
  if (!f.local && !env_set("QUIP_NO_SERVE")) socket = server_socket();
  std::optional<Failure> no_model;
  if (auto* failure = std::get_if<Failure>(&choice)) {
    std::error_code ec;
    const bool server_default = !f.model && !request.base && socket && fs::is_socket(*socket, ec) &&
                                !f.print_prompt && !f.estimate;
    if (!server_default) return fail(*failure);
    no_model = *failure;
    choice = ModelChoice{{}, merged(config->settings, f.settings)};
  }
  const ModelChoice& model = std::get<ModelChoice>(choice);
  const Settings& s = model.settings;
  auto sampler = sampler_settings(s);
  if (auto* failure = std::get_if<Failure>(&sampler)) return fail(*failure);
  request.sampler = std::get<engine::SamplerSettings>(sampler);

  std::vector<std::string> parts;
  if (!f.tokens) {
    auto read = read_prompt_parts({.words = f.words, .file = f.file, .read_stdin = true});
    if (!read) return fail({kExitUsage, read.error().message});
    parts = std::move(*read);
    if (parts.empty()) return fail({kExitUsage, "no prompt: give PROMPT words, -f FILE or stdin"});
  }

  auto isa = kernels::chosen_isa();
  if (!isa) return fail({kExitUsage, isa.error().message});

  request.model_path = model.path;
  request.raw = f.raw;
  request.template_file = s.template_file;
  if (s.template_file) {
    auto text = read_input_file(s.template_file->string());  // a regular file only
    if (!text) return fail({kExitUsage, text.error().message});
    request.template_text = std::move(*text);
  }
  if (f.raw) {
    request.raw_tokens = std::move(token_ids);
    if (!f.tokens) request.raw_text = join_raw(parts);
  } else {
    request.messages = nlohmann::json::array();
    if (!request.base && s.system) {
      request.messages.push_back({{"role", "system"}, {"content", *s.system}});
    }
    request.messages.push_back({{"role", "user"}, {"content", join_for_chat(parts)}});
  }
  if (s.think) {  // the flag's, or config.toml's (checked there)
    const std::optional<chat::ThinkMode> mode = chat::parse_think_mode(*s.think);
    if (!mode) {
      return fail({kExitUsage,
                   "--think: '" + printable(*s.think) + "' is not one of hide, show, off, inline"});
    }
    request.think = *mode;
  }
  // A constrained answer is the grammar's from its first token: a thinking
  // model is asked not to think (the grammar would forbid its <think>).
  if (request.grammar) request.think = chat::ThinkMode::Off;

  request.n_ctx = s.ctx_size && *s.ctx_size > 0 ? static_cast<size_t>(*s.ctx_size) : 0;
  request.cache_max_bytes = config->cache_max_size.value_or(store::kDefaultCacheBytes);
  if (f.cache_max_size) {
    auto size = store::parse_size(*f.cache_max_size);
    if (!size) return fail({kExitUsage, "--cache-max-size: " + size.error().message});
    request.cache_max_bytes = *size;
  }
  request.threads = s.threads ? static_cast<int>(*s.threads) : kernels::physical_cores();
  request.isa = *isa;
  request.n_predict = s.n_predict.value_or(-1);
  request.ignore_eos = f.ignore_eos;
  request.logprobs = f.json ? f.logprobs : 0;
  request.no_cache = f.no_cache;
  request.cache_dir = cache_dir();

  // The model, loaded here, and the call's prompt on it.
  std::optional<session::LoadedModel> loaded;
  std::optional<session::Prompt> prompt;
  const auto load = [&]() -> std::optional<session::Failure> {
    auto l = session::load_model(model.path.string());
    if (!l) return session::Failure{FailureKind::BadData, l.error().message};
    loaded.emplace(std::move(*l));
    for (const std::string& w : loaded->tokenizer.vocab().warnings()) {
      print_warning(err, "quip", w);
    }
    auto built = session::build_prompt(*loaded, request);
    if (!built) return built.failure();
    prompt = std::move(*built);
    return std::nullopt;
  };
  if (f.print_prompt || f.estimate) {
    if (auto failure = load()) return fail(from(*failure));
    if (f.print_prompt) {
      if (f.json) {
        out << nlohmann::json{{"text", escape_invalid_utf8(prompt->text)},
                              {"tokens", prompt->tokens}}
                   .dump()
            << '\n';
      } else {
        out << prompt->text;
      }
      return kExitOk;
    }
    if (f.estimate) {
      auto estimated = session::estimate(*loaded, request, *prompt);
      if (!estimated) return fail(from(estimated.failure()));
      print_estimate(*estimated, request.n_predict, f.json, out, err);
      return kExitOk;
    }
  }

  // The answer: from a running `quip serve` of this user where there is one
  // (the same call, the same record), else computed here.
  std::vector<int32_t> prompt_tokens;
  std::string engine = "local";
  const auto run_here =
      [&](const session::Callbacks& callbacks) -> session::Outcome<session::Answer> {
    if (auto failure = load()) return *failure;
    prompt_tokens = prompt->tokens;
    return session::generate(*loaded, request, *prompt, callbacks);
  };
  return answer_call(
      f, request, prompt_tokens, engine,
      [&](const session::Callbacks& callbacks) -> session::Outcome<session::Answer> {
        if (socket) {
          if (auto attached = serve::attached_generate(*socket, request, output.gbnf, callbacks,
                                                       prompt_tokens)) {
            engine = "serve";
            return std::move(*attached);
          }
        }
        if (no_model) return session::Failure{FailureKind::Usage, no_model->message};
        return run_here(callbacks);
      },
      out, err);
}

}  // namespace quip::cli
