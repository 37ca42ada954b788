// Gemma 4's tokenizer (tokenizer.ggml.model = "gemma4") against llama.cpp's:
// tests/data/gemma4-vocab/llama-tokenize.json holds what llama-tokenize
// (build 9749) printed for the small vocabulary that make_vocab.py beside it
// writes, and which tokens llama.cpp takes as ending generation there
// (tests/data/gemma4-vocab/README.md). Then llama.cpp's rules that the
// recorded vocabulary does not show, on hand-made vocabularies, and random
// vocabularies against merging done the slow way, as llama.cpp defines it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"
#include "support/shared.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer {
namespace {

using namespace quip::tokenizer::test_vocabs;  // NOLINT: the test vocabularies
namespace fs = std::filesystem;

const fs::path& recorded_dir() {
  static const fs::path dir = fs::path(QUIP_TEST_DATA_DIR) / "gemma4-vocab";
  return dir;
}

const nlohmann::json& recorded() {
  static const nlohmann::json j =
      nlohmann::json::parse(testing::read_file(recorded_dir() / "llama-tokenize.json"));
  return j;
}

const Tokenizer* recorded_tokenizer() {
  return shared_tokenizer(recorded_dir() / "vocab.gguf");
}

// `text` as decoding gives it back: a U+2581 written in the text comes back
// as the space it stands for.
std::string unescaped(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpmSpace.size()) == kSpmSpace) {
      out += ' ';
      i += kSpmSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string byte_token_text(uint8_t b) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "<0x%02X>", b);
  return hex;
}

// ---- The recorded vocabulary -------------------------------------------------

TEST(Gemma4LlamaTokenize, SameIdsAsLlamaCpp) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  size_t checked = 0;
  for (const auto& c : recorded().at("cases")) {
    const std::string text = c.at("text");
    const std::string mode = c.at("mode");
    // llama-tokenize adds BOS unless told --no-bos: to Gemma 4 text always,
    // although the file says add_bos_token = false.
    const EncodeOptions options{.add_special = mode != "plain", .parse_special = mode == "special"};
    EXPECT_EQ(show(t->encode(text, options)), show(c.at("ids").get<std::vector<TokenId>>()))
        << mode << " '" << printable(text, 200) << "'";
    ++checked;
  }
  EXPECT_GE(checked, 90u);
}

// Decoding llama.cpp's ids gives the text back (with BOS written out when
// control tokens are).
TEST(Gemma4LlamaTokenize, DecodingGivesTheTextBack) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  for (const auto& c : recorded().at("cases")) {
    const std::string text = c.at("text");
    const std::string mode = c.at("mode");
    const std::vector<TokenId> ids = c.at("ids").get<std::vector<TokenId>>();
    const std::string bos = mode == "plain" ? "" : "<bos>";
    EXPECT_EQ(t->decode(ids, {.special = true}), bos + unescaped(text))
        << mode << " '" << printable(text, 200) << "'";
    if (mode != "special") {
      EXPECT_EQ(t->decode(ids), unescaped(text)) << mode << " '" << printable(text, 200) << "'";
    }
  }
}

TEST(Gemma4LlamaTokenize, EndOfGenerationAsLlamaCpp) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  const Vocab& v = t->vocab();
  EXPECT_EQ(show(v.end_of_generation()), show(recorded().at("eog").get<std::vector<TokenId>>()));
  for (const char* end : {"<eos>", "<turn|>", "<end_of_turn>", "<|tool_response>"}) {
    EXPECT_TRUE(v.is_eog(v.find(end))) << end;
  }
  for (const char* other : {"<bos>", "<|turn>", "<start_of_turn>", "<|channel>", "</s>"}) {
    EXPECT_FALSE(v.is_eog(v.find(other))) << other;
  }
  // With "<|tool_response>" in the vocabulary, "</s>" is plain text; the
  // converter's user-defined "<|tool_response>" ends generation, so it is a
  // control token; "<|channel>" stays user-defined (always written out).
  EXPECT_EQ(v.type(v.find("</s>")), TokenType::Normal);
  EXPECT_EQ(v.type(v.find("<|tool_response>")), TokenType::Control);
  EXPECT_EQ(v.type(v.find("<|channel>")), TokenType::UserDefined);
  EXPECT_EQ(v.eot(), v.find("<end_of_turn>"));
}

