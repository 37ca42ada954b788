// The GBNF compiler and its automaton: a corpus of grammars (after the
// kinds in llama.cpp's grammars/: JSON, arithmetic, chess, lists, English,
// Japanese, a small C) with texts each must match, continue or refuse; a
// catalogue of broken grammars; and properties checked against independent
// oracles (nlohmann's JSON parser, the UTF-8 encoding, counting).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "support/shared.h"

namespace quip::grammar {
namespace {

namespace fs = std::filesystem;

const fs::path kGrammars = fs::path(QUIP_TEST_DATA_DIR) / "grammars";

std::shared_ptr<const Grammar> compile(std::string_view text) {
  auto g = compile_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? *g : nullptr;
}

// A case's text: a string, or {"hex": "..."} for bytes that are not UTF-8.
std::string case_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string hex = j.at("hex").get<std::string>();
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

TEST(Gbnf, CorpusGrammarsMatchContinueAndRefuseTheirCases) {
  const nlohmann::json cases =
      nlohmann::json::parse(quip::testing::read_file(kGrammars / "cases.json"));
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kGrammars)) {
    if (entry.path().extension() != ".gbnf") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ASSERT_TRUE(cases.contains(name)) << "no cases for " << name;
    const auto g = compile(quip::testing::read_file(entry.path()));
    ASSERT_TRUE(g);
    const nlohmann::json& c = cases.at(name);
    ASSERT_FALSE(c.at("match").empty());
    for (const auto& t : c.at("match")) {
      EXPECT_TRUE(matches(*g, case_text(t))) << t.dump();
    }
    for (const auto& t : c.at("prefix")) {
      EXPECT_TRUE(is_prefix(*g, case_text(t))) << t.dump();
      EXPECT_FALSE(matches(*g, case_text(t))) << t.dump();
    }
    for (const auto& t : c.at("reject")) EXPECT_FALSE(is_prefix(*g, case_text(t))) << t.dump();
  }
  EXPECT_EQ(files, cases.size());
}

// The JSON grammar against an independent parser: texts made by cutting
// and splicing valid JSON are in the grammar's language exactly when
// nlohmann::json accepts them, and a prefix of a valid text is a prefix.
TEST(Gbnf, JsonGrammarAgreesWithAJsonParser) {
  const auto g = compile(quip::testing::read_file(kGrammars / "json.gbnf"));
  ASSERT_TRUE(g);
  const std::vector<std::string> seeds = {
      R"({"name": "quip", "tags": ["a", "b\n"], "n": -12.5e3, "ok": true, "none": null})",
      R"([1, [2, [3, {}]], {"x": {"y": []}}, "\u00e9\"\\"])",
      R"("plain")",
      "0",
      "[]",
      R"({"a":0.5,"b":[true,false],"c":"日本"})"};
  std::mt19937 rng(7);
  Automaton a(g);
  size_t accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string& x = seeds[rng() % seeds.size()];
    const std::string& y = seeds[rng() % seeds.size()];
    std::string text = x;
    switch (rng() % 4) {
      case 0: break;
      case 1: text = x.substr(0, rng() % (x.size() + 1)) + y.substr(rng() % (y.size() + 1)); break;
      case 2: text.erase(rng() % text.size(), 1); break;
      case 3: text.insert(rng() % (text.size() + 1), 1, "{}[],:\" \\0-e.tn"[rng() % 15]); break;
    }
    const bool want = nlohmann::json::accept(text);
    Automaton::State s = a.run(a.start(), text);
    const bool got = s != Automaton::kDead && a.accepting(s);
    ASSERT_EQ(got, want) << text;
    (want ? accepted : refused) += 1;
    const std::string cut = text.substr(0, rng() % (text.size() + 1));
    if (want) {
      ASSERT_TRUE(is_prefix(*g, cut)) << cut;
    }
  }
  // Both sides were exercised.
  EXPECT_GT(accepted, 500u);
  EXPECT_GT(refused, 500u);
}

