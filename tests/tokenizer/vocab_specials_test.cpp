// Special tokens as llama.cpp's vocabulary loader (llama_vocab::impl::load,
// build 9749) settles them: ids out of range taken as absent, tokens found and
// retyped by their text, the end-of-generation set, and the whitespace some
// models' special tokens swallow. Each rule has a vocabulary made here whose
// result can be worked out by hand, and the real files that need it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/shared.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace quip::tokenizer {
namespace {

using namespace quip::tokenizer::test_vocabs;  // NOLINT: the test vocabularies

constexpr EncodeOptions kParse{.add_special = false, .parse_special = true};

// Byte-level BPE whose tokens 0..255 are the 256 bytes (so plain text gives
// one token per byte, id = byte) and no merges, then `extra` (text, type).
Keys bytes_bpe(const std::vector<std::pair<std::string, int32_t>>& extra) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(ByteMap::get().encode(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  for (const auto& [text, type] : extra) {
    tokens.push_back(text);
    types.push_back(type);
  }
  Keys k;
  k.set("tokenizer.ggml.model", std::string("gpt2"));
  k.set("tokenizer.ggml.pre", std::string("gpt-2"));
  k.set("tokenizer.ggml.tokens", strings(tokens));
  k.set("tokenizer.ggml.token_type", ints(types));
  k.set("tokenizer.ggml.merges", strings({}));
  return k;
}

constexpr TokenId kExtra = 256;  // the first of bytes_bpe's extra tokens

std::vector<TokenId> bytes_of(std::string_view s) {
  std::vector<TokenId> ids;
  for (char c : s) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::vector<TokenId> cat(std::initializer_list<std::vector<TokenId>> parts) {
  std::vector<TokenId> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// ---- Ids out of range ------------------------------------------------------------

TEST(SpecialIds, OutOfRangeOptionalIdsAreAbsentWithOneWarningLine) {
  Keys k = tiny_spm(-2, -2);  // 265 tokens, all 256 byte tokens
  k.set("tokenizer.ggml.seperator_token_id", uint32_t{0xFFFFFFFF});
  k.set("tokenizer.ggml.padding_token_id", uint32_t{0xFFFFFFFF});
  k.set("tokenizer.ggml.mask_token_id", int32_t{-1});
  k.set("tokenizer.ggml.fim_pre_token_id", uint32_t{265});
  k.set("tokenizer.ggml.eot_token_id", uint32_t{1000});
  k.set("tokenizer.ggml.fim_mid_token_id", uint64_t{1} << 40);
  k.set("tokenizer.ggml.fim_suf_token_id", int64_t{-5});
  const Tokenizer t = load_ok(k);
  EXPECT_EQ(t.vocab().sep(), kNoToken);
  EXPECT_EQ(t.vocab().pad(), kNoToken);
  EXPECT_EQ(t.vocab().mask(), kNoToken);
  EXPECT_EQ(t.vocab().fim_pre(), kNoToken);
  EXPECT_EQ(t.vocab().eot(), kNoToken);
  EXPECT_EQ(show(t.vocab().end_of_generation()), show({2}));  // </s> alone
  ASSERT_EQ(t.vocab().warnings().size(), 1u);
  const std::string& w = t.vocab().warnings()[0];
  EXPECT_EQ(w.rfind(std::string(kFileName) + ": ", 0), 0u) << w;
  for (const char* part :
       {"'tokenizer.ggml.seperator_token_id' = 4294967295",
        "'tokenizer.ggml.padding_token_id' = 4294967295", "'tokenizer.ggml.mask_token_id' = -1",
        "'tokenizer.ggml.fim_pre_token_id' = 265", "'tokenizer.ggml.eot_token_id' = 1000",
        "'tokenizer.ggml.fim_mid_token_id' = 1099511627776",
        "'tokenizer.ggml.fim_suf_token_id' = -5", "below 265"}) {
    EXPECT_TRUE(contains(w, part)) << w << "\nmissing: " << part;
  }
  EXPECT_FALSE(contains(w, "\n")) << w;
}

TEST(SpecialIds, ValidIdsGiveNoWarning) {
  Keys k = tiny_spm(-2, -2);
  k.set("tokenizer.ggml.padding_token_id", uint32_t{0});
  k.set("tokenizer.ggml.seperator_token_id", int32_t{2});  // any integer type
  const Tokenizer t = load_ok(k);
  EXPECT_EQ(t.vocab().pad(), 0);
  EXPECT_EQ(t.vocab().sep(), 2);
  EXPECT_TRUE(t.vocab().warnings().empty());
}

// An id out of range falls back to what the key's absence gives, as in
// llama.cpp: SentencePiece's <unk> 0, <s> 1 when no BOS is added.
TEST(SpecialIds, OutOfRangeIdsTheVocabularyDoesNotNeedTakeTheDefault) {
  const Tokenizer unk =
      load_ok(tiny_spm(-2, -2).set("tokenizer.ggml.unknown_token_id", uint32_t{0xFFFFFFFF}));
  EXPECT_EQ(unk.vocab().unk(), 0);  // byte fallback spells everything: no unknown needed
  EXPECT_EQ(unk.vocab().warnings().size(), 1u);
  const Tokenizer bos = load_ok(tiny_spm(-2, -2)
                                    .set("tokenizer.ggml.add_bos_token", false)
                                    .set("tokenizer.ggml.bos_token_id", uint32_t{999}));
  EXPECT_EQ(bos.vocab().bos(), 1);
  EXPECT_EQ(bos.vocab().warnings().size(), 1u);
  // EOS out of range while another token ends generation.
  const Tokenizer eos = load_ok(
      bytes_bpe({{"<|im_end|>", 3}}).set("tokenizer.ggml.eos_token_id", uint32_t{0xFFFFFFFF}));
  EXPECT_EQ(eos.vocab().eos(), kNoToken);
  EXPECT_EQ(show(eos.vocab().end_of_generation()), show({kExtra}));
  EXPECT_EQ(eos.vocab().warnings().size(), 1u);
}

struct NeededCase {
  const char* name;
  std::function<Keys()> make;
  const char* message;
};

const NeededCase kNeeded[] = {
    {"BosAddedOutOfRange",
     [] { return tiny_spm(-2, -2).set("tokenizer.ggml.bos_token_id", uint32_t{0xFFFFFFFF}); },
     "key 'tokenizer.ggml.bos_token_id' is 4294967295, expected a token id below 265"},
    {"BosAddedNegative",
     [] { return tiny_spm(-2, -2).set("tokenizer.ggml.bos_token_id", int32_t{-1}); },
     "key 'tokenizer.ggml.bos_token_id' is -1, expected a token id below 265"},
    {"EosAddedOutOfRange",
     [] {
       return tiny_spm(-2, -2)
           .set("tokenizer.ggml.add_eos_token", true)
           .set("tokenizer.ggml.eos_token_id", uint32_t{265});
     },
     "key 'tokenizer.ggml.eos_token_id' is 265, expected a token id below 265"},
    {"BosAddedMissing", [] { return small_bpe().set("tokenizer.ggml.add_bos_token", true); },
     "key 'tokenizer.ggml.add_bos_token' is true, but the vocabulary has no BOS token"},
    {"EosAddedMissing", [] { return small_bpe().set("tokenizer.ggml.add_eos_token", true); },
     "key 'tokenizer.ggml.add_eos_token' is true, but the vocabulary has no EOS token"},
    {"Llama3AddsBosByDefault",
     [] { return small_bpe().set("tokenizer.ggml.pre", std::string("llama-bpe")); },
     "key 'tokenizer.ggml.add_bos_token' is true, but the vocabulary has no BOS token"},
    {"TekkenAddsBosByDefault",
     [] { return small_bpe().set("tokenizer.ggml.pre", std::string("tekken")); },
     "key 'tokenizer.ggml.add_bos_token' is true, but the vocabulary has no BOS token"},
    {"UnknownOutOfRangeWithoutByteFallback",
     [] {
       return small_spm().set("tokenizer.ggml.unknown_token_id", int32_t{-1});  // one byte token
     },
     "key 'tokenizer.ggml.unknown_token_id' is -1, expected a token id below 6"},
    {"IdOfTypeString",
     [] { return tiny_spm(-2, -2).set("tokenizer.ggml.padding_token_id", std::string("0")); },
     "key 'tokenizer.ggml.padding_token_id' has type string, expected u32"},
};

class NeededIds : public ::testing::TestWithParam<NeededCase> {};

TEST_P(NeededIds, AreStillErrors) {
  auto t = load(GetParam().make());
  ASSERT_FALSE(t.ok()) << "accepted";
  const std::string& m = t.error().message;
  EXPECT_TRUE(contains(m, GetParam().message)) << m << "\nexpected: " << GetParam().message;
  EXPECT_FALSE(contains(m, "\n")) << m;
}

INSTANTIATE_TEST_SUITE_P(Vocab, NeededIds, ::testing::ValuesIn(kNeeded),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// ---- SentencePiece without byte tokens -------------------------------------------

// <unk> <s> </s> "▁" a b "▁a", all scores equal, no byte tokens.
Keys spm_without_bytes() {
  Keys k;
  k.set("tokenizer.ggml.model", std::string("llama"));
  k.set("tokenizer.ggml.tokens", strings({"<unk>", "<s>", "</s>", std::string(kSpmSpace), "a", "b",
                                          std::string(kSpmSpace) + "a"}));
  k.set("tokenizer.ggml.scores", floats({-1000, -1000, -1000, -1000, -1000, -1000, -1000}));
  k.set("tokenizer.ggml.token_type", ints({3, 3, 3, 1, 1, 1, 1}));
  return k;
}

TEST(SpmWithoutByteTokens, UnspellableRunsBecomeOneUnknownToken) {
  const Tokenizer t = load_ok(spm_without_bytes());
  // "▁a▁é(▁b": "é(" is one run the vocabulary cannot spell; "▁" and "b" stay.
  EXPECT_EQ(show(t.encode("a \xC3\xA9( b", kPlain)), show({6, 3, 0, 3, 5}));
  EXPECT_EQ(show(t.encode("(", kPlain)), show({3, 0}));
  EXPECT_EQ(show(t.encode("a((b)", kPlain)), show({6, 0, 5, 0}));
  EXPECT_EQ(show(t.encode("\xF0\x9F\x98\x80", {.add_special = true})), show({1, 3, 0}));
  // The unknown token prints nothing; the rest of the text stays.
  EXPECT_EQ(t.decode(t.encode("a((b)", kPlain)), "ab");
}

// Byte-level BPE: a byte the vocabulary lacks is left out, as llama.cpp
// does, even when the file names an unknown token (SmolLM2 names
// "<|endoftext|>", which must never appear in a prompt by accident).
TEST(BpeWithoutSomeBytes, MissingBytesAreLeftOut) {
  const Tokenizer t = load_ok(small_bpe()
                                  .set("tokenizer.ggml.tokens", strings({"<unk>", "a", "b", "ab"}))
                                  .set("tokenizer.ggml.unknown_token_id", uint32_t{0}));
  EXPECT_EQ(t.vocab().unk(), 0);
  EXPECT_EQ(show(t.encode("abcab", kPlain)), show({3, 3}));
  EXPECT_EQ(show(t.encode("c", kPlain)), show({}));
  // An unknown id out of range is no error here: byte-level BPE never uses it.
  EXPECT_TRUE(load(small_bpe().set("tokenizer.ggml.unknown_token_id", uint32_t{99})).ok());
}

// ---- Types set by name -------------------------------------------------------------

// Tokens named like end-of-generation tokens become control tokens: matched
// in text only when special tokens are parsed, written only when asked.
TEST(TypesByName, EndOfGenerationNamesBecomeControlTokens) {
  const std::vector<std::string> names = {
      "</s>",  "<|im_end|>", "<|endoftext|>",   "<end_of_turn>", "<|eot_id|>", "<|end|>",
      "<EOT>", "<|eom_id|>", "<|end_of_text|>", "<eos>",         "[EOS]",      "<end_of_utterance>",
  };
  for (int32_t type : {1, 4}) {  // normal, user-defined
    std::vector<std::pair<std::string, int32_t>> extra;
    for (const std::string& n : names) extra.emplace_back(n, type);
    const Tokenizer t = load_ok(bytes_bpe(extra));
    for (size_t i = 0; i < names.size(); ++i) {
      const auto id = static_cast<TokenId>(kExtra + i);
      const std::string text = "x" + names[i] + "y";
      EXPECT_TRUE(t.vocab().is_eog(id)) << names[i];
      EXPECT_EQ(t.vocab().type(id), TokenType::Control) << names[i];
      EXPECT_EQ(show(t.encode(text, kPlain)), show(bytes_of(text))) << names[i];
      EXPECT_EQ(show(t.encode(text, kParse)), show(cat({{'x'}, {id}, {'y'}}))) << names[i];
      EXPECT_EQ(t.decode(t.encode(text, kParse)), "xy") << names[i];
    }
  }
  // Names alike but not on the list stay as they are.
  const Tokenizer t = load_ok(bytes_bpe({{"<s>", 4}, {"<|im_start|>", 4}}));
  EXPECT_FALSE(t.vocab().is_eog(kExtra));
  EXPECT_EQ(show(t.encode("<s>", kPlain)), show({kExtra}));
  EXPECT_EQ(show(t.encode("<|im_start|>", kPlain)), show({kExtra + 1}));
}

// An EOT no key names is found by its text (and ends generation); a key
// that names one stops the search.
TEST(TypesByName, EndOfTurnFoundByTextUnlessNamed) {
  const Tokenizer found = load_ok(bytes_bpe({{"<|im_end|>", 1}}));
  EXPECT_EQ(found.vocab().eot(), kExtra);
  const Tokenizer named = load_ok(bytes_bpe({{"<|im_end|>", 1}, {"<stop>", 3}})
                                      .set("tokenizer.ggml.eot_token_id", uint32_t{kExtra + 1}));
  EXPECT_EQ(named.vocab().eot(), kExtra + 1);
  EXPECT_TRUE(named.vocab().is_eog(kExtra + 1));
  EXPECT_TRUE(named.vocab().is_eog(kExtra));  // still a name on the end-of-generation list

  // End of message (Llama 3.1's tool calls), likewise.
  const Tokenizer eom = load_ok(bytes_bpe({{"<|eom_id|>", 4}}));
  EXPECT_EQ(eom.vocab().eom(), kExtra);
  EXPECT_TRUE(eom.vocab().is_eog(kExtra));
  EXPECT_EQ(eom.vocab().type(kExtra), TokenType::Control);
}

// Fill-in-the-middle tokens are found by their text when no key names them
// and become control tokens; the padding, repository and file-separator
// ones end generation.
TEST(TypesByName, FimTokensFoundByText) {
  const Tokenizer t = load_ok(bytes_bpe({{"<|fim_prefix|>", 1},
                                         {"<|fim_suffix|>", 1},
                                         {"<|fim_middle|>", 1},
                                         {"<|fim_pad|>", 1},
                                         {"<|repo_name|>", 1},
                                         {"<|file_sep|>", 1}}));
  const Vocab& v = t.vocab();
  EXPECT_EQ(v.fim_pre(), kExtra);
  EXPECT_EQ(v.fim_suf(), kExtra + 1);
  EXPECT_EQ(v.fim_mid(), kExtra + 2);
  EXPECT_EQ(v.fim_pad(), kExtra + 3);
  EXPECT_EQ(v.fim_rep(), kExtra + 4);
  EXPECT_EQ(v.fim_sep(), kExtra + 5);
  for (TokenId id = kExtra; id < kExtra + 6; ++id) {
    EXPECT_EQ(v.type(id), TokenType::Control) << v.text(id);
    EXPECT_EQ(v.is_eog(id), id >= kExtra + 3) << v.text(id);
  }
  EXPECT_EQ(show(t.encode("<|fim_prefix|>", kPlain)), show(bytes_of("<|fim_prefix|>")));

  // Other spellings: CodeLlama's "▁<PRE>", StarCoder's "<reponame>".
  const Tokenizer code = load_ok(bytes_bpe({{"\xE2\x96\x81<PRE>", 1}, {"<reponame>", 1}}));
  EXPECT_EQ(code.vocab().fim_pre(), kExtra);
  EXPECT_EQ(code.vocab().fim_rep(), kExtra + 1);
  EXPECT_TRUE(code.vocab().is_eog(kExtra + 1));
}

TEST(TypesByName, FimKeysStopTheSearchAndOldKeysStillCount) {
  const Tokenizer t = load_ok(bytes_bpe({{"<PRE>", 1}, {"<pre>", 3}, {"<SUF>", 1}, {"<suf>", 3}})
                                  .set("tokenizer.ggml.fim_pre_token_id", uint32_t{kExtra + 1})
                                  .set("tokenizer.ggml.suffix_token_id", uint32_t{kExtra + 3}));
  EXPECT_EQ(t.vocab().fim_pre(), kExtra + 1);
  EXPECT_EQ(t.vocab().fim_suf(), kExtra + 3);
  EXPECT_EQ(t.vocab().type(kExtra), TokenType::Normal);  // "<PRE>" was not looked for
  EXPECT_EQ(t.vocab().type(kExtra + 2), TokenType::Normal);
  // Both names given: the older one wins, as llama.cpp reads it last.
  const Tokenizer both = load_ok(bytes_bpe({{"<m1>", 3}, {"<m2>", 3}})
                                     .set("tokenizer.ggml.middle_token_id", uint32_t{kExtra + 1})
                                     .set("tokenizer.ggml.fim_mid_token_id", uint32_t{kExtra}));
  EXPECT_EQ(both.vocab().fim_mid(), kExtra + 1);
  // A normal token is not matched whole, even when special tokens are parsed.
  EXPECT_EQ(show(t.encode("<PRE><pre>", kParse)), show(cat({bytes_of("<PRE>"), {kExtra + 1}})));
}

// gpt-oss writes its channel markers whatever the caller asks, so they are
// user-defined tokens; and "<|end|>" ends no generation next to "<|return|>"
// and "<|call|>".
TEST(TypesByName, GptOssChannelMarkersAndEnd) {
  const Tokenizer t = load_ok(bytes_bpe({{"<|channel|>", 3},
                                         {"<|message|>", 3},
                                         {"<|start|>", 3},
                                         {"<|constrain|>", 3},
                                         {"<|end|>", 3},
                                         {"<|return|>", 3},
                                         {"<|call|>", 3}}));
  const Vocab& v = t.vocab();
  for (TokenId id = kExtra; id < kExtra + 4; ++id) {
    EXPECT_EQ(v.type(id), TokenType::UserDefined) << v.text(id);
    EXPECT_EQ(show(t.encode(v.text(id), kPlain)), show({id})) << v.text(id);
    EXPECT_EQ(t.decode(std::vector<TokenId>{id}), v.text(id));
  }
  EXPECT_FALSE(v.is_eog(kExtra + 4));
  EXPECT_EQ(v.type(kExtra + 4), TokenType::UserDefined);
  EXPECT_TRUE(v.is_eog(kExtra + 5));
  EXPECT_TRUE(v.is_eog(kExtra + 6));

  // Without "<|call|>", "<|end|>" ends generation (Phi-3's end of turn).
  const Tokenizer phi = load_ok(bytes_bpe({{"<|end|>", 3}, {"<|return|>", 3}}));
  EXPECT_TRUE(phi.vocab().is_eog(kExtra));
  EXPECT_EQ(phi.vocab().type(kExtra), TokenType::Control);
  // solar-open's spelling: "<|calls|>" and "<|flush|>".
  const Tokenizer solar = load_ok(bytes_bpe({{"<|end|>", 3}, {"<|calls|>", 3}, {"<|flush|>", 3}}));
  EXPECT_FALSE(solar.vocab().is_eog(kExtra));
}

// Gemma 4 (which has "<|tool_response>"): "</s>" is plain text.
TEST(TypesByName, GemmaFourSlashSIsText) {
  const Tokenizer t = load_ok(bytes_bpe({{"</s>", 3}, {"<|tool_response>", 3}}));
  EXPECT_FALSE(t.vocab().is_eog(kExtra));
  EXPECT_TRUE(t.vocab().is_eog(kExtra + 1));
  EXPECT_EQ(t.vocab().type(kExtra), TokenType::Normal);
  EXPECT_EQ(show(t.encode("</s>", kParse)), show(bytes_of("</s>")));  // not a special token
}

// Empty token texts are named "[EMPTY_i]", as in llama.cpp: a vocabulary
// with several loads, and such a token prints its name.
TEST(TypesByName, EmptyTextsAreNamedByTheirId) {
  const Tokenizer t =
      load_ok(small_bpe().set("tokenizer.ggml.tokens", strings({"a", "b", "ab", "", "", "c"})));
  EXPECT_EQ(t.vocab().text(3), "[EMPTY_3]");
  EXPECT_EQ(t.vocab().text(4), "[EMPTY_4]");
  EXPECT_EQ(t.vocab().find("[EMPTY_4]"), 4);
  EXPECT_EQ(t.decode(std::vector<TokenId>{0, 4, 5}), "a[EMPTY_4]c");
  // A real token of that text collides, as in llama.cpp.
  EXPECT_FALSE(
      load(small_bpe().set("tokenizer.ggml.tokens", strings({"a", "b", "ab", "", "[EMPTY_3]"})))
          .ok());
}

// ---- Whitespace swallowed by special tokens --------------------------------------

// Phi-3 (by general.name): every special token swallows the whitespace after
// it, but for <unk>, <s> and <|endoftext|>; "</s>" does too.
TEST(StripByName, PhiThreeSpecialsSwallowWhitespaceAfterThem) {
  // tiny_spm's tokens (<unk> <s> </s>, bytes, "▁" a b c ab bc: ids 0..264),
  // then the control tokens "<|end|>" and "<|endoftext|>".
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<int32_t> types;
  {
    const Tokenizer base = load_ok(tiny_spm(-2, -2));
    for (TokenId id = 0; id < static_cast<TokenId>(base.vocab().size()); ++id) {
      texts.emplace_back(base.vocab().text(id));
      scores.push_back(base.vocab().score(id));
      types.push_back(static_cast<int32_t>(base.vocab().type(id)));
    }
  }
  texts.insert(texts.end(), {"<|end|>", "<|endoftext|>"});
  scores.insert(scores.end(), {0, 0});
  types.insert(types.end(), {3, 3});
  Keys k = tiny_spm(-2, -2);
  k.set("general.name", std::string("Phi3"));
  k.set("tokenizer.ggml.tokens", strings(texts));
  k.set("tokenizer.ggml.scores", floats(scores));
  k.set("tokenizer.ggml.token_type", ints(types));
  const TokenId end = 265, endoftext = 266;

  const Tokenizer phi = load_ok(k);
  EXPECT_EQ(phi.vocab().strip(end), Strip::Right);
  EXPECT_EQ(phi.vocab().strip(2), Strip::Right);  // </s>
  EXPECT_EQ(phi.vocab().strip(0), Strip::None);
  EXPECT_EQ(phi.vocab().strip(1), Strip::None);
  EXPECT_EQ(phi.vocab().strip(endoftext), Strip::None);
  // "<|end|>  a" -> <|end|> then "a" with the space prefix SentencePiece adds
  // after a special token; without the strip, the two spaces would stay.
  EXPECT_EQ(show(phi.encode("<|end|>  a", kParse)), show({end, kSp, kA}));
  EXPECT_EQ(show(phi.encode("<s>  a", kParse)), show({1, kSp, kSp, kSp, kA}));

  // Another name: nothing is stripped.
  const Tokenizer other = load_ok(k.set("general.name", std::string("llama")));
  EXPECT_EQ(other.vocab().strip(end), Strip::None);
  EXPECT_EQ(show(other.encode("<|end|>  a", kParse)), show({end, kSp, kSp, kSp, kA}));
}

TEST(StripByName, MaskTokensSwallowWhitespaceBeforeThem) {
  // ModernBERT (by name): "[MASK]".
  const Tokenizer modern = load_ok(
      bytes_bpe({{"[MASK]", 3}}).set("general.name", std::string("ModernBERT-base (modern-bert)")));
  EXPECT_EQ(modern.vocab().strip(kExtra), Strip::Left);
  EXPECT_EQ(show(modern.encode("a  [MASK]b", kParse)), show({'a', kExtra, 'b'}));
  // Jina v3 / Nomic MoE (by architecture): "<mask>".
  const Tokenizer jina =
      load_ok(bytes_bpe({{"<mask>", 3}}).set("general.architecture", std::string("jina-bert-v3")));
  EXPECT_EQ(jina.vocab().strip(kExtra), Strip::Left);
  EXPECT_EQ(show(jina.encode("a \t<mask>", kParse)), show({'a', kExtra}));
  // Elsewhere: kept.
  const Tokenizer plain = load_ok(bytes_bpe({{"<mask>", 3}}));
  EXPECT_EQ(show(plain.encode("a <mask>", kParse)), show({'a', ' ', kExtra}));
}

// ---- Real files ---------------------------------------------------------------------

const Tokenizer* real(const char* sub, const char* name) {
  return shared_tokenizer(testing::shared_dir() / sub / name);
}

// stories260K writes its absent separator and padding ids as 0xFFFFFFFF.
TEST(RealVocabs, Stories260KLoadsWithOneWarning) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = real("real", "stories260K.gguf");
  ASSERT_NE(t, nullptr);
  const Vocab& v = t->vocab();
  EXPECT_EQ(v.size(), 512u);
  EXPECT_EQ(v.bos(), 1);
  EXPECT_EQ(v.eos(), 2);
  EXPECT_EQ(v.unk(), 0);
  EXPECT_EQ(v.pad(), kNoToken);
  EXPECT_EQ(v.sep(), kNoToken);
  EXPECT_EQ(show(v.end_of_generation()), show({2}));
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_TRUE(contains(v.warnings()[0], "'tokenizer.ggml.seperator_token_id' = 4294967295"));
  EXPECT_TRUE(contains(v.warnings()[0], "'tokenizer.ggml.padding_token_id' = 4294967295"));
}

// TinyStories-656K has no byte tokens: what it cannot spell is <unk> (0).
TEST(RealVocabs, TinyStoriesSpellsTheUnspellableAsUnknown) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = real("real", "TinyStories-656K-Q8_0.gguf");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->vocab().warnings().empty());
  EXPECT_EQ(show(t->vocab().end_of_generation()), show({2}));
  const std::vector<TokenId> ids = t->encode("Lily (and Ben) \xE2\x9C\x93");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 3) << show(ids);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(t->decode(ids), "Lily and Ben ");  // <unk> prints nothing
}

// SmolLM2: "<reponame>" is a FIM repository token by its text, so it ends
// generation as in llama.cpp, with "<|endoftext|>" and "<|im_end|>".
TEST(RealVocabs, SmolLm2EndOfGeneration) {
  QUIP_REQUIRE_DEMO_MODEL(model);
  const Tokenizer* t = shared_tokenizer(model);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(show(t->vocab().end_of_generation()), show({0, 2, 4}));
  EXPECT_EQ(t->vocab().text(4), "<reponame>");
  EXPECT_EQ(t->vocab().fim_rep(), 4);
  EXPECT_EQ(t->vocab().eot(), 0);  // "<|endoftext|>"
  EXPECT_TRUE(t->vocab().warnings().empty());
}

}  // namespace
}  // namespace quip::tokenizer