TEST(Gemma4LlamaTokenize, VocabularyAsLlamaCppReadsIt) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  const Vocab& v = t->vocab();
  EXPECT_EQ(v.model(), Model::Bpe);
  EXPECT_EQ(v.pre(), Pre::Gemma4);
  EXPECT_EQ(v.pre_name(), "gemma4");  // the file has no tokenizer.ggml.pre
  EXPECT_TRUE(v.escapes_spaces());
  EXPECT_FALSE(v.byte_level());
  EXPECT_FALSE(v.add_space_prefix());
  EXPECT_EQ(v.bos(), v.find("<bos>"));
  EXPECT_EQ(v.eos(), v.find("<eos>"));
  // The file says add_bos_token = false: taken as true, with a warning.
  EXPECT_TRUE(v.add_bos());
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("'tokenizer.ggml.add_bos_token' is false"), std::string::npos)
      << v.warnings()[0];
  for (int b = 0; b < 256; ++b) {
    ASSERT_EQ(v.byte_token(static_cast<uint8_t>(b)),
              v.find(byte_token_text(static_cast<uint8_t>(b))))
        << b;
    ASSERT_NE(v.byte_token(static_cast<uint8_t>(b)), kNoToken) << b;
  }
}

// llama.cpp turns each byte that is not UTF-8 into U+FFFD before merging;
// quip keeps the byte and writes it as its byte token, so that every text
// decodes to itself (as for the other vocabularies).
TEST(Gemma4Tokenizer, BytesThatAreNotUtf8KeepTheirByteTokens) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  const Vocab& v = t->vocab();
  const std::string text =
      "a\xFF"
      "b \xE6\x97";
  const std::vector<TokenId> expected = {v.find("a"),       v.find("<0xFF>"), v.find("b"),
                                         v.find(kSpmSpace), v.find("<0xE6>"), v.find("<0x97>")};
  EXPECT_EQ(show(t->encode(text, kPlain)), show(expected));
  EXPECT_EQ(t->decode(t->encode(text)), text);
}

// Any bytes but U+2581 (which decodes as the space it stands for) come back
// from decoding as they were, as the fuzz target checks.
TEST(Gemma4Tokenizer, AnyBytesDecodeToThemselves) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  static const char* const kParts[] = {
      "a",        "Hello", " ",   "  ",       "\n",       "\n\n\n",       "\r",
      "\t",       "qz",    "o w", "\xC3\xA9", "\xC3\xB6", "\xE4\xB8\xAD", "\xFF",
      "\xE6\x97", "\x80",  "<",   "</s>",     "<eos>",    "<|channel>",   "<|tool_response>"};
  std::mt19937 rng(9749);
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const size_t n = rng() % 20;
    for (size_t i = 0; i < n; ++i) {
      text += rng() % 6 == 0 ? std::string(1, static_cast<char>(rng() % 256))
                             : std::string(kParts[rng() % std::size(kParts)]);
    }
    if (text.find(kSpmSpace) != std::string::npos) continue;
    const std::vector<TokenId> ids = t->encode(text, kPlain);
    ASSERT_EQ(t->decode(ids), text) << "'" << printable(text, 200) << "': " << show(ids);
    ASSERT_EQ(t->decode(t->encode(text, {.add_special = false, .parse_special = true}),
                        {.special = true}),
              text)
        << "'" << printable(text, 200) << "'";
  }
}

TEST(Gemma4Tokenizer, StreamDecoderJoinsByteTokensIntoCharacters) {
  const Tokenizer* t = recorded_tokenizer();
  ASSERT_NE(t, nullptr);
  const std::string text = "\xF0\x9F\x98\x80 ok";  // the emoji is no token: four byte tokens
  const std::vector<TokenId> ids = t->encode(text, kPlain);
  ASSERT_GE(ids.size(), 4u);
  StreamDecoder stream(*t);
  std::vector<std::string> pieces;
  for (TokenId id : ids) pieces.push_back(stream.push(id));
  EXPECT_EQ(pieces[0] + pieces[1] + pieces[2], "");
  EXPECT_EQ(pieces[3], "\xF0\x9F\x98\x80");
  std::string all;
  for (const std::string& p : pieces) all += p;
  EXPECT_EQ(all + stream.flush(), text);
}

