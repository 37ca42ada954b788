// The tokenizer on the shared vocabularies and models: round trips,
// special tokens, the streaming detokenizer and thread safety. Expectations
// are properties that hold whatever the ids are (decode(encode(x)) == x,
// whole UTF-8 characters) and facts from ../shared/README.md.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iterator>
#include <latch>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/text.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "support/shared.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/test_vocabs.h"

namespace quip::tokenizer {
namespace {

using namespace quip::tokenizer::test_vocabs;  // NOLINT: the test vocabularies
namespace fs = std::filesystem;

// ---- Shared vocabularies ----------------------------------------------------

const char* const kSharedVocabs[] = {
    "ggml-vocab-deepseek-coder.gguf",
    "ggml-vocab-deepseek-llm.gguf",
    "ggml-vocab-falcon.gguf",
    "ggml-vocab-gpt-2.gguf",
    "ggml-vocab-llama-bpe.gguf",
    "ggml-vocab-llama-spm.gguf",
    "ggml-vocab-mpt.gguf",
    "ggml-vocab-phi-3.gguf",
    "ggml-vocab-refact.gguf",
    "ggml-vocab-starcoder.gguf",
};

std::string vocab_test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string n = std::string(info.param).substr(11);  // after "ggml-vocab-"
  n = n.substr(0, n.size() - 5);                       // before ".gguf"
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

const std::string& war_and_peace() {
  static const std::string text =
      testing::read_file(testing::shared_dir() / "text" / "war-and-peace.txt");
  return text;
}

// Where two long strings first differ, with a little context (not 3 MB of it).
std::string first_difference(std::string_view got, std::string_view want) {
  const size_t n = std::min(got.size(), want.size());
  size_t i = 0;
  while (i < n && got[i] == want[i]) ++i;
  const size_t from = i >= 20 ? i - 20 : 0;
  return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size()) +
         ", first difference at byte " + std::to_string(i) + ": got '" +
         printable(got.substr(from, 60), 200) + "', want '" +
         printable(want.substr(from, 60), 200) + "'";
}

#define EXPECT_SAME_TEXT(got, want)                              \
  do {                                                           \
    const std::string got_ = (got);                              \
    const std::string& want_ = (want);                           \
    EXPECT_TRUE(got_ == want_) << first_difference(got_, want_); \
  } while (0)

TEST(TokenizerSharedVocabs, ListIsComplete) {
  QUIP_REQUIRE_SHARED();
  std::vector<std::string> found;
  for (const fs::path& p : testing::shared_files("vocab", ".gguf")) {
    found.push_back(p.filename().string());
  }
  EXPECT_EQ(found, std::vector<std::string>(std::begin(kSharedVocabs), std::end(kSharedVocabs)))
      << "a vocabulary was added to ../shared/vocab: add it to kSharedVocabs";
}

class TokenizerRoundTrip : public ::testing::TestWithParam<const char*> {
 protected:
  const Tokenizer* tokenizer() {
    return shared_tokenizer(testing::shared_dir() / "vocab" / GetParam());
  }
  // SentencePiece writes U+2581 for a space, so "▁" in text decodes as " ".
  bool spm() { return tokenizer()->vocab().model() == Model::Spm; }
  // Whether every byte of `text` has a plain token of its own (byte-level
  // vocabularies trained on valid UTF-8 may lack C0, C1 and F5 to FF, or
  // have them only as user-defined tokens, which decode as their text).
  bool every_byte_has_a_token(std::string_view text) {
    const Vocab& v = tokenizer()->vocab();
    for (char c : text) {
      const TokenId id = v.byte_token(static_cast<uint8_t>(c));
      if (id == kNoToken || (v.type(id) != TokenType::Normal && v.type(id) != TokenType::Byte)) {
        return false;
      }
    }
    return true;
  }
  void expect_round_trip(const std::string& text, const std::string& what) {
    const Tokenizer* t = tokenizer();
    if (spm() && text.find(kSpmSpace) != std::string::npos) return;
    if (!every_byte_has_a_token(text)) {
      ++skipped_;
      return;
    }
    const std::vector<TokenId> ids = t->encode(text, kPlain);
    const std::string back = t->decode(ids);
    EXPECT_TRUE(back == text) << what << ": '" << printable(text, 200) << "'\n  "
                              << first_difference(back, text) << "\n  ids " << show(ids);
  }
  size_t skipped_ = 0;
};

TEST_P(TokenizerRoundTrip, WarAndPeace) {
  QUIP_REQUIRE_SHARED();
  ASSERT_NE(tokenizer(), nullptr);
  const std::string& text = war_and_peace();
  ASSERT_GT(text.size(), 3'000'000u);
  ASSERT_EQ(text.find(kSpmSpace), std::string::npos);
  const std::vector<TokenId> ids = tokenizer()->encode(text, kPlain);
  EXPECT_GT(ids.size(), text.size() / 8) << "suspiciously few tokens";
  EXPECT_LT(ids.size(), text.size() / 2) << "suspiciously many tokens";
  EXPECT_SAME_TEXT(tokenizer()->decode(ids), text);
}

TEST_P(TokenizerRoundTrip, ConformanceInputs) {
  QUIP_REQUIRE_SHARED();
  ASSERT_NE(tokenizer(), nullptr);
  const std::string inp =
      testing::read_file(testing::shared_dir() / "vocab" / (std::string(GetParam()) + ".inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t n = 0;
  for (size_t begin = 0;;) {
    const size_t end = inp.find(sep, begin);
    expect_round_trip(inp.substr(begin, end == std::string::npos ? end : end - begin),
                      "case " + std::to_string(n++));
    if (end == std::string::npos) break;
    begin = end + sep.size();
  }
  EXPECT_GT(n, 10u);
}

const std::vector<std::string>& tricky_strings() {
  static const std::vector<std::string> k = {
      "",
      " ",
      "   ",
      std::string(40, ' '),
      "\t",
      "\n",
      "\r\n",
      " \t \n\n  x  \n",
      "\t\tindented\n\t\t\tmore\r\n",
      "Hello, world!",
      " Hello",
      "don't I'LL we've THEY'RE",
      "12345678901234567890 3.14159 1,000,000",
      "x = a_b->c(1, 2); // done\n\treturn {};\n",
      std::string(3000, 'a'),
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D"
      "\xF0\x9F\x91\xA6",                                       // family: four people joined by ZWJ
      "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x99\x82",      // thumbs up + skin tone, smile
      "e\xCC\x81 a\xCC\x8A\xCC\xB1 Z\xCD\xA7\xCC\x91\xCC\x93",  // combining marks
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82"
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",  // CJK, Hangul
      "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 "
      "\xE2\x80\x8F!",  // Hebrew, Arabic, a right-to-left mark
      "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xE2\x88\x91x\xC2\xB2 \xD0\x9F\xD1\x80\xD0\xB8",
      "\xE3\x80\x80\xC2\xA0 \xE2\x80\xAF",  // ideographic, no-break, narrow no-break spaces
      std::string("a\0b", 3),
      std::string("\0", 1),
      "\xFF\xFE",
      "\xE6\x97",
      "abc\xE6\x97",
      "\xE6\x97 tail",
      "\xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80",  // overlong, surrogate, past U+10FFFF
      "\x80\x80\x80",
      "\xE2\x96\x81",
      "\xE2\x96\x81\xE2\x96\x81x \xE2\x96\x81y",
      "<|endoftext|> <s></s> [INST]",
  };
  return k;
}

TEST_P(TokenizerRoundTrip, TrickyStrings) {
  QUIP_REQUIRE_SHARED();
  ASSERT_NE(tokenizer(), nullptr);
  for (size_t i = 0; i < tricky_strings().size(); ++i) {
    expect_round_trip(tricky_strings()[i], "tricky string " + std::to_string(i));
  }
  // Only the strings with bytes that are never UTF-8 may be skipped.
  EXPECT_LE(skipped_, 2u);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, TokenizerRoundTrip, ::testing::ValuesIn(kSharedVocabs),
                         vocab_test_name);

// ---- Special tokens of the shared models --------------------------------------

const Tokenizer* model_tokenizer(const char* name) {
  return shared_tokenizer(testing::shared_dir() / "models" / name);
}

TEST(TokenizerSpecial, Qwen2ImStartIsOneTokenOnlyWhenParsed) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = model_tokenizer("tiny-qwen2-e64-f16.gguf");
  ASSERT_NE(t, nullptr);
  const TokenId im_start = t->vocab().find("<|im_start|>");
  ASSERT_NE(im_start, kNoToken);
  const std::string text = "<|im_start|>user";
  const std::vector<TokenId> user = t->encode("user", kPlain);
  ASSERT_FALSE(user.empty());

  const std::vector<TokenId> parsed =
      t->encode(text, {.add_special = false, .parse_special = true});
  std::vector<TokenId> expected = {im_start};
  expected.insert(expected.end(), user.begin(), user.end());
  EXPECT_EQ(show(parsed), show(expected));
  EXPECT_EQ(t->decode(parsed, {.special = true}), text);
  EXPECT_EQ(t->decode(parsed), "user");  // control tokens write nothing by default

  const std::vector<TokenId> plain = t->encode(text, kPlain);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_start), 0) << show(plain);
  EXPECT_GT(plain.size(), expected.size());
  EXPECT_EQ(t->decode(plain), text);
  EXPECT_EQ(t->decode(plain, {.special = true}), text);
}

