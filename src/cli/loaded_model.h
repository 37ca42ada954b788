// A model file opened for running: the mapping, the bound weights and the
// tokenizer, loaded together for the commands that run a model.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "engine/model.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {

struct LoadedModel {
  std::unique_ptr<gguf::GgufFile> file;  // on the heap: the model points into it
  engine::Model model;
  tokenizer::Tokenizer tokenizer;
};

// Errors name the file and what is wrong with it, and include weight types
// that quip cannot multiply.
Result<LoadedModel> load_model(const std::string& path);

}  // namespace quip::cli
