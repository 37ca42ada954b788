// Vocabularies written in memory for tokenizer tests: builders of GGUF
// tokenizer metadata, and tiny vocabularies whose tokens can be worked out
// by hand.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer::test_vocabs {

using gguf::GgufFile;
using gguf::GgufWriter;
using gguf::make_array;
using gguf::OwnedValue;

inline constexpr std::string_view kFileName = "vocab.gguf";
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
inline constexpr std::string_view kGpt2Space = "\xC4\xA0";     // U+0120 'Ġ', GPT-2's byte 0x20

inline constexpr EncodeOptions kPlain{.add_special = false, .parse_special = false};

// ---- Writing vocabularies ---------------------------------------------------

// Metadata entries by key, written in insertion order; set() replaces.
class Keys {
 public:
  Keys& set(const std::string& key, OwnedValue value) {
    for (auto& [k, v] : entries_) {
      if (k == key) {
        v = std::move(value);
        return *this;
      }
    }
    entries_.emplace_back(key, std::move(value));
    return *this;
  }
  Keys& erase(const std::string& key) {
    std::erase_if(entries_, [&](const auto& e) { return e.first == key; });
    return *this;
  }
  std::vector<std::byte> bytes() const {
    GgufWriter w;
    for (const auto& [k, v] : entries_) w.set(k, v);
    return w.bytes();
  }

 private:
  std::vector<std::pair<std::string, OwnedValue>> entries_;
};

// The characters of `text` by their lead byte alone, as SentencePiece and
// llama.cpp split them (the naive tokenizers' first step).
inline std::vector<std::string> lead_byte_characters(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = std::min<size_t>(c >= 0xF0   ? 4
                                      : c >= 0xE0 ? 3
                                      : c >= 0xC0 ? 2
                                                  : 1,
                                      text.size() - i);
    out.emplace_back(text.substr(i, n));
    i += n;
  }
  return out;
}

inline OwnedValue strings(std::vector<std::string> v) {
  return make_array(v);
}
inline OwnedValue floats(std::vector<float> v) {
  return make_array(v);
}
inline OwnedValue ints(std::vector<int32_t> v) {
  return make_array(v);
}

// A valid SentencePiece vocabulary: <unk>, <s>, </s>, one byte token, "▁", "a".
inline Keys small_spm() {
  Keys k;
  k.set("general.architecture", std::string("llama"));
  k.set("tokenizer.ggml.model", std::string("llama"));
  k.set("tokenizer.ggml.tokens",
        strings({"<unk>", "<s>", "</s>", "<0x41>", std::string(kSpmSpace), "a"}));
  k.set("tokenizer.ggml.scores", floats({0, 0, 0, 0, -1, -2}));
  k.set("tokenizer.ggml.token_type", ints({2, 3, 3, 6, 1, 1}));
  return k;
}

// A valid byte-level BPE vocabulary: "a", "b", "ab" and the merge "a b".
inline Keys small_bpe() {
  Keys k;
  k.set("general.architecture", std::string("gpt2"));
  k.set("tokenizer.ggml.model", std::string("gpt2"));
  k.set("tokenizer.ggml.pre", std::string("gpt-2"));
  k.set("tokenizer.ggml.tokens", strings({"a", "b", "ab"}));
  k.set("tokenizer.ggml.merges", strings({"a b"}));
  return k;
}

// A valid Gemma 4 vocabulary: <pad> <eos> <bos>, one byte token, "▁", "a",
// "▁a" and the merge "▁ a"; BOS and EOS named.
inline Keys small_gemma4() {
  Keys k;
  k.set("general.architecture", std::string("gemma4"));
  k.set("tokenizer.ggml.model", std::string("gemma4"));
  k.set("tokenizer.ggml.tokens",
        strings({"<pad>", "<eos>", "<bos>", "<0x41>", std::string(kSpmSpace), "a",
                 std::string(kSpmSpace) + "a"}));
  k.set("tokenizer.ggml.token_type", ints({3, 3, 3, 6, 1, 1, 1}));
  k.set("tokenizer.ggml.merges", strings({std::string(kSpmSpace) + " a"}));
  k.set("tokenizer.ggml.bos_token_id", uint32_t{2});
  k.set("tokenizer.ggml.eos_token_id", uint32_t{1});
  return k;
}

// A tokenizer loaded from written bytes (which it does not keep).
inline Result<Tokenizer> load(const Keys& keys) {
  const std::vector<std::byte> bytes = keys.bytes();
  auto f = GgufFile::parse(std::string(kFileName), bytes);
  if (!f) return f.error();
  return Tokenizer::load(*f);
}

inline Tokenizer load_ok(const Keys& keys) {
  auto t = load(keys);
  CHECK(t.ok());
  return std::move(t).value();
}

inline std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += std::to_string(id) + " ";
  return s;
}

// ---- Tiny vocabularies, worked out by hand -----------------------------------

// SentencePiece: <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3 to
// 258, as in Llama 2), then "▁" a b c ab bc with the scores of ab and bc given.
inline constexpr TokenId kSpmByte0 = 3, kSp = 259, kA = 260, kB = 261, kC = 262, kAb = 263,
                         kBc = 264;

inline Keys tiny_spm(float ab_score, float bc_score) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    tokens.push_back(hex);
    scores.push_back(0);
    types.push_back(6);
  }
  for (auto [text, score] : std::vector<std::pair<std::string, float>>{{std::string(kSpmSpace), -1},
                                                                       {"a", -3},
                                                                       {"b", -3},
                                                                       {"c", -3},
                                                                       {"ab", ab_score},
                                                                       {"bc", bc_score}}) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(1);
  }
  Keys k;
  k.set("tokenizer.ggml.model", std::string("llama"));
  k.set("tokenizer.ggml.tokens", strings(tokens));
  k.set("tokenizer.ggml.scores", floats(scores));
  k.set("tokenizer.ggml.token_type", ints(types));
  return k;
}

// Byte-level BPE over "a" "b" "Ġ" (space) and the tokens the merges make.
inline constexpr TokenId kBa = 0, kBb = 1, kBsp = 2, kBab = 3, kBaa = 4, kBba = 5, kBabab = 6;

inline Keys tiny_bpe(std::vector<std::string> merges, const std::string& pre = "gpt-2") {
  Keys k;
  k.set("tokenizer.ggml.model", std::string("gpt2"));
  k.set("tokenizer.ggml.pre", pre);
  k.set("tokenizer.ggml.tokens",
        strings({"a", "b", std::string(kGpt2Space), "ab", "aa", "ba", "abab"}));
  k.set("tokenizer.ggml.merges", strings(std::move(merges)));
  return k;
}

// Tokenizers of shared files, each loaded once for the whole test program.
inline const Tokenizer* shared_tokenizer(const std::filesystem::path& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(path.string());
  if (it != cache.end()) return it->second.get();
  auto f = GgufFile::open(path.string());
  if (!f) {
    ADD_FAILURE() << f.error().message;
    return nullptr;
  }
  auto t = Tokenizer::load(*f);
  if (!t) {
    ADD_FAILURE() << t.error().message;
    return nullptr;
  }
  return cache.emplace(path.string(), std::make_unique<Tokenizer>(std::move(t).value()))
      .first->second.get();
}

}  // namespace quip::tokenizer::test_vocabs