// ---- Hand-made vocabularies --------------------------------------------------

constexpr TokenId kGBos = 2, kGByteA = 3, kGSp = 4, kGA = 5, kGSpA = 6;  // small_gemma4()

// llama.cpp gives a "gemma4" vocabulary its own pre-tokenizer whatever
// tokenizer.ggml.pre says, and the gemma4 pre-tokenizer to a "gpt2" one
// that names it.
TEST(Gemma4Tokenizer, ModelGemma4ImpliesItsPreTokenizer) {
  const Tokenizer t = load_ok(small_gemma4().set("tokenizer.ggml.pre", std::string("gpt-2")));
  EXPECT_EQ(t.vocab().pre(), Pre::Gemma4);
  EXPECT_EQ(t.vocab().pre_name(), "gemma4");
  EXPECT_EQ(show(t.encode(" a", kPlain)), show({kGSpA}));
  const Tokenizer named = load_ok(small_gemma4()
                                      .set("tokenizer.ggml.model", std::string("gpt2"))
                                      .set("tokenizer.ggml.pre", std::string("gemma4")));
  EXPECT_EQ(named.vocab().pre(), Pre::Gemma4);
  EXPECT_EQ(show(named.encode(" a", kPlain)), show({kGSpA}));
  EXPECT_TRUE(named.vocab().add_bos());
}

TEST(Gemma4Tokenizer, AlwaysAddsBosAndWarnsOnlyWhenTheFileSaysNot) {
  const Tokenizer unset = load_ok(small_gemma4());
  EXPECT_TRUE(unset.vocab().add_bos());
  EXPECT_TRUE(unset.vocab().warnings().empty());
  EXPECT_EQ(show(unset.encode("a")), show({kGBos, kGA}));
  const Tokenizer yes = load_ok(small_gemma4().set("tokenizer.ggml.add_bos_token", true));
  EXPECT_TRUE(yes.vocab().warnings().empty());
  EXPECT_EQ(show(yes.encode("a")), show({kGBos, kGA}));
  const Tokenizer no = load_ok(small_gemma4().set("tokenizer.ggml.add_bos_token", false));
  EXPECT_TRUE(no.vocab().add_bos());
  ASSERT_EQ(no.vocab().warnings().size(), 1u);
  EXPECT_EQ(no.vocab().warnings()[0].rfind(std::string(kFileName) + ": ", 0), 0u);
  EXPECT_EQ(show(no.encode("a")), show({kGBos, kGA}));
  EXPECT_EQ(show(no.encode("a", {.add_special = false})), show({kGA}));
}

// No space in front (add_space_prefix is false) and "<0xNN>" byte tokens
// only: a byte with no token is left out, as llama.cpp does.
TEST(Gemma4Tokenizer, SpacesAndByteFallback) {
  const Tokenizer t = load_ok(small_gemma4());
  EXPECT_EQ(show(t.encode("a a", kPlain)), show({kGA, kGSpA}));
  EXPECT_EQ(show(t.encode("  a", kPlain)), show({kGSp, kGSpA}));
  EXPECT_EQ(show(t.encode("A", kPlain)), show({kGByteA}));
  EXPECT_EQ(show(t.encode("\xC3\xA9"
                          "a",
                          kPlain)),
            show({kGA}));  // no <0xC3>, <0xA9>
  EXPECT_EQ(t.decode(std::vector<TokenId>{kGSpA, kGSp, kGByteA}), " a A");
}

// ---- Random vocabularies against naive merging -----------------------------------
//
// The definition, applied the slow way (llama.cpp's llm_tokenizer_bpe_session
// with the gemma4 pre-tokenizer): spaces become "▁"; the text is cut into runs
// of newlines and runs of other characters; a run of newlines that is a token
// is that token; otherwise, again and again, the adjacent pair of texts with
// the lowest merge rank (leftmost on ties) becomes one text, whether or not
// that is a token; each text left is its token, or its bytes' "<0xNN>" tokens.

struct RandomGemma4 {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::map<std::pair<std::string, std::string>, size_t> rank;

