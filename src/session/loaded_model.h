// A model file opened for running: the mapping, the bound weights, the
// tokenizer and the file's fingerprint, loaded together for everything that
// runs a model (a call, `quip bench`, later a resident server that keeps it).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "engine/model.h"
#include "gguf/reader.h"
#include "grammar/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace quip::session {

struct LoadedModel {
  std::unique_ptr<gguf::GgufFile> file;  // on the heap: the model points into it
  engine::Model model;
  tokenizer::Tokenizer tokenizer;
  std::string fingerprint;  // gguf::fingerprint(*file): what records and caches are keyed by

  // The vocabulary as constrained output walks it (token_trie below),
  // built on first use and shared by the calls on this model.
  struct TrieSlot {
    std::once_flag once;
    std::shared_ptr<const grammar::TokenTrie> trie;
  };
  std::shared_ptr<TrieSlot> trie_slot = std::make_shared<TrieSlot>();
};

// Errors name the file and what is wrong with it, and include weight types
// that quip cannot multiply.
Result<LoadedModel> load_model(const std::string& path);

// Whether quip can run the model `file` holds (its architecture and
// hyper-parameters bind, and every weight matrix has a type quip
// multiplies): load_model's own check of the model, without the tokenizer.
Result<void> check_runnable(const gguf::GgufFile& file);

// The answer texts of `model`'s tokens as a trie (grammar/token_constraint.h):
// control tokens and tokens without text have none. Thread safe.
std::shared_ptr<const grammar::TokenTrie> token_trie(const LoadedModel& model);

}  // namespace quip::session