TEST(TokenizerSpecial, Qwen2EndOfGeneration) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = model_tokenizer("tiny-qwen2-e64-f16.gguf");
  ASSERT_NE(t, nullptr);
  const std::vector<TokenId>& eog = t->vocab().end_of_generation();
  size_t found = 0;
  for (const char* text : {"<|im_end|>", "<|endoftext|>"}) {
    const TokenId id = t->vocab().find(text);
    if (id == kNoToken) continue;
    ++found;
    EXPECT_NE(std::find(eog.begin(), eog.end(), id), eog.end()) << text << " " << id;
    EXPECT_TRUE(t->vocab().is_eog(id)) << text;
  }
  EXPECT_EQ(found, 2u) << "README: GPT-2 vocabulary plus <|im_start|> / <|im_end|>";
  EXPECT_FALSE(t->vocab().is_eog(t->vocab().find("<|im_start|>")));
  EXPECT_FALSE(t->vocab().is_eog(t->encode("a", kPlain).at(0)));
}

TEST(TokenizerSpecial, Llama3AddsBosAndEndsTurnsWithEotId) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = model_tokenizer("tiny-llama3-e64-q8_0.gguf");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab().size(), 128256u);
  const std::vector<TokenId> ids = t->encode("hi");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 128000);  // <|begin_of_text|>
  std::vector<TokenId> rest = t->encode("hi", kPlain);
  rest.insert(rest.begin(), 128000);
  EXPECT_EQ(show(ids), show(rest));
  EXPECT_EQ(t->decode(ids), "hi");
  const TokenId eot = t->vocab().find("<|eot_id|>");
  ASSERT_NE(eot, kNoToken);
  EXPECT_TRUE(t->vocab().is_eog(eot));
  EXPECT_FALSE(t->vocab().is_eog(128000));
}

