// Text <-> token ids for a GGUF vocabulary: SentencePiece (score-driven
// merges, byte fallback), byte-level BPE (ranked merges after a
// pre-tokenizer) and Gemma 4's BPE (ranked merges over UTF-8 with
// SentencePiece's spaces and byte fallback), with special tokens and a
// streaming detokenizer.
//
// Behaviour follows llama.cpp's tokenizer, so that prompts give the token ids
// llama.cpp gives (and those of the original Hugging Face tokenizers, which
// llama.cpp's conformance cases check).
//
// Thread safety: a Tokenizer is immutable after load; encode() and decode()
// may be called from many threads at once.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace quip::tokenizer {

struct EncodeOptions {
  // Add BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token, ...).
  bool add_special = true;
  // Match control tokens written in the text ("<|im_start|>") as those
  // tokens. Without it they are tokenized as the plain text they are.
  // User-defined tokens are always matched, as they are ordinary vocabulary
  // entries that the merges cannot produce.
  bool parse_special = false;
};

struct DecodeOptions {
  // Write control tokens (BOS, "<|im_end|>") as their text; otherwise they
  // produce nothing.
  bool special = false;
  // Drop the space SentencePiece put in front of the text when encoding
  // (only for vocabularies that add one).
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  // Loads the vocabulary of `file`. Errors name the file and the key.
  static Result<Tokenizer> load(const gguf::GgufFile& file, const Vocab::Options& options);
  static Result<Tokenizer> load(const gguf::GgufFile& file) { return load(file, {}); }

  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;

  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  // The bytes one token stands for (see DecodeOptions::special).
  // PRECONDITIONS: vocab().valid(id).
  std::string piece(TokenId id, bool special = false) const;

  const Vocab& vocab() const { return *vocab_; }

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

 private:
  Tokenizer();
  struct Fragment;
  class Session;
  void partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<PreTokenizer> pre_;  // byte-level BPE only
};

// Turns generated tokens into text as they come, never splitting a UTF-8
// character: bytes of a character that is not complete yet are held until it
// is, and bytes that can never form one are passed on as they are.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(tokenizer), special_(special) {}

  // The text that `id` completes (maybe empty).
  std::string push(TokenId id);

  // Whatever is held back (an incomplete character at the very end).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool special_;
  std::string pending_;
};

}  // namespace quip::tokenizer
