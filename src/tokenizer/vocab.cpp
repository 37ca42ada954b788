#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/text.h"
#include "gguf/keys.h"
#include "tokenizer/merge_cache.h"
#include "tokenizer/unicode.h"

namespace quip::tokenizer {

namespace {

namespace k = gguf::keys;

struct PreName {
  std::string_view name;
  Pre pre;
};

// tokenizer.ggml.pre values and the pre-tokenizer each selects (names as the
// llama.cpp converter writes them).
constexpr PreName kPreNames[] = {
    {"default", Pre::Default},
    {"gpt-2", Pre::Gpt2},
    {"phi-2", Pre::Gpt2},
    {"jina-es", Pre::Gpt2},
    {"jina-de", Pre::Gpt2},
    {"gigachat", Pre::Gpt2},
    {"olmo", Pre::Gpt2},
    {"jais", Pre::Gpt2},
    {"llama3", Pre::Llama3},
    {"llama-v3", Pre::Llama3},
    {"llama-bpe", Pre::Llama3},
    {"falcon3", Pre::Llama3},
    {"pixtral", Pre::Llama3},
    {"dbrx", Pre::Llama3},
    {"smaug-bpe", Pre::Llama3},
    {"qwen2", Pre::Qwen2},
    {"deepseek-r1-qwen", Pre::Qwen2},
    {"stablelm2", Pre::Qwen2},
    {"megrez", Pre::Qwen2},
    {"deepseek-llm", Pre::DeepseekLlm},
    {"deepseek-coder", Pre::DeepseekCoder},
    {"falcon", Pre::Falcon},
    {"mpt", Pre::Mpt},
    {"starcoder", Pre::Starcoder},
    {"refact", Pre::Refact},
    {"command-r", Pre::Starcoder},
    {"codeshell", Pre::Starcoder},
    {"exaone", Pre::Starcoder},
    {"minerva-7b", Pre::Starcoder},
    {"smollm", Pre::Smollm},
    {"tekken", Pre::Mistral},
    {"trillion", Pre::Gpt2},
    {"granite-docling", Pre::Gpt2},
    {"exaone4", Pre::Gpt2},
    {"a.x-4.0", Pre::Gpt2},
    {"mellum", Pre::Gpt2},
    {"hunyuan", Pre::Qwen2},
    {"grok-2", Pre::Qwen2},
    {"poro-chat", Pre::Bloom},
    {"bloom", Pre::Bloom},
    {"gpt3-finnish", Pre::Bloom},
    {"viking", Pre::Viking},
    {"gpt-4o", Pre::Gpt4o},
    {"glm4", Pre::ChatGlm4},
    {"chatglm-bpe", Pre::ChatGlm4},
    {"llama4", Pre::Gpt4o},
    {"minimax-m2", Pre::Gpt4o},
    {"gemma4", Pre::Gemma4},
};

std::string quote(std::string_view s) {
  std::string q(1, '\'');
  q += printable(s);
  q += '\'';
  return q;
}

}  // namespace

int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return -1;
    }
    v = v * 16 + d;
  }
  return v;
}

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Whether a token breaks the rule that lets SPM text be split before each "▁"
// that follows another character: "▁" may only appear in a run at the start.
bool has_inner_space(std::string_view t) {
  size_t i = 0;
  while (t.substr(i, kSpace.size()) == kSpace) i += kSpace.size();
  return t.find(kSpace, i) != std::string_view::npos;
}

}  // namespace

