// Pre-tokenizers on their own: every pattern compiles, pieces always cover
// their input exactly, and known splits of the GPT-2, Llama 3, Qwen2, Bloom
// and Gemma 4 patterns.
#include "tokenizer/pretokenizer.h"

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
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer {
namespace {

using namespace quip::tokenizer::test_vocabs;  // NOLINT: the test vocabularies
namespace fs = std::filesystem;

// ---- Pre-tokenizers ------------------------------------------------------------------

struct NamedPre {
  const char* name;
  Pre pre;
};

constexpr NamedPre kAllPres[] = {
    {"Default", Pre::Default},
    {"Gpt2", Pre::Gpt2},
    {"Llama3", Pre::Llama3},
    {"Qwen2", Pre::Qwen2},
    {"DeepseekLlm", Pre::DeepseekLlm},
    {"DeepseekCoder", Pre::DeepseekCoder},
    {"Falcon", Pre::Falcon},
    {"Mpt", Pre::Mpt},
    {"Starcoder", Pre::Starcoder},
    {"Refact", Pre::Refact},
    {"Smollm", Pre::Smollm},
    {"Mistral", Pre::Mistral},
    {"Bloom", Pre::Bloom},
    {"Viking", Pre::Viking},
    {"Gpt4o", Pre::Gpt4o},
    {"ChatGlm4", Pre::ChatGlm4},
    {"Gemma4", Pre::Gemma4},
};

std::vector<std::string> split(const PreTokenizer& p, std::string_view text) {
  PreTokenizer::Matcher m;
  std::vector<std::string_view> views;
  p.split(text, m, views);
  return std::vector<std::string>(views.begin(), views.end());
}

PreTokenizer create_ok(Pre pre) {
  auto p = PreTokenizer::create(pre);
  CHECK(p.ok());
  return std::move(p).value();
}

class PreTokenizerEach : public ::testing::TestWithParam<NamedPre> {};

TEST_P(PreTokenizerEach, Compiles) {
  EXPECT_FALSE(pre_tokenizer_patterns(GetParam().pre).empty());
  auto p = PreTokenizer::create(GetParam().pre);
  EXPECT_TRUE(p.ok()) << p.error().message;
}

// Random byte strings, valid UTF-8 or not: the pieces are non-empty views that
// follow one another with no gap or overlap from the first byte to the last.
TEST_P(PreTokenizerEach, PiecesCoverRandomInputExactly) {
  static const std::vector<std::string> kParts = {
      "a",
      "Z",
      "x",
      "\xC3\xA9",
      "\xC3\x9F",
      "\xE4\xB8\x96",
      "\xF0\x9F\x99\x82",
      "\xCC\x81",
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\r",
      "0",
      "7",
      "123",
      "\xD9\xA3",
      "'s",
      "'LL",
      ".",
      ",",
      "!",
      "$",
      "_",
      "/",
      "\xE2\x96\x81",
      "\xE3\x80\x80",
      "\xC2\xA0",
      "\xFF",
      "\x80",
      "\xE6\x97",
      "\xC0\xAF",
      "\xED\xA0\x80",
      std::string("\0", 1),
      "\xE2\x80\x8D",
  };
  const PreTokenizer p = create_ok(GetParam().pre);
  PreTokenizer::Matcher m;  // reused across inputs, as a thread would
  std::mt19937 rng(20240601);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int i = 0; i < n; ++i) {
      if (rng() % 5 == 0) {
        text += static_cast<char>(rng() % 256);  // any byte at all
      } else {
        text += kParts[rng() % kParts.size()];
      }
    }
    std::vector<std::string_view> pieces = {"sentinel"};
    p.split(text, m, pieces);
    ASSERT_EQ(pieces.front(), "sentinel") << "split() must append";
    const char* at = text.data();
    for (size_t i = 1; i < pieces.size(); ++i) {
      ASSERT_FALSE(pieces[i].empty()) << "round " << round << " piece " << i;
      ASSERT_EQ(pieces[i].data(), at)
          << "round " << round << " piece " << i << " of '" << printable(text, 400) << "'";
      at += pieces[i].size();
    }
    ASSERT_EQ(at, text.data() + text.size())
        << "round " << round << ": '" << printable(text, 400) << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(PreTokenizer, PreTokenizerEach, ::testing::ValuesIn(kAllPres),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

using Pieces = std::vector<std::string>;

TEST(PreTokenizerSplits, Gpt2) {
  const PreTokenizer p = create_ok(Pre::Gpt2);
  EXPECT_EQ(split(p, "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split(p, "  x"), (Pieces{" ", " x"}));
  EXPECT_EQ(split(p, "I'm here"), (Pieces{"I", "'m", " here"}));
  EXPECT_EQ(split(p, "IT'S"), (Pieces{"IT", "'", "S"}));  // contractions are lower case only
  EXPECT_EQ(split(p, "x!!  y"), (Pieces{"x", "!!", " ", " y"}));
  EXPECT_EQ(split(p, "3.14 abc123"), (Pieces{"3", ".", "14", " abc", "123"}));
  EXPECT_EQ(split(p, "a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split(p, ""), Pieces{});
}

TEST(PreTokenizerSplits, Llama3) {
  const PreTokenizer p = create_ok(Pre::Llama3);
  EXPECT_EQ(split(p, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split(p, "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split(p, "  x"), (Pieces{" ", " x"}));
  EXPECT_EQ(split(p, "IT'S"), (Pieces{"IT", "'S"}));  // contractions in any case
  EXPECT_EQ(split(p, "Hello\n\nworld"), (Pieces{"Hello", "\n\n", "world"}));
  EXPECT_EQ(split(p, "(hi)"), (Pieces{"(hi", ")"}));
}

TEST(PreTokenizerSplits, Qwen2DigitsOneByOne) {
  const PreTokenizer p = create_ok(Pre::Qwen2);
  EXPECT_EQ(split(p, "1234"), (Pieces{"1", "2", "3", "4"}));
  EXPECT_EQ(split(p, "Hello world"), (Pieces{"Hello", " world"}));
}

// Gemma 4's split (llama.cpp's own, not a Hugging Face pattern): runs of
// newlines and runs of anything else; a space (U+2581 by then) or a "\r"
// is no newline.
TEST(PreTokenizerSplits, Gemma4RunsOfNewlines) {
  const PreTokenizer p = create_ok(Pre::Gemma4);
  EXPECT_EQ(split(p, "Hello world"), (Pieces{"Hello world"}));
  EXPECT_EQ(split(p, "a\n\nb\n"), (Pieces{"a", "\n\n", "b", "\n"}));
  EXPECT_EQ(split(p, "\n\n\n"), (Pieces{"\n\n\n"}));
  EXPECT_EQ(split(p, " x\r\n\t\n"), (Pieces{" x\r", "\n", "\t", "\n"}));
  EXPECT_EQ(split(p, "\xE4\xB8\xAD \xE6\x96\x87\n"), (Pieces{"\xE4\xB8\xAD \xE6\x96\x87", "\n"}));
  EXPECT_EQ(split(p, ""), Pieces{});
}

// Bloom's pattern keeps a leading space on words and leaves punctuation and
// the other separators it lists between them.
TEST(PreTokenizerSplits, Bloom) {
  const PreTokenizer p = create_ok(Pre::Bloom);
  EXPECT_EQ(split(p, " Hello, world!"), (Pieces{" Hello", ",", " world", "!"}));
  EXPECT_EQ(split(p, "a (b)"), (Pieces{"a", " (", "b", ")"}));  // unmatched runs stay whole
}

}  // namespace
}  // namespace quip::tokenizer
