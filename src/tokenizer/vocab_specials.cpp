// The special tokens of a vocabulary: the ids its keys name, the ones found
// by their text, the tokens that end generation, and the attributes llama.cpp
// gives tokens after reading them (llama_vocab::impl::load, build 9749), so
// that text tokenizes and generation stops as it does there.
#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "base/text.h"
#include "gguf/keys.h"
#include "tokenizer/vocab.h"

namespace quip::tokenizer {

namespace {

namespace k = gguf::keys;

// A token-id key as written: converters write any integer type, and some
// write 0xFFFFFFFF or -1 for "no such token". A non-integer type is an
// error worded as for a u32 key.
Result<std::optional<int64_t>> read_id(const gguf::GgufFile& f, std::string_view key) {
  auto as_u32 = f.get_optional<uint32_t>(key);
  if (as_u32) {
    if (!as_u32->has_value()) return std::optional<int64_t>();
    return std::optional<int64_t>(**as_u32);
  }
  const gguf::Value* v = f.find(key);
  std::optional<int64_t> id;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            id = static_cast<int64_t>(std::min<uint64_t>(x, INT64_MAX));  // out of range anyway
          } else {
            id = static_cast<int64_t>(x);
          }
        }
      },
      *v);
  if (!id) return as_u32.error();
  return id;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_any(std::string_view s, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return s.find(p) != std::string_view::npos; });
}

// Texts by which llama.cpp finds special tokens that no key names.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",         "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",    "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>",      "<fim_prefix>",    "<｜fim▁begin｜>",
    "<PRE>",          "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>",
};
constexpr std::string_view kFimSufTexts[] = {
    "<|fim_suffix|>", "<fim-suffix>",      "<fim_suffix>",    "<｜fim▁hole｜>",
    "<SUF>",          "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>",
};
constexpr std::string_view kFimMidTexts[] = {
    "<|fim_middle|>", "<fim-middle>",      "<fim_middle>",    "<｜fim▁end｜>",
    "<MID>",          "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>",
};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                             "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};

// Tokens that end generation, by text.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>",       "<|end|>",
    "<|return|>",  // o200k_harmony (gpt-oss)
    "<|call|>",
    "<|flush|>",  // solar-open
    "<|calls|>",  "<end_of_turn>",    "<|endoftext|>",
    "</s>",       "<|eom_id|>",       "<EOT>",
    "_<EOT>",
    "[EOT]",  // Kimi-K2
    "[EOS]",      "<|end_of_text|>",  "<end_of_utterance>",
    "<eos>",  // Gemma 4
    "<turn|>",    "<|tool_response>", "<｜end▁of▁sentence｜>",
    "[e~[",  // MiniMax M2
};

// gpt-oss's channel markers, always written out (llama.cpp makes them user-defined).
constexpr std::string_view kAlwaysShown[] = {"<|channel|>", "<|message|>", "<|start|>",
                                             "<|constrain|>"};

}  // namespace