  // With `dangling`, some merges make a text that is no token.
  RandomGemma4(std::mt19937& rng, bool dangling) {
    tokens = {"<pad>", "<eos>", "<bos>"};
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_token_text(static_cast<uint8_t>(b)));
    std::vector<std::string> pieces = {std::string(kSpmSpace), "a", "b", "\xC3\xA9", "\n"};
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
    for (int tries = 0; merges.size() < 30 && tries < 1000; ++tries) {
      const std::string& l = pieces[rng() % pieces.size()];
      const std::string& r = pieces[rng() % pieces.size()];
      if (l.size() + r.size() > 12 || rank.count({l, r})) continue;
      rank[{l, r}] = merges.size();
      merges.push_back(l + " " + r);
      const std::string joined = l + r;  // may repeat a token: "a ba", "ab a"
      if (std::find(tokens.begin(), tokens.end(), joined) != tokens.end()) continue;
      if (dangling && rng() % 8 == 0) continue;  // a merge into no token (see make_vocab.py)
      tokens.push_back(joined);
      pieces.push_back(joined);
    }
  }

  TokenId id(const std::string& text) const {
    const auto it = std::find(tokens.begin(), tokens.end(), text);
    return it == tokens.end() ? kNoToken : static_cast<TokenId>(it - tokens.begin());
  }

  std::vector<TokenId> naive(const std::string& text) const {
    std::string escaped;
    for (char c : text) escaped += c == ' ' ? std::string(kSpmSpace) : std::string(1, c);
    std::vector<std::string> runs;
    for (size_t i = 0; i < escaped.size();) {
      size_t j = i;
      while (j < escaped.size() && (escaped[j] == '\n') == (escaped[i] == '\n')) ++j;
      runs.push_back(escaped.substr(i, j - i));
      i = j;
    }
    std::vector<TokenId> ids;
    for (const std::string& run : runs) {
      if (run[0] == '\n' && id(run) != kNoToken) {
        ids.push_back(id(run));
        continue;
      }
      std::vector<std::string> s = lead_byte_characters(run);
      for (;;) {
        size_t best = s.size(), best_rank = SIZE_MAX;
        for (size_t i = 0; i + 1 < s.size(); ++i) {
          auto it = rank.find({s[i], s[i + 1]});
          if (it != rank.end() && it->second < best_rank) best = i, best_rank = it->second;
        }
        if (best == s.size()) break;
        s[best] += s[best + 1];
        s.erase(s.begin() + static_cast<std::ptrdiff_t>(best) + 1);
      }
      for (const std::string& piece : s) {
        if (id(piece) != kNoToken) {
          ids.push_back(id(piece));
        } else {
          for (char c : piece) ids.push_back(id(byte_token_text(static_cast<uint8_t>(c))));
        }
      }
    }
    return ids;
  }
};

TEST(TokenizerRandomGemma4, MatchesNaiveMerging) {
  static const char* const kChars[] = {"a", "b", " ", "a", "b", " ", "\xC3\xA9", "\n", "\xC3\xBC"};
  std::mt19937 rng(4);
  for (int v = 0; v < 40; ++v) {
    // Odd vocabularies have merges into no token: such a text is written as
    // byte tokens, which decode as they are, so a "▁" in it is no space.
    const bool dangling = v % 2 == 1;
    const RandomGemma4 g(rng, dangling);
    Keys k;
    k.set("tokenizer.ggml.model", std::string("gemma4"));
    k.set("tokenizer.ggml.tokens", strings(g.tokens));
    std::vector<int32_t> types(g.tokens.size(), 1);
    types[0] = types[1] = types[2] = 3;
    for (int b = 0; b < 256; ++b) types[3 + static_cast<size_t>(b)] = 6;
    k.set("tokenizer.ggml.token_type", ints(types));
    k.set("tokenizer.ggml.merges", strings(g.merges));
    k.set("tokenizer.ggml.bos_token_id", uint32_t{2});
    const Tokenizer t = load_ok(k);
    for (int w = 0; w < 50; ++w) {
      std::string text;
      const size_t n = 1 + rng() % 24;
      for (size_t i = 0; i < n; ++i) text += kChars[rng() % std::size(kChars)];
      ASSERT_EQ(show(t.encode(text, kPlain)), show(g.naive(text)))
          << "vocabulary " << v << ", text '" << printable(text) << "'";
      if (!dangling) {
        ASSERT_EQ(t.decode(t.encode(text)), text);
      }
    }
  }
}

}  // namespace
}  // namespace quip::tokenizer
