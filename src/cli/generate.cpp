#include "cli/generate.h"

#include <csignal>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/loaded_model.h"
#include "cli/usage.h"
#include "engine/generate.h"
#include "kernels/thread_pool.h"

namespace quip::cli {

namespace {

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

}  // namespace

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const auto t_start = std::chrono::steady_clock::now();
  CLI::App app{"Continue a prompt with a local GGUF model; the answer streams to stdout.", "quip"};
  std::string model_path, tokens_text;
  std::vector<std::string> words;
  bool raw = false, ignore_eos = false, json = false;
  int64_t n_predict = -1;
  int threads = kernels::physical_cores(), logprobs = 0;
  size_t n_ctx = 0;
  std::optional<uint64_t> seed;
  engine::SamplerSettings s;
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  app.add_flag("--raw", raw, "feed the prompt as it is, without the chat template");
  app.add_option("PROMPT", words, "the prompt (words are joined by spaces); '-' reads stdin");
  app.add_option("--tokens", tokens_text, "the prompt as token ids: \"ID ID ...\"");
  app.add_option("-n,--n-predict", n_predict, "stop after N tokens (-1: at the end of the turn)");
  app.add_option("--temp", s.temperature, "temperature; 0 is greedy")->capture_default_str();
  app.add_option("--top-k", s.top_k, "keep the K most likely tokens (0: all)")
      ->capture_default_str();
  app.add_option("--top-p", s.top_p, "keep the most likely tokens up to probability P")
      ->capture_default_str();
  app.add_option("--min-p", s.min_p, "drop tokens below P times the most likely")
      ->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, "penalty for recent tokens (1: none)")
      ->capture_default_str();
  app.add_option("-s,--seed", seed, "random seed (default: a fresh one, reported by --json)");
  app.add_option("-t,--threads", threads, "threads (default: the physical cores)")
      ->capture_default_str();
  app.add_option("-c,--ctx-size", n_ctx, "context positions (default: the model's)");
  app.add_flag("--ignore-eos", ignore_eos, "go on past the end of the turn");
  app.add_option("--logprobs", logprobs, "with --json: the K most likely tokens of each step");
  app.add_flag("--json", json, "print one JSON object instead of the text");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  if (!raw) {
    err << "quip: chat prompts need the chat templates, which are not built yet; use --raw\n";
    return kExitUsage;
  }
  if (words.empty() == tokens_text.empty()) {
    err << "quip: give either a PROMPT or --tokens (see 'quip --help')\n";
    return kExitUsage;
  }
  if (threads < 1 || threads > 1024) {
    err << "quip: --threads " << threads << " is not in [1, 1024]\n";
    return kExitUsage;
  }
  if (logprobs < 0 || logprobs > 1000) {
    err << "quip: --logprobs " << logprobs << " is not in [0, 1000]\n";
    return kExitUsage;
  }
  s.seed = seed.value_or(std::random_device{}());
  if (auto check = engine::Sampler::create(s); !check) {
    err << "quip: " << check.error().message << '\n';
    return kExitUsage;
  }

  std::string prompt_text;
  if (words.size() == 1 && words[0] == "-") {
    prompt_text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    for (size_t i = 0; i < words.size(); ++i) prompt_text += (i ? " " : "") + words[i];
  }

  auto loaded = load_model(model_path);
  if (!loaded) {
    err << "quip: " << loaded.error().message << '\n';
    return kExitBadData;
  }
  auto isa = kernels::chosen_isa();
  if (!isa) {
    err << "quip: " << isa.error().message << '\n';
    return kExitUsage;
  }
  const engine::Hparams& hp = loaded->model.hparams();
  std::vector<int32_t> prompt;
  if (!tokens_text.empty()) {
    auto ids = parse_ids(tokens_text, hp.n_vocab);
    if (!ids) {
      err << "quip: " << ids.error().message << '\n';
      return kExitUsage;
    }
    prompt = std::move(*ids);
  } else {
    prompt = loaded->tokenizer.encode(prompt_text, {.add_special = true, .parse_special = true});
    if (prompt.empty()) {
      err << "quip: the prompt is empty\n";
      return kExitUsage;
    }
  }
  if (n_ctx == 0) n_ctx = hp.n_ctx_train;
  if (prompt.size() >= n_ctx) {
    err << "quip: the prompt has " << prompt.size() << " tokens; the context holds " << n_ctx
        << " (see --ctx-size)\n";
    return kExitUsage;
  }

  engine::Forward fwd(loaded->model, {.n_threads = threads, .isa = *isa, .max_batch = 256});
  const auto t_loaded = std::chrono::steady_clock::now();
  engine::GenerateOptions options{.max_tokens = n_predict,
                                  .n_ctx = n_ctx,
                                  .sampler = s,
                                  .top_logprobs = json ? logprobs : 0,
                                  .is_end = {}};
  const tokenizer::Vocab& vocab = loaded->tokenizer.vocab();
  if (!ignore_eos) options.is_end = [&](int32_t id) { return vocab.is_eog(id); };

  std::signal(SIGINT, on_sigint);
  std::signal(SIGPIPE, SIG_IGN);
  tokenizer::StreamDecoder decoder(loaded->tokenizer);
  std::string text;
  bool reader_gone = false;
  const engine::Generation g = engine::generate(fwd, prompt, options, [&](int32_t id) {
    const std::string piece = decoder.push(id);
    text += piece;
    if (!json && !piece.empty()) {
      out << piece << std::flush;
      if (!out) reader_gone = true;
    }
    return g_interrupted == 0 && !reader_gone;
  });
  const std::string tail = decoder.flush();
  text += tail;
  if (reader_gone) return kExitOk;  // the reader went away: end quietly
  if (json) {
    nlohmann::json j;
    j["prompt_tokens"] = prompt;
    j["tokens"] = g.tokens;
    j["text"] = escape_invalid_utf8(text);
    j["stop"] = stop_name(g.stop);
    j["seed"] = s.seed;
    if (logprobs > 0) {
      nlohmann::json steps = nlohmann::json::array();
      for (const engine::Step& st : g.steps) {
        nlohmann::json top = nlohmann::json::array();
        for (const engine::TokenLogprob& t : st.top) top.push_back({t.id, t.logprob});
        steps.push_back({{"id", st.id}, {"top", top}});
      }
      j["steps"] = steps;
    }
    j["timings"] = {
        {"load_ms", ms_between(t_start, t_loaded)},
        {"prompt_ms", g.prompt_ms},
        {"generation_ms", g.generation_ms},
        {"prompt_tokens_per_s", g.prompt_ms > 0 ? 1000.0 * g.evaluated_tokens / g.prompt_ms : 0},
        {"generation_tokens_per_s",
         g.generation_ms > 0 ? 1000.0 * g.tokens.size() / g.generation_ms : 0}};
    out << j.dump() << '\n';
  } else {
    out << tail;  // stdout holds exactly the answer's text
  }
  return g_interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace quip::cli