// The test's own UTF-8 encoder, written from RFC 3629's table: an oracle
// apart from tokenizer::utf8_append, which the compiler itself uses.
std::string utf8(uint32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// Character classes over code points become byte sequences: every code
// point (each one near a UTF-8 length or class boundary, and a stride
// through the rest) is matched exactly when the class holds it.
TEST(Gbnf, CharacterClassesMatchExactlyTheirCodePoints) {
  const auto g = compile(R"(root ::= [a-c\u00e0-\u00ff\u0800\uFFFF\U0001F600-\U0001F64F])");
  const auto neg = compile(R"(root ::= [^a-c\u00e0-\u00ff\u0800\uFFFF\U0001F600-\U0001F64F])");
  const auto any = compile("root ::= .");
  ASSERT_TRUE(g && neg && any);
  const auto in_class = [](uint32_t c) {
    return (c >= 'a' && c <= 'c') || (c >= 0xE0 && c <= 0xFF) || c == 0x800 || c == 0xFFFF ||
           (c >= 0x1F600 && c <= 0x1F64F);
  };
  std::vector<uint32_t> points;
  for (uint32_t c = 0; c <= 0x10FFFF; c += 97) points.push_back(c);
  for (uint32_t b :
       {0x0u,    0x60u,   0x61u,    0x63u,    0x64u,    0x7Fu,    0x80u,    0xDFu,
        0xE0u,   0xFFu,   0x100u,   0x7FFu,   0x800u,   0x801u,   0xD7FFu,  0xE000u,
        0xFFFEu, 0xFFFFu, 0x10000u, 0x1F5FFu, 0x1F600u, 0x1F64Fu, 0x1F650u, 0x10FFFFu}) {
    points.push_back(b);
  }
  for (uint32_t c : points) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const std::string s = utf8(c);
    EXPECT_EQ(matches(*g, s), in_class(c)) << std::hex << c;
    EXPECT_EQ(matches(*neg, s), !in_class(c)) << std::hex << c;
    EXPECT_TRUE(matches(*any, s)) << std::hex << c;
    // Every proper prefix of the sequence is a prefix, never a match.
    for (size_t n = 1; n < s.size(); ++n) EXPECT_FALSE(matches(*any, s.substr(0, n)));
  }
  // Bytes that are not UTF-8: surrogates, overlong forms, past U+10FFFF, stray bytes.
  for (const char* bad : {"\xED\xA0\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xF4\x90\x80\x80", "\x80",
                          "\xFF", "\xF5\x80\x80\x80"}) {
    EXPECT_FALSE(is_prefix(*any, bad)) << bad;
  }
}

// x{m,n} matches k copies exactly when m <= k <= n; {m,} has no upper
// bound; * + ? as their bounds say.
TEST(Gbnf, RepetitionsMatchTheirCounts) {
  for (int m = 0; m <= 3; ++m) {
    for (int n = m; n <= 5; ++n) {
      const auto bounded =
          compile("root ::= \"ab\"{" + std::to_string(m) + "," + std::to_string(n) + "}");
      const auto open = compile("root ::= (\"a\" \"b\"){" + std::to_string(m) + ",}");
      ASSERT_TRUE(bounded && open);
      for (int k = 0; k <= 7; ++k) {
        std::string s;
        for (int i = 0; i < k; ++i) s += "ab";
        EXPECT_EQ(matches(*bounded, s), k >= m && k <= n) << m << "," << n << " k=" << k;
        EXPECT_EQ(matches(*open, s), k >= m) << m << ", k=" << k;
      }
    }
  }
  const auto ops = compile("root ::= \"a\"* \"b\"+ \"c\"? \"d\"{2}");
  ASSERT_TRUE(ops);
  for (const char* yes : {"bdd", "aabbcdd", "bbbdd"}) EXPECT_TRUE(matches(*ops, yes)) << yes;
  for (const char* no : {"dd", "abcd", "abccdd", "abddd"}) EXPECT_FALSE(matches(*ops, no)) << no;
}

TEST(Gbnf, SyntaxAsLlamaCppWritesIt) {
  // Rules over several lines, comments, alternatives continued after "|",
  // names with dashes and underscores, escapes, a class with ']' and '-'.
  const auto g = compile(
      "# a comment\n"
      "root ::= greeting-word ws_ (\n"
      "    \"world\" |   # inline comment\n"
      "    [\\]\\-x]+\n"
      "  ) \"\\x21\\u00e9\\U0001F600\\t\\\\\\\"\"\n"
      "greeting-word ::= \"hello\" |\n"
      "   \"hi\"\n"
      "ws_ ::= \" \"\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "hello world!é😀\t\\\""));
  EXPECT_TRUE(matches(*g, "hi ]-x]!é😀\t\\\""));
  EXPECT_FALSE(matches(*g, "hi y!é😀\t\\\""));
  // Another root.
  auto other = compile_gbnf("a ::= \"x\"\nb ::= a a", "b");
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_TRUE(matches(**other, "xx"));
}

