// Pre-tokenizers of BPE vocabularies: a list of regular
// expressions (PCRE2 with JIT), applied one after the other. Each splits
// every piece made so far into its matches and the text between them; both
// are kept, so no byte is ever lost.
//
// Thread safety: a PreTokenizer is immutable and may be shared; each thread
// passes its own Matcher.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/vocab.h"

namespace quip::tokenizer {

class PreTokenizer {
 public:
  // Per-thread matching state (PCRE2 match data).
  class Matcher {
   public:
    Matcher();
    ~Matcher();
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;

   private:
    friend class PreTokenizer;
    struct Data;
    std::unique_ptr<Data> data_;
  };

  // The pre-tokenizer `pre` names; an error only if a pattern fails to
  // compile (a bug, reported rather than hidden).
  static Result<PreTokenizer> create(Pre pre);

  // Appends the pieces of `text` (views into it, in order, covering all of it).
  void split(std::string_view text, Matcher& m, std::vector<std::string_view>& out) const;

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

 private:
  PreTokenizer();
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

// The patterns of `pre`, in the order they apply (for tests and docs).
std::vector<std::string_view> pre_tokenizer_patterns(Pre pre);

}  // namespace quip::tokenizer
