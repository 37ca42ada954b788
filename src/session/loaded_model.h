// A model file opened for running: the mapping, the bound weights, the
// tokenizer and the file's fingerprint, loaded together for everything that
// runs a model (a call, `quip bench`, later a resident server that keeps it).
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "engine/model.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::session {

struct LoadedModel {
  std::unique_ptr<gguf::GgufFile> file;  // on the heap: the model points into it
  engine::Model model;
  tokenizer::Tokenizer tokenizer;
  std::string fingerprint;  // gguf::fingerprint(*file): what records and caches are keyed by
};

// Errors name the file and what is wrong with it, and include weight types
// that quip cannot multiply.
Result<LoadedModel> load_model(const std::string& path);

}  // namespace quip::session
