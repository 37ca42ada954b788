// Where quip keeps its files. QUIP_HOME moves all three folders under one
// (tests and scripts use it to stay out of the user's own files).
#pragma once

#include <filesystem>
#include <optional>

#include "base/result.h"

namespace quip {

// quip's own environment variables that are set but empty (QUIP_HOME=,
// QUIP_CONFIG=, QUIP_SESSION=, QUIP_MAX_INPUT=) are mistakes, never "unset":
// an empty QUIP_HOME falling back to the real home folders would write a
// test's or a script's conversations into the user's own. The error names
// the variable.
Result<void> check_environment();

// The folder for derived data that can always be rebuilt (vocabulary
// indexes, the prefix cache): $QUIP_HOME/cache, else $XDG_CACHE_HOME/quip,
// else $HOME/.cache/quip. Nullopt when none of these is set, or when
// QUIP_HOME is set but empty (see check_environment). The folder may
// not exist yet.
std::optional<std::filesystem::path> cache_dir();

// The folder for what the user stores (the conversation database):
// $QUIP_HOME/data, else $XDG_DATA_HOME/quip, else $HOME/.local/share/quip.
std::optional<std::filesystem::path> data_dir();

// The socket of this user's `quip serve` (serve/server.h), which the
// command attaches to: $QUIP_SOCKET, else serve.sock under $QUIP_HOME, else
// $XDG_RUNTIME_DIR/quip/serve.sock (an absolute one), else serve.sock in
// cache_dir(). Nullopt when none of these is set.
std::optional<std::filesystem::path> server_socket();

// The folder for the user's settings (config.toml): $QUIP_HOME/config, else
// $XDG_CONFIG_HOME/quip, else $HOME/.config/quip.
std::optional<std::filesystem::path> config_dir();

}  // namespace quip