bool Vocab::is_eog(TokenId id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

// Merges: "left right", each side a token; the rank is the position. (The
// token a pair becomes is looked up when a merge is applied: resolving all
// of them here would cost every call a third more lookups at load.)
Result<void> Vocab::load_merges(const gguf::GgufFile& f, const Options& options,
                                const std::string& prefix) {
  const size_t n = texts_.size();
  auto merges = f.get_array("tokenizer.ggml.merges", gguf::ValueType::String);
  if (!merges) return merges.error();
  const BigVector<std::string_view>& list = (*merges)->strings;
  MergeCacheKey key;
  std::optional<std::filesystem::path> saved;
  if (options.cache_dir) {
    key = merge_cache_key(f.metadata_bytes());
    saved = merge_cache_path(*options.cache_dir, key);
  }
  if (saved && load_merge_cache(*saved, key, n, list.size(), merges_)) {
    merges_from_cache_ = true;  // built and validated from this very metadata before
  } else {
    if (!merges_.init(n, list.size())) {
      return Error{prefix + "vocabulary of " + std::to_string(n) + " tokens and " +
                   std::to_string(list.size()) + " merges is too large"};
    }
    // Each merge's lookups and its insert land at random in tables larger
    // than the caches. A three-stage pipeline overlaps the misses: merge r+8
    // is hashed and its token slots prefetched, merge r+4 is resolved and its
    // pair slot prefetched, merge r is checked and inserted.
    struct Stage {
      std::string_view left, right;
      uint64_t left_hash = 0, right_hash = 0;
      TokenId l = kNoToken, r = kNoToken;
      bool ok = false;
    };
    constexpr size_t kRing = 8, kResolveAhead = 4;
    Stage ring[kRing];
    const size_t count = list.size();
    const auto hash_stage = [&](size_t i) {
      Stage& st = ring[i % kRing];
      const std::string_view m = list[i];
      const size_t space = m.find(' ', 1);
      st = Stage{};
      st.ok = space != std::string_view::npos && space + 1 < m.size();
      if (!st.ok) return;
      st.left = m.substr(0, space);
      st.right = m.substr(space + 1);
      st.left_hash = StringIndex::hash(st.left);
      st.right_hash = StringIndex::hash(st.right);
      index_.prefetch(st.left_hash);
      index_.prefetch(st.right_hash);
    };
    const auto resolve_stage = [&](size_t i) {
      Stage& st = ring[i % kRing];
      if (!st.ok) return;
      st.l = index_.find(st.left, st.left_hash);
      st.r = index_.find(st.right, st.right_hash);
      if (st.l != kNoToken && st.r != kNoToken) merges_.prefetch(st.l, st.r);
    };
    for (size_t i = 0; i < std::min(kRing, count); ++i) hash_stage(i);
    for (size_t i = 0; i < std::min(kResolveAhead, count); ++i) resolve_stage(i);
    for (size_t r = 0; r < count; ++r) {
      if (r + kResolveAhead < count) resolve_stage(r + kResolveAhead);
      const Stage st = ring[r % kRing];
      if (r + kRing < count) hash_stage(r + kRing);
      const auto bad = [&](const std::string& why) {
        return Error{prefix + "merge " + std::to_string(r) + " " + quote(list[r]) + " " + why};
      };
      if (!st.ok) return bad("is not two tokens separated by a space");
      if (st.l == kNoToken) return bad("names the unknown token " + quote(st.left));
      if (st.r == kNoToken) return bad("names the unknown token " + quote(st.right));
      merges_.insert(st.l, st.r, static_cast<uint32_t>(r));
    }
    if (saved) save_merge_cache(*saved, key, n, list.size(), merges_);
  }
  return {};
}

Result<Vocab> Vocab::load(const gguf::GgufFile& f, const Options& options) {
  const std::string prefix = printable(f.name(), 4096) + ": ";
  const auto fail = [&](const std::string& what) { return Error{prefix + what}; };
  Vocab v;

  auto model = f.get<std::string_view>(k::kTokenizerModel);
  if (!model) return model.error();
  const bool gemma4 = *model == "gemma4";
  if (*model == "llama") {
    v.model_ = Model::Spm;
  } else if (*model == "gpt2" || gemma4) {
    v.model_ = Model::Bpe;
  } else {
    return fail("key 'tokenizer.ggml.model' is " + quote(*model) +
                ", expected 'llama' (SentencePiece), 'gpt2' (byte-level BPE) or 'gemma4' (BPE "
                "over UTF-8)");
  }

  // The pre-tokenizer: BPE needs one; SentencePiece has none. A gemma4
  // vocabulary has its own whatever tokenizer.ggml.pre says (as in llama.cpp).
  auto pre = f.get_optional<std::string_view>(k::kTokenizerPre);
  if (!pre) return pre.error();
  v.pre_name_ = gemma4 ? std::string("gemma4") : std::string(pre->value_or("default"));
  if (v.model_ == Model::Bpe) {
    const auto it = std::find_if(std::begin(kPreNames), std::end(kPreNames),
                                 [&](const PreName& p) { return p.name == v.pre_name_; });
    if (it == std::end(kPreNames)) {
      return fail("key 'tokenizer.ggml.pre' names the pre-tokenizer " + quote(v.pre_name_) +
                  ", which quip does not know");
    }
    v.pre_ = it->pre;
  }

  // Texts, copied into one arena.
  auto tokens = f.get_array(k::kTokens, gguf::ValueType::String);
  if (!tokens) return tokens.error();
  const BigVector<std::string_view>& texts = (*tokens)->strings;
  if (texts.empty()) return fail("key 'tokenizer.ggml.tokens' is empty, expected a vocabulary");
  if (texts.size() > static_cast<size_t>(INT32_MAX)) {
    return fail("vocabulary of " + std::to_string(texts.size()) + " tokens is too large");
  }
  // An empty text becomes "[EMPTY_i]", as llama.cpp names it (so that a
  // vocabulary with several empty slots loads, and such a token prints as
  // llama.cpp prints it).
  const auto empty_name = [](size_t i) { return "[EMPTY_" + std::to_string(i) + "]"; };
  size_t total = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].size() > StringIndex::kMaxText) {
      return fail("token " + std::to_string(i) + " is " + std::to_string(texts[i].size()) +
                  " bytes long, expected at most " + std::to_string(StringIndex::kMaxText));
    }
    total += texts[i].empty() ? empty_name(i).size() : texts[i].size();
  }
  v.arena_.resize(total);
  v.texts_.reserve(texts.size());
  size_t at = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string renamed = texts[i].empty() ? empty_name(i) : std::string();
    const std::string_view t = texts[i].empty() ? std::string_view(renamed) : texts[i];
    std::memcpy(v.arena_.data() + at, t.data(), t.size());
    v.texts_.emplace_back(v.arena_.data() + at, t.size());
    at += t.size();
  }
  const size_t n = v.texts_.size();

  // Scores: SentencePiece merges by them, so it needs one per token.
  if (f.find("tokenizer.ggml.scores") != nullptr) {
    auto scores = f.get_array("tokenizer.ggml.scores", gguf::ValueType::F32);
    if (!scores) return scores.error();
    if ((*scores)->length != n) {
      return fail("key 'tokenizer.ggml.scores' has " + std::to_string((*scores)->length) +
                  " scores, expected one per token (" + std::to_string(n) + ")");
    }
    v.scores_.resize(n);
    for (size_t i = 0; i < n; ++i) v.scores_[i] = (*scores)->at<float>(i);
  } else if (v.model_ == Model::Spm) {
    return fail("key 'tokenizer.ggml.scores' not found: a SentencePiece vocabulary needs scores");
  }

  // Types: absent means every token is normal.
  v.types_.assign(n, TokenType::Normal);
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    auto types = f.get_array("tokenizer.ggml.token_type", gguf::ValueType::I32);
    if (!types) return types.error();
    if ((*types)->length != n) {
      return fail("key 'tokenizer.ggml.token_type' has " + std::to_string((*types)->length) +
                  " types, expected one per token (" + std::to_string(n) + ")");
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t t = (*types)->at<int32_t>(i);
      if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
        return fail("token " + std::to_string(i) + " " + quote(v.texts_[i]) + " has type " +
                    std::to_string(t) + ", expected 0 to 6");
      }
      v.types_[i] = static_cast<TokenType>(t);
    }
  }

  if (const int64_t dup = v.index_.build(v.arena_.data(), v.texts_); dup >= 0) {
    const auto d = static_cast<size_t>(dup);
    return fail("tokens " + std::to_string(v.index_.find(v.texts_[d])) + " and " +
                std::to_string(d) + " have the same text " + quote(v.texts_[d]) +
                ", expected every token to differ");
  }

  // Byte tokens.
  std::fill(std::begin(v.byte_tokens_), std::end(v.byte_tokens_), kNoToken);
  if (!v.byte_level()) {
    // A byte token decodes as the byte its text names.
    for (size_t i = 0; i < n; ++i) {
      if (v.types_[i] == TokenType::Byte && parse_byte_token(v.texts_[i]) < 0) {
        return fail("token " + std::to_string(i) + " has type byte but text " + quote(v.texts_[i]) +
                    ", expected <0x00> to <0xFF>");
      }
    }
    // As SentencePiece's byte fallback: "<0xNN>", else (SentencePiece only,
    // as llama.cpp) the byte itself as a token.
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      v.byte_tokens_[b] = v.find(hex);
      if (v.byte_tokens_[b] == kNoToken && v.model_ == Model::Spm) {
        const char raw = static_cast<char>(b);
        v.byte_tokens_[b] = v.find(std::string_view(&raw, 1));
      }
    }
  } else {
    const ByteMap& bytes = ByteMap::get();
    for (int b = 0; b < 256; ++b) v.byte_tokens_[b] = v.find(bytes.encode(static_cast<uint8_t>(b)));
  }

  if (v.model_ == Model::Bpe) {
    if (auto r = v.load_merges(f, options, prefix); !r) return r.error();
  }

  if (auto r = v.load_specials(f, prefix); !r) return r.error();

  if (v.model_ == Model::Spm) {
    v.spm_splits_at_spaces_ = true;
    for (size_t i = 0; i < n && v.spm_splits_at_spaces_; ++i) {
      if (has_inner_space(v.texts_[i])) v.spm_splits_at_spaces_ = false;
    }
  }
  return v;
}

}  // namespace quip::tokenizer