TEST(TokenizerSpecial, SpmAddsBosOneAndNoEos) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = model_tokenizer("tiny-llama-spm-e64-f16.gguf");
  ASSERT_NE(t, nullptr);
  for (const char* text : {"hi", "Hello world", ""}) {
    const std::vector<TokenId> ids = t->encode(text);
    std::vector<TokenId> expected = t->encode(text, kPlain);
    expected.insert(expected.begin(), 1);
    EXPECT_EQ(show(ids), show(expected)) << "'" << text << "'";
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 0) << show(ids);
    EXPECT_EQ(t->decode(ids), text);
  }
}

// ---- StreamDecoder --------------------------------------------------------------

// Whether `s` is valid UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF).
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < n) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(StreamDecoderValidator, AgreesOnKnownStrings) {
  EXPECT_TRUE(valid_utf8("a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x99\x82"));
  for (std::string_view bad :
       {"\xFF", "\xE6\x97", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xC3"}) {
    EXPECT_FALSE(valid_utf8(bad)) << printable(bad);
  }
}

class StreamDecoderShared : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamDecoderShared, ChunksAreWholeCharactersAndAddUpToDecode) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t = shared_tokenizer(testing::shared_dir() / "vocab" / GetParam());
  ASSERT_NE(t, nullptr);
  const std::string text =
      "Gr\xC3\xBC\xC3\x9F"
      "e, na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC"
      "\xE8\xAA\x9E \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9"
      " \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xE2\x88\x91x\xC2\xB2 "
      "\xF0\x9F\x99\x82\xF0\x9F\xA6\x8A\xF0\x90\x8D\x88!";
  const std::vector<TokenId> ids = t->encode(text, kPlain);
  StreamDecoder stream(*t);
  std::string all;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string chunk = stream.push(ids[i]);
    EXPECT_TRUE(valid_utf8(chunk))
        << "after token " << i << " (" << ids[i] << "): '" << printable(chunk) << "'";
    all += chunk;
  }
  const std::string rest = stream.flush();
  EXPECT_EQ(rest, "");  // the text ends with a whole character
  all += rest;
  EXPECT_SAME_TEXT(all, t->decode(ids, {.strip_leading_space = false}));
  const bool space = t->vocab().model() == Model::Spm && t->vocab().add_space_prefix();
  EXPECT_SAME_TEXT(all, (space ? " " : "") + text);
}

INSTANTIATE_TEST_SUITE_P(StreamDecoder, StreamDecoderShared, ::testing::ValuesIn(kSharedVocabs),
                         vocab_test_name);

