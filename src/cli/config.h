// The user's settings: config.toml (config_dir()/config.toml, or the file
// --config or $QUIP_CONFIG names).
//
//   model = "qwen"                 # the default model: an alias or a path
//   temp = 0                       # defaults for every model
//
//   [models.qwen]                  # `quip -m qwen`
//   path = "~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"
//   system = "Answer in one line."
//   temp = 0.7
//
// Settings (top level or per model): system, template, temp, top_k, top_p,
// min_p, repeat_penalty, seed, ctx_size, threads, n_predict (the numeric
// ones within the ranges of RealLimit/IntLimit, shared with the command
// line; seed and n_predict -1 and ctx_size 0 mean "fresh", "no limit" and
// "the model's"). The [cache]
// table sets the prefix cache's max_size ("4GiB", or bytes). A
// [backends.NAME] table names a remote OpenAI-compatible server for
// `quip -m NAME`: url (required), model, api_key_env (the environment
// variable that holds its key: a key itself is never written here), timeout
// (seconds without a byte from the server, in [1, 86400]). Precedence: a
// command-line flag, then the model's table, then the top level, then
// quip's default. Unknown keys and bad values are errors naming the file,
// line and key: a typo must not pass for a setting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace quip::cli {

// Each field is unset when the file does not give it.
struct Settings {
  std::optional<std::string> system;
  // --think's mode ("hide", "show", "off" or "inline"; config.toml's are checked).
  std::optional<std::string> think;
  std::optional<std::filesystem::path> template_file;
  std::optional<double> temp, top_p, min_p, repeat_penalty;
  std::optional<int64_t> top_k, seed, ctx_size, threads, n_predict;
};

// What a numeric setting allows, in config.toml and on the command line
// alike (config.cpp has the table). Non-finite numbers are never allowed.
struct RealLimit {
  std::string_view key;   // in config.toml: "top_p"
  std::string_view flag;  // on the command line: "--top-p"
  std::optional<double> Settings::*field;
  double lo, hi;  // [lo, hi], or (lo, hi] when lo_open
  bool lo_open;
  const char* meaning;  // of a special value ("1: no limit"), or null

  bool allows(double v) const;
  std::string range() const;  // "(0, 1] (1: no limit)"
};
struct IntLimit {
  std::string_view key, flag;
  std::optional<int64_t> Settings::*field;
  int64_t lo, hi;  // [lo, hi]
  const char* meaning;

  bool allows(int64_t v) const;
  std::string range() const;  // "[-1, 2147483647] (-1: no limit)"
};

// The limit of a numeric setting by config key ("top_p") or flag
// ("--top-p"), or null when it is not one of that kind.
const RealLimit* real_limit(std::string_view key_or_flag);
const IntLimit* int_limit(std::string_view key_or_flag);

// Sets the numeric setting that `flag` ("--temp", "--n-predict", ...) names
// from its text on the command line, as config.toml's key would be set:
// the whole text must be a number within the setting's range, never
// clamped or wrapped. Errors: "--n-predict -2 is not in [-1, 2147483647]
// (-1: no limit)". PRECONDITIONS: flag names a numeric setting.
Result<void> set_from_flag(std::string_view flag, const std::string& text, Settings& s);

struct ModelAlias {
  std::filesystem::path path;  // absolute, or relative to the working folder
  Settings settings;
};

struct BackendConfig {
  std::string url;                         // as written (cli/remote_call.cpp checks it)
  std::optional<std::string> model;        // the model the server is asked for
  std::optional<std::string> api_key_env;  // a variable name: [A-Za-z_][A-Za-z0-9_]*
  std::optional<int64_t> timeout_s;
};

struct Config {
  std::filesystem::path file;                // where it was read from; empty when none
  std::optional<std::string> default_model;  // an alias or a path
  Settings settings;                         // the top-level defaults
  std::map<std::string, ModelAlias> models;
  std::map<std::string, BackendConfig> backends;  // no name is in `models` too
  std::optional<uint64_t> cache_max_size;  // [cache] max_size, bytes
};

// Parses config text; `file` names it in errors and anchors relative paths.
Result<Config> parse_config(std::string_view text, const std::filesystem::path& file);

// Reads `explicit_file` when given (it must exist), else $QUIP_CONFIG when
// set (it must exist), else config_dir()/config.toml when it exists, else
// returns an empty Config.
Result<Config> load_config(const std::optional<std::filesystem::path>& explicit_file);

// `over` where it gives a value, else `base`.
Settings merged(const Settings& base, const Settings& over);

}  // namespace quip::cli
