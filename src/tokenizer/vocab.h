// A tokenizer vocabulary as stored in a GGUF file (tokenizer.ggml.*),
// validated at load.
//
// Owns copies of the token texts (one arena), so it does not depend on the
// file staying mapped. Immutable after load: safe to share between threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/big_alloc.h"
#include "base/result.h"
#include "gguf/reader.h"
#include "tokenizer/tables.h"

namespace quip::tokenizer {

// tokenizer.ggml.token_type, as llama.cpp's llama_token_type.
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// Whitespace a special token swallows next to it when matched in text.
enum class Strip : uint8_t { None, Left, Right };

enum class Model {
  Spm,  // tokenizer.ggml.model = "llama": SentencePiece, score-driven merges
  Bpe,  // "gpt2": byte-level BPE with ranked merges; "gemma4": BPE over UTF-8 (Pre::Gemma4)
};

// The pre-tokenizer a BPE vocabulary names in tokenizer.ggml.pre (or, for
// Gemma 4, in tokenizer.ggml.model).
enum class Pre {
  Default,
  Gpt2,
  Llama3,
  Qwen2,
  DeepseekLlm,
  DeepseekCoder,
  Falcon,
  Mpt,
  Starcoder,
  Refact,
  Smollm,
  Mistral,
  Bloom,  // also Poro, GPT-3 Finnish
  Viking,
  Gpt4o,     // also Llama 4, MiniMax M2
  ChatGlm4,  // Llama 3's pattern, but merges always apply
  // tokenizer.ggml.model = "gemma4" (Gemma 4): spaces written as U+2581,
  // lines split from runs of newlines, ranked merges over UTF-8 characters
  // (no byte map), "<0xNN>" byte tokens for characters left unmerged.
  Gemma4,
};

// "<0xNN>" -> NN, or -1 for any other text.
int parse_byte_token(std::string_view text);

class Vocab {
 public:
  struct Options {
    // Where to keep built tables for later calls (see merge_cache.h); none
    // when unset.
    std::optional<std::filesystem::path> cache_dir;
  };

  // Loads and validates the vocabulary of `file`. Errors name the file and key.
  static Result<Vocab> load(const gguf::GgufFile& file, const Options& options);
  static Result<Vocab> load(const gguf::GgufFile& file) { return load(file, Options{}); }

  // Whether the BPE merge table was read from the cache folder.
  bool merges_from_cache() const { return merges_from_cache_; }

  Model model() const { return model_; }
  Pre pre() const { return pre_; }
  // Whether text is tokenized with each space written as U+2581, and token
  // texts decode with U+2581 as a space (SentencePiece, gemma4).
  bool escapes_spaces() const { return model_ == Model::Spm || pre_ == Pre::Gemma4; }
  // Whether token texts spell bytes through GPT-2's byte map (byte-level
  // BPE); otherwise they are UTF-8 text with "<0xNN>" byte tokens.
  bool byte_level() const { return model_ == Model::Bpe && pre_ != Pre::Gemma4; }
  std::string_view pre_name() const { return pre_name_; }
  size_t size() const { return texts_.size(); }

  // PRECONDITIONS for the per-token accessors: 0 <= id < size().
  std::string_view text(TokenId id) const { return texts_[static_cast<size_t>(id)]; }
  float score(TokenId id) const {
    return scores_.empty() ? 0.0f : scores_[static_cast<size_t>(id)];
  }
  TokenType type(TokenId id) const { return types_[static_cast<size_t>(id)]; }
  bool valid(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < texts_.size(); }
  Strip strip(TokenId id) const { return strip_[static_cast<size_t>(id)]; }

  // The token whose text is exactly `text`, or kNoToken.
  TokenId find(std::string_view text) const { return index_.find(text); }
  const StringIndex& index() const { return index_; }

  // The BPE merge rank of a pair of tokens, or PairIndex::kNoRank. (The
  // pair becomes the token find(text(left) + text(right)).)
  uint32_t merge_rank(TokenId left, TokenId right) const { return merges_.find(left, right); }

  // The token standing for byte b: "<0xNN>" (SPM, gemma4) or the byte's
  // mapped character (byte-level BPE); kNoToken if the vocabulary has none.
  TokenId byte_token(uint8_t b) const { return byte_tokens_[b]; }

  // Special tokens (kNoToken when the vocabulary has none): named by the
  // file's keys (an id out of range counts as none, see warnings()), with
  // SentencePiece's defaults, or found by their text as llama.cpp finds them.
  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId eot() const { return eot_; }
  TokenId eom() const { return eom_; }
  TokenId unk() const { return unk_; }
  TokenId sep() const { return sep_; }
  TokenId pad() const { return pad_; }
  TokenId mask() const { return mask_; }
  TokenId fim_pre() const { return fim_pre_; }
  TokenId fim_suf() const { return fim_suf_; }
  TokenId fim_mid() const { return fim_mid_; }
  TokenId fim_pad() const { return fim_pad_; }
  TokenId fim_rep() const { return fim_rep_; }
  TokenId fim_sep() const { return fim_sep_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

  // What the file holds that quip reads as llama.cpp does but that may be a
  // mistake (special ids out of range, taken as none): one line each, naming
  // the file, for the caller to show.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Tokens that end generation, sorted: EOS, EOT, EOM, the FIM padding,
  // repository and file-separator tokens, and every token named like an end
  // token ("</s>", "<|im_end|>", "<end_of_turn>", ...; see vocab_specials.cpp).
  const std::vector<TokenId>& end_of_generation() const { return eog_; }
  bool is_eog(TokenId id) const;

  // Tokens matched as units in text before the pre-tokenizer (control,
  // user-defined and unknown tokens), longest text first.
  const std::vector<TokenId>& special_tokens() const { return specials_; }

  // SPM: whether no token has U+2581 after another character but for a run
  // of them at its start; then text may be split before every "▁" that
  // follows another character and each piece merged on its own.
  bool spm_splits_at_spaces() const { return spm_splits_at_spaces_; }

 private:
  Result<void> load_merges(const gguf::GgufFile& file, const Options& options,
                           const std::string& prefix);
  // Special ids, end-of-generation tokens, the types and strip attributes
  // llama.cpp sets by name, the list of specials (vocab_specials.cpp).
  Result<void> load_specials(const gguf::GgufFile& file, const std::string& prefix);

  Model model_ = Model::Spm;
  Pre pre_ = Pre::Default;
  std::string pre_name_;
  // Containers whose buffers stay put when moved, so the views stay valid.
  BigVector<char> arena_;              // all token texts
  BigVector<std::string_view> texts_;  // into arena_
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<Strip> strip_;
  StringIndex index_;
  PairIndex merges_;
  TokenId byte_tokens_[256];
  TokenId bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken, unk_ = kNoToken;
  TokenId sep_ = kNoToken, pad_ = kNoToken, mask_ = kNoToken;
  TokenId fim_pre_ = kNoToken, fim_suf_ = kNoToken, fim_mid_ = kNoToken, fim_pad_ = kNoToken,
          fim_rep_ = kNoToken, fim_sep_ = kNoToken;
  std::vector<std::string> warnings_;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  std::vector<TokenId> eog_;
  std::vector<TokenId> specials_;
  bool spm_splits_at_spaces_ = false;
  bool merges_from_cache_ = false;
};

}  // namespace quip::tokenizer