Result<void> Vocab::load_specials(const gguf::GgufFile& f, const std::string& prefix) {
  const auto fail = [&](const std::string& what) { return Error{prefix + what}; };
  const size_t n = texts_.size();
  const bool spm = model_ == Model::Spm;

  // Flags first: whether BOS and EOS are needed decides how a bad id is taken.
  const auto flag = [&](std::string_view key, bool fallback) -> Result<bool> {
    auto b = f.get_optional<bool>(key);
    if (!b) return b.error();
    return b->value_or(fallback);
  };
  // llama.cpp adds BOS by default for SentencePiece and for the byte-level
  // vocabularies of Llama 3 and Mistral's Tekken. Gemma 4 always starts with
  // BOS: llama.cpp overrides a false add_bos_token (llama.cpp PR 21500).
  const bool gemma4_bos = pre_ == Pre::Gemma4;
  auto add_bos = flag("tokenizer.ggml.add_bos_token",
                      spm || pre_ == Pre::Llama3 || pre_ == Pre::Mistral || gemma4_bos);
  if (!add_bos) return add_bos.error();
  if (gemma4_bos && !*add_bos) {
    *add_bos = true;
    warnings_.push_back(printable(prefix +
                                      "key 'tokenizer.ggml.add_bos_token' is false, but Gemma 4 "
                                      "needs its BOS token: taken as true, as llama.cpp does",
                                  4096));
  }
  auto add_eos = flag("tokenizer.ggml.add_eos_token", false);
  if (!add_eos) return add_eos.error();
  auto add_space = flag("tokenizer.ggml.add_space_prefix", spm);
  if (!add_space) return add_space.error();
  add_bos_ = *add_bos;
  add_eos_ = *add_eos;
  add_space_prefix_ = *add_space;

  bool byte_fallback = true;
  for (TokenId b : byte_tokens_) byte_fallback = byte_fallback && b != kNoToken;

  // The ids the keys name. SentencePiece has conventional defaults (as in
  // llama.cpp); byte-level BPE has none (llama.cpp's default of 11 for BOS and
  // EOS would make "," end generation, so quip does not take it). An id out
  // of the vocabulary's range means "no such token" (converters write
  // 0xFFFFFFFF or -1): the default applies, with a warning, unless the token
  // is one the vocabulary needs, which stays an error.
  struct Slot {
    std::string_view key;
    TokenId* id;
    TokenId fallback;
  };
  TokenId fim_pre_dep = kNoToken, fim_suf_dep = kNoToken, fim_mid_dep = kNoToken;
  const Slot slots[] = {
      {k::kBosTokenId, &bos_, spm ? 1 : kNoToken},
      {k::kEosTokenId, &eos_, spm ? 2 : kNoToken},
      {"tokenizer.ggml.eot_token_id", &eot_, kNoToken},
      {"tokenizer.ggml.eom_token_id", &eom_, kNoToken},
      {"tokenizer.ggml.unknown_token_id", &unk_, spm ? 0 : kNoToken},
      {"tokenizer.ggml.seperator_token_id", &sep_, kNoToken},  // sic: the key is spelled so
      {"tokenizer.ggml.padding_token_id", &pad_, kNoToken},
      {"tokenizer.ggml.mask_token_id", &mask_, kNoToken},
      {"tokenizer.ggml.fim_pre_token_id", &fim_pre_, kNoToken},
      {"tokenizer.ggml.fim_suf_token_id", &fim_suf_, kNoToken},
      {"tokenizer.ggml.fim_mid_token_id", &fim_mid_, kNoToken},
      {"tokenizer.ggml.fim_pad_token_id", &fim_pad_, kNoToken},
      {"tokenizer.ggml.fim_rep_token_id", &fim_rep_, kNoToken},
      {"tokenizer.ggml.fim_sep_token_id", &fim_sep_, kNoToken},
      // Older names of the first three FIM keys, read into their own slots
      // (see below).
      {"tokenizer.ggml.prefix_token_id", &fim_pre_dep, kNoToken},
      {"tokenizer.ggml.suffix_token_id", &fim_suf_dep, kNoToken},
      {"tokenizer.ggml.middle_token_id", &fim_mid_dep, kNoToken},
  };
  std::vector<std::string> absent;  // keys whose id is out of range
  std::optional<Error> bad_eos;     // an error unless something else ends generation
  for (const Slot& s : slots) {
    *s.id = s.fallback >= 0 && static_cast<size_t>(s.fallback) < n ? s.fallback : kNoToken;
    auto id = read_id(f, s.key);
    if (!id) return id.error();
    if (!id->has_value()) continue;
    const int64_t v = **id;
    if (v >= 0 && static_cast<uint64_t>(v) < n) {
      *s.id = static_cast<TokenId>(v);
      continue;
    }
    const auto bad = [&] {
      return fail("key '" + std::string(s.key) + "' is " + std::to_string(v) +
                  ", expected a token id below " + std::to_string(n));
    };
    // Needed: a BOS or EOS the vocabulary adds, a SentencePiece unknown token
    // that stands for text it cannot spell.
    if ((s.id == &bos_ && add_bos_) || (s.id == &eos_ && add_eos_) ||
        (s.id == &unk_ && spm && !byte_fallback)) {
      return bad();
    }
    if (s.id == &eos_) bad_eos = bad();
    std::string& entry = absent.emplace_back(1, '\'');
    entry.append(s.key).append("' = ").append(std::to_string(v));
  }
  if (add_bos_ && bos_ == kNoToken) {
    if (gemma4_bos) {
      return fail(
          "key 'tokenizer.ggml.bos_token_id' not found: a gemma4 vocabulary always adds "
          "its BOS token");
    }
    return fail("key 'tokenizer.ggml.add_bos_token' is true, but the vocabulary has no BOS token");
  }
  if (add_eos_ && eos_ == kNoToken) {
    return fail("key 'tokenizer.ggml.add_eos_token' is true, but the vocabulary has no EOS token");
  }
  // llama.cpp reads the older keys last, into the same ids: they win.
  if (fim_pre_dep != kNoToken) fim_pre_ = fim_pre_dep;
  if (fim_suf_dep != kNoToken) fim_suf_ = fim_suf_dep;
  if (fim_mid_dep != kNoToken) fim_mid_ = fim_mid_dep;

  // Tokens found by their text when no key names them; each found becomes a
  // control token whatever its stored type, so it is not matched in text
  // unless special tokens are parsed. (llama.cpp takes the first in its hash
  // map's order when several texts are present; quip takes the lowest id.)
  const auto force_control = [&](TokenId id) {
    types_[static_cast<size_t>(id)] = TokenType::Control;
  };
  const auto by_text = [&](TokenId& id, std::span<const std::string_view> candidates) {
    if (id != kNoToken) return;
    for (std::string_view t : candidates) {
      const TokenId found = find(t);
      if (found != kNoToken && (id == kNoToken || found < id)) id = found;
    }
    if (id != kNoToken) force_control(id);
  };
  by_text(eot_, kEotTexts);
  by_text(eom_, kEomTexts);
  by_text(fim_pre_, kFimPreTexts);
  by_text(fim_suf_, kFimSufTexts);
  by_text(fim_mid_, kFimMidTexts);
  by_text(fim_pad_, kFimPadTexts);
  by_text(fim_rep_, kFimRepTexts);
  by_text(fim_sep_, kFimSepTexts);

  // End of generation: the FIM padding, repository and file-separator
  // tokens, every token named like an end token (made control), then EOS,
  // EOT and EOM.
  eog_.clear();
  const auto add_eog = [&](TokenId id) {
    if (id != kNoToken && !is_eog(id)) eog_.push_back(id);
  };
  add_eog(fim_pad_);
  add_eog(fim_rep_);
  add_eog(fim_sep_);
  for (std::string_view t : kEogTexts) {
    if (const TokenId id = find(t); id != kNoToken) {
      add_eog(id);
      force_control(id);
    }
  }
  for (std::string_view t : kAlwaysShown) {
    if (const TokenId id = find(t); id != kNoToken) {
      types_[static_cast<size_t>(id)] = TokenType::UserDefined;
    }
  }
  add_eog(eos_);
  add_eog(eot_);
  add_eog(eom_);
  // gpt-oss (and solar-open) end a message with "<|end|>" but go on after it:
  // with "<|return|>" and "<|call|>" (or "<|calls|>" and "<|flush|>") it is
  // no end and is written out.
  const auto eog_text = [&](std::string_view t) {
    const TokenId id = find(t);
    return id != kNoToken && is_eog(id) ? id : kNoToken;
  };
  if (const TokenId end = eog_text("<|end|>"); end != kNoToken) {
    const bool ret = eog_text("<|return|>") != kNoToken;
    const bool call = eog_text("<|call|>") != kNoToken || eog_text("<|calls|>") != kNoToken;
    const bool flush = eog_text("<|flush|>") != kNoToken;
    if ((ret && call) || (call && flush)) {
      std::erase(eog_, end);
      types_[static_cast<size_t>(end)] = TokenType::UserDefined;
    }
  }
  // Gemma 4 (with "<|tool_response>") and PaddleOCR: "</s>" is ordinary text.
  if (eog_text("<|tool_response>") != kNoToken) {
    if (const TokenId s = eog_text("</s>"); s != kNoToken) {
      std::erase(eog_, s);
      types_[static_cast<size_t>(s)] = TokenType::Normal;
    }
  }
  std::sort(eog_.begin(), eog_.end());
  // A file that names an EOS but no valid one, and nothing else that ends
  // generation, could only generate to the length limit.
  if (bad_eos && eog_.empty()) return *bad_eos;

  // Tokens matched whole in text, longest first (ties by id, for determinism).
  specials_.clear();
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = types_[i];
    if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) &&
        !texts_[i].empty()) {
      specials_.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](TokenId a, TokenId b) { return text(a).size() > text(b).size(); });

  // Whitespace that special tokens swallow, set per model by name as
  // llama.cpp does (the Hugging Face lstrip/rstrip of added tokens are not
  // in GGUF files).
  strip_.assign(n, Strip::None);
  const auto set_strip = [&](std::string_view t, Strip s) {
    if (const TokenId id = find(t); id != kNoToken) strip_[static_cast<size_t>(id)] = s;
  };
  auto name = f.get_optional<std::string_view>(k::kName);
  if (!name) return name.error();
  auto arch = f.get_optional<std::string_view>(k::kArchitecture);
  if (!arch) return arch.error();
  const std::string model_name = lower(name->value_or(""));
  if (contains_any(pre_name_, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch->value_or(""), {"nomic-bert-moe", "jina-bert-v3"})) {
    set_strip("<mask>", Strip::Left);
  } else if (contains_any(model_name, {"phi-3", "phi3"})) {
    // Phi-3's special tokens swallow the whitespace after them.
    for (TokenId id : specials_) strip_[static_cast<size_t>(id)] = Strip::Right;
    set_strip("</s>", Strip::Right);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set_strip(t, Strip::None);
  } else if (contains_any(model_name, {"modern-bert"})) {
    set_strip("[MASK]", Strip::Left);
  }

  if (!absent.empty()) {
    std::string w = prefix;
    for (size_t i = 0; i < absent.size(); ++i) w += (i ? ", " : "") + absent[i];
    w += absent.size() == 1 ? " is not a token id" : " are not token ids";
    w += " below " + std::to_string(n) + ": ignored (no such token)";
    warnings_.push_back(printable(w, 4096));
  }
  return {};
}

}  // namespace quip::tokenizer