struct Broken {
  const char* grammar;
  const char* message;  // a part of the error
};

// Each is refused with a message that names what and where.
TEST(Gbnf, BrokenGrammarsAreRefusedWithTheRuleAndPosition) {
  const Broken cases[] = {
      {"", "no rule 'root'"},
      {"# only a comment\n", "no rule 'root'"},
      {"rot ::= \"a\"", "no rule 'root'"},
      {"root ::= value", "line 1, column 10: rule 'root': unknown rule 'value'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"root \"a\"", "expected '::='"},
      {"root ::= \"abc", "the literal is not closed"},
      {"root ::= [a-z", "the character class is not closed"},
      {"root ::= [z-a]", "line 1, column 11: rule 'root': the range's end comes before its start"},
      {"root ::= (\"a\" | \"b\"", "expected ')'"},
      {"root ::= \"a\" )", "expected the end of the line"},
      {"root ::= \"\\q\"", "unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "expected 2 hexadecimal digits"},
      {"root ::= \"\\uD800\"", "not a Unicode scalar value"},
      {"root ::= \"\\U00110000\"", "not a Unicode scalar value"},
      {"root ::= \"\xC3\"", "invalid UTF-8"},
      {"root ::= * \"a\"", "'*' follows nothing it could repeat"},
      {"root ::= \"a\"**", "'*' follows nothing it could repeat"},
      {"root ::= \"a\"{3,2}", "maximum is below its minimum"},
      {"root ::= \"a\"{2", "expected '}'"},
      {"root ::= \"a\"{x}", "expected a number"},
      {"root ::= \"a\"{10001}", "repetitions above 10000"},
      {"root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive"},
      {"root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"", "rule 'x' is left-recursive"},
      {"root ::= (\"a\"?)*", "left-recursive"},
      {"root ::= <think> \"a\"", "token references (<...>) are not supported"},
      {"root ::= !<[12]>", "token references"},
      {"root ::= [^\\x00-\\U0010FFFF]", "matches nothing"},
      {"root ::= \"a\"\n  ::= \"b\"", "expected a rule name"},
      {"root ::= \"a\" b\nb ::= \"b\" c ::= \"c\"",
       "expected the end of the line before the rule 'c'"},
  };
  for (const Broken& b : cases) {
    auto g = compile_gbnf(b.grammar);
    ASSERT_FALSE(g.ok()) << b.grammar;
    EXPECT_NE(g.error().message.find(b.message), std::string::npos)
        << b.grammar << "\n  got: " << g.error().message;
    EXPECT_EQ(g.error().message.find('\n'), std::string::npos) << g.error().message;
  }
  // Repetitions copy what they repeat: a grammar that would fill memory is refused.
  std::string huge = "root ::=";
  for (int i = 0; i < 500; ++i) huge += " \"ab\"{10000}";
  auto g = compile_gbnf(huge);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("too large"), std::string::npos) << g.error().message;
}

// Equal situations are one state: a long text through a JSON string costs
// no new states after the first few characters.
TEST(Gbnf, AutomatonStatesAreShared) {
  const auto g = compile(quip::testing::read_file(kGrammars / "json.gbnf"));
  ASSERT_TRUE(g);
  Automaton a(g);
  Automaton::State s = a.run(a.start(), "{\"k\": \"");
  ASSERT_NE(s, Automaton::kDead);
  s = a.run(s, "abcdefghijklmnopqrstuvwxyz");
  const size_t states = a.state_count();
  s = a.run(s, "abcdefghijklmnopqrstuvwxyz 0123456789 the same again");
  ASSERT_NE(s, Automaton::kDead);
  EXPECT_EQ(a.state_count(), states);
  EXPECT_FALSE(a.accepting(s));
  s = a.run(s, "\"}");
  EXPECT_TRUE(a.accepting(s));
}

}  // namespace
}  // namespace quip::grammar