TEST(StreamDecoderBytes, HoldsAFourByteCharacterUntilItCompletes) {
  const Tokenizer t = load_ok(tiny_spm(-1.0f, -2.0f));
  const std::vector<TokenId> ids = t.encode("\xF0\x9F\x99\x82", kPlain);  // no token: bytes
  ASSERT_EQ(show(ids),
            show({kSp, kSpmByte0 + 0xF0, kSpmByte0 + 0x9F, kSpmByte0 + 0x99, kSpmByte0 + 0x82}));
  StreamDecoder stream(t);
  EXPECT_EQ(stream.push(ids[0]), " ");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.push(ids[2]), "");
  EXPECT_EQ(stream.push(ids[3]), "");
  EXPECT_EQ(stream.push(ids[4]), "\xF0\x9F\x99\x82");
  EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoderBytes, SharedSpmByteTokensSplittingAnEmoji) {
  QUIP_REQUIRE_SHARED();
  const Tokenizer* t =
      shared_tokenizer(testing::shared_dir() / "vocab" / "ggml-vocab-llama-spm.gguf");
  ASSERT_NE(t, nullptr);
  StreamDecoder stream(*t);
  std::vector<std::string> chunks;
  for (const char* byte : {"<0xF0>", "<0x9F>", "<0x99>", "<0x82>"}) {
    const TokenId id = t->vocab().find(byte);
    ASSERT_NE(id, kNoToken) << byte;
    EXPECT_EQ(t->vocab().type(id), TokenType::Byte) << byte;
    chunks.push_back(stream.push(id));
  }
  EXPECT_EQ(chunks, (std::vector<std::string>{"", "", "", "\xF0\x9F\x99\x82"}));
}

TEST(StreamDecoderBytes, IncompleteAndInvalidBytes) {
  const Tokenizer t = load_ok(tiny_spm(-1.0f, -2.0f));
  StreamDecoder stream(t);
  // A byte that can start no character goes out at once.
  EXPECT_EQ(stream.push(kSpmByte0 + 0xFF), "\xFF");
  // An incomplete character at the end comes out of flush(), once.
  EXPECT_EQ(stream.push(kSpmByte0 + 0xE6), "");
  EXPECT_EQ(stream.push(kSpmByte0 + 0x97), "");
  EXPECT_EQ(stream.flush(), "\xE6\x97");
  EXPECT_EQ(stream.flush(), "");
  // An incomplete character followed by another character: both go out.
  EXPECT_EQ(stream.push(kSpmByte0 + 0xE6), "");
  EXPECT_EQ(stream.push(kA),
            "\xE6"
            "a");
  // Invalid ids produce nothing.
  EXPECT_EQ(stream.push(-1), "");
  EXPECT_EQ(stream.push(100000), "");
}

TEST(StreamDecoderBytes, ControlTokensOnlyWithSpecial) {
  const Tokenizer t = load_ok(tiny_spm(-1.0f, -2.0f));
  StreamDecoder plain(t);
  EXPECT_EQ(plain.push(1), "");
  EXPECT_EQ(plain.push(kA), "a");
  StreamDecoder special(t, /*special=*/true);
  EXPECT_EQ(special.push(1), "<s>");
  EXPECT_EQ(special.push(kAb), "ab");
}

// ---- Thread safety -----------------------------------------------------------------

TEST(TokenizerThreads, FourThreadsGiveTheIdsOfOne) {
  QUIP_REQUIRE_SHARED();
  constexpr size_t kThreads = 4, kSlice = 120'000, kChunk = 3'000;
  const std::string& text = war_and_peace();
  ASSERT_GE(text.size(), 8 * kSlice);
  for (const char* name : {"ggml-vocab-llama-bpe.gguf", "ggml-vocab-llama-spm.gguf"}) {
    SCOPED_TRACE(name);
    const Tokenizer* t = shared_tokenizer(testing::shared_dir() / "vocab" / name);
    ASSERT_NE(t, nullptr);
    // Thread i encodes slice i of the text in chunks (many calls overlap).
    const auto encode_slice = [&](size_t i) {
      std::vector<TokenId> ids;
      const std::string_view slice = std::string_view(text).substr(i * 2 * kSlice, kSlice);
      for (size_t at = 0; at < slice.size(); at += kChunk) {
        const std::vector<TokenId> part = t->encode(slice.substr(at, kChunk), kPlain);
        ids.insert(ids.end(), part.begin(), part.end());
      }
      return ids;
    };
    std::vector<std::vector<TokenId>> serial(kThreads), parallel(kThreads);
    for (size_t i = 0; i < kThreads; ++i) serial[i] = encode_slice(i);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        parallel[i] = encode_slice(i);
      });
    }
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < kThreads; ++i) {
      EXPECT_FALSE(serial[i].empty());
      EXPECT_TRUE(parallel[i] == serial[i]) << "slice " << i;
    }
  }
}

}  // namespace
}  // namespace quip::tokenizer
