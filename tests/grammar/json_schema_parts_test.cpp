// The pieces of the JSON Schema converter checked exhaustively where that is
// cheap: integer ranges against every integer near them, the JSON spellings
// of character sets against every BMP code point, long repetitions at their
// edges, and the regex subset against strings in and out of each pattern.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "tokenizer/unicode.h"

namespace quip::grammar {
namespace {

std::shared_ptr<const Grammar> compile_root(const std::string& body) {
  auto g = compile_gbnf("root ::= " + body + "\n");
  EXPECT_TRUE(g.ok()) << g.error().message << "\n" << body;
  return g.ok() ? *g : nullptr;
}

TEST(JsonSchemaText, IntegerRangesMatchExactlyTheirIntegers) {
  const std::vector<std::optional<int64_t>> bounds = {std::nullopt, -1000, -101, -100, -99, -10, -9,
                                                      -1,           0,     1,    9,    10,  11,  99,
                                                      100,          101,   199,  200,  999, 1000};
  for (const auto& lo : bounds) {
    for (const auto& hi : bounds) {
      if (lo && hi && *lo > *hi) continue;
      const auto g = compile_root(integer_range(lo, hi));
      ASSERT_TRUE(g);
      for (int64_t v = -1050; v <= 1050; ++v) {
        const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
        ASSERT_EQ(matches(*g, std::to_string(v)), in)
            << v << " in [" << (lo ? std::to_string(*lo) : "-") << ", "
            << (hi ? std::to_string(*hi) : "+") << "]";
      }
      EXPECT_FALSE(matches(*g, "007"));
      if (!hi) {
        EXPECT_TRUE(matches(*g, std::to_string(kMaxInteger)));
        EXPECT_FALSE(matches(*g, std::to_string(kMaxInteger) + "0"));  // 17 digits
      }
    }
  }
}

TEST(JsonSchemaText, JsonCharsMatchEverySpellingOfTheirCharactersOnly) {
  CharSet set = CharSet::of('a', 'c');
  for (uint32_t c : {0x22u, 0x5Cu, 0x1Fu, 0x0Au, 0xE9u, 0x20ACu, 0xFFFFu}) set.add(c, c);
  set.add(0x1F600, 0x1F64F);
  for (const CharSet& s : {set, set.complement()}) {
    const auto g = compile_root(json_chars(s));
    ASSERT_TRUE(g);
    char buf[16];
    // Every code point below U+0800 (one- and two-byte UTF-8) and around
    // the surrogates, every 7th elsewhere: exhaustive runs take seconds.
    for (uint32_t c = 0; c <= 0xFFFF; c += (c < 0x800 || (c >= 0xD700 && c < 0xE100)) ? 1 : 7) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      const bool in = s.contains(c);
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      ASSERT_EQ(matches(*g, buf), in) << buf;
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      ASSERT_EQ(matches(*g, buf), in) << buf;
      std::string raw;
      tokenizer::utf8_append(raw, c);
      ASSERT_EQ(matches(*g, raw), in && c >= 0x20 && c != '"' && c != '\\') << c;
    }
    for (uint32_t c : {0x10000u, 0x1F5FFu, 0x1F600u, 0x1F64Fu, 0x1F650u, 0x10FFFFu}) {
      const uint32_t v = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04X\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      EXPECT_EQ(matches(*g, buf), s.contains(c)) << buf;
      std::string raw;
      tokenizer::utf8_append(raw, c);
      EXPECT_EQ(matches(*g, raw), s.contains(c)) << c;
    }
    EXPECT_EQ(matches(*g, "\\n"), s.contains('\n'));
    EXPECT_EQ(matches(*g, "\\\""), s.contains('"'));
    EXPECT_FALSE(matches(*g, "\\uD800"));  // a lone surrogate is no character
  }
}

TEST(JsonSchemaText, LongRepetitionsKeepTheirCountsPastTheCompilersBound) {
  struct Case {
    uint64_t min;
    std::optional<uint64_t> max;
  };
  for (const Case& c : {Case{0, 10001}, Case{10001, std::nullopt}, Case{3, 25003}}) {
    uint64_t cost = 0;
    const Result<std::string> r = gbnf_repeat(R"("a")", c.min, c.max, cost);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_GT(cost, 0u);
    const auto g = compile_root(*r);
    ASSERT_TRUE(g);
    for (uint64_t n :
         {uint64_t{0}, uint64_t{2}, uint64_t{3}, uint64_t{9999}, uint64_t{10000}, uint64_t{10001},
          uint64_t{10002}, uint64_t{20003}, uint64_t{25003}, uint64_t{25004}}) {
      const bool in = n >= c.min && (!c.max || n <= *c.max);
      EXPECT_EQ(matches(*g, std::string(n, 'a')), in) << n;
    }
  }
}

struct PatternCase {
  const char* pattern;
  std::vector<std::string> yes, no;  // decoded string contents
};

TEST(JsonSchemaRegex, PatternsMatchTheStringsTheyFind) {
  const PatternCase cases[] = {
      {"^abc$", {"abc"}, {"ab", "abcd", "xabc", ""}},
      {"abc", {"abc", "xxabcxx"}, {"ab c", ""}},
      {"^a|b$", {"ax", "xb", "a", "b"}, {"xa", "bx", ""}},
      {"^(ab)*$", {"", "ab", "abab"}, {"a", "aba"}},
      {"^a+?b{2}c{1,}d{0,1}$", {"abbc", "aabbccd"}, {"abc", "bbc", "abbcdd"}},
      {"^[^a-c\\d]$", {"d", "\xC3\xA9", "\"", "\\", "\n"}, {"a", "b", "5", ""}},
      {"^[\\w.-]+@[a-z]+$", {"a.b-c_d@x"}, {"a b@x", "@x", "a@X"}},
      {"^.$", {"a", "\xF0\x9F\x98\x80", "\t"}, {"\n", "\r", "\xE2\x80\xA8", "ab"}},
      {"^\\s\\S$", {" a", "\ta", "\xC2\xA0x"}, {"  ", "ab"}},
      {"^\\x41\\u00e9\\.\\/\\?$", {"A\xC3\xA9./?"}, {"A\xC3\xA9x/?"}},
      {"^(?<year>\\d{4})-(?:0[1-9]|1[0-2])$", {"2024-01", "1999-12"}, {"2024-13", "24-01"}},
      {"^a{2}{$", {"aa{"}, {"aa"}},
      {"^[\\]\\-]$", {"]", "-"}, {"\\", "a"}},
      {"^(|x)y$", {"y", "xy"}, {"xxy"}},
      {"", {"", "anything"}, {}},
      // Repetitions of what can be empty (compile_gbnf refuses (a?)* as it is).
      {"^(a?|cd)+$", {"", "a", "cdcd", "acda"}, {"b", "c"}},
      {"^(a*)*b$", {"b", "aab"}, {"ab?", "ba"}},
      {"^(?:)+x(y?z?){2,}$", {"x", "xyz", "xzzy"}, {"xa"}},
      {"^(a?b?)*c|()*", {"", "anything"}, {}},
  };
  for (const PatternCase& c : cases) {
    SCOPED_TRACE(c.pattern);
    const nlohmann::ordered_json schema = {{"type", "string"}, {"pattern", c.pattern}};
    const Result<std::string> gbnf = json_schema_to_gbnf(schema);
    ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
    auto g = compile_gbnf(*gbnf);
    ASSERT_TRUE(g.ok()) << g.error().message << "\n" << *gbnf;
    for (const std::string& s : c.yes) {
      EXPECT_TRUE(matches(**g, nlohmann::json(s).dump())) << s;
    }
    for (const std::string& s : c.no) {
      EXPECT_FALSE(matches(**g, nlohmann::json(s).dump())) << s;
    }
  }
}

}  // namespace
}  // namespace quip::grammar
