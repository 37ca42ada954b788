// What `-m NAME` names, in this order: an existing file; an alias of
// config.toml; a path (a name that starts with '/', './', '../' or '~',
// whose absence the file's opening reports); a model in another tool's store
// (session/model_stores.h): Ollama, Hugging Face (hf:...), LM Studio,
// llama.cpp. A name found in two stores is an error that lists both; a name
// found nowhere is an error that says where it looked.
#pragma once

#include <filesystem>
#include <string>
#include <variant>

#include "cli/config.h"
#include "session/model_stores.h"

namespace quip::cli {

struct ModelFile {
  std::filesystem::path path;
  const ModelAlias* alias = nullptr;  // the alias of the config that named it, if one did
};

struct ModelNameError {
  int status;  // kExitUsage: two stores have it; kExitBadData: none has it, or it is broken
  std::string message;
};

// PRECONDITIONS: `config` outlives the result (alias points into it).
std::variant<ModelFile, ModelNameError> resolve_model_name(const std::string& name,
                                                           const Config& config,
                                                           const session::StoreRoots& roots);

// resolve_model_name with the default config (read only when `name` is not
// an existing file: a broken config.toml is then a usage error) and the
// stores of this process's environment. For commands without --config.
std::variant<ModelFile, ModelNameError> resolve_model_name(const std::string& name);

}  // namespace quip::cli
