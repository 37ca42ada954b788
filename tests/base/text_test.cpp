#include "base/text.h"

#include <gtest/gtest.h>

namespace quip {
namespace {

TEST(Text, Utf8SequenceLengthFollowsRfc3629) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("é", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("日", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("🦙", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // stray continuation byte
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xE6\x97", 0), 0u);          // cut short
  EXPECT_EQ(utf8_sequence_length("\xF8\x88\x80\x80\x80", 0), 0u);
}

TEST(Text, PrintableEscapesWhatATerminalShouldNotSee) {
  EXPECT_EQ(printable("plain ▁ 日本"), "plain ▁ 日本");
  EXPECT_EQ(printable(std::string("a\nb\0c", 5)), "a\\x0Ab\\x00c");
  EXPECT_EQ(printable("\xff\xc3"), "\\xFF\\xC3");
  EXPECT_EQ(printable("\x1b[31m"), "\\x1B[31m");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}

// Terminals read U+0080..U+009F as controls too: U+009B is CSI, U+009D OSC.
TEST(Text, PrintableEscapesC1Controls) {
  EXPECT_EQ(printable("a\xC2\x9B"
                      "31mb"),
            "a\\u009B31mb");
  EXPECT_EQ(printable("\xC2\x9D"
                      "0;t\xC2\x9C"),
            "\\u009D0;t\\u009C");
  EXPECT_EQ(printable("\xC2\x80\xC2\x9F"), "\\u0080\\u009F");
  EXPECT_EQ(printable("\xC2\xA0\xC2\xA9"), "\xC2\xA0\xC2\xA9");  // NBSP, (c): text
  EXPECT_EQ(printable("\x9B"), "\\x9B");                         // a lone byte: not UTF-8
  EXPECT_EQ(printable("\x7F\b\a\r"), "\\x7F\\x08\\x07\\x0D");
}

// Every byte value and every C1 code point, alone: the result never holds
// a byte a terminal acts on.
TEST(Text, PrintableNeverLetsAControlThrough) {
  const auto safe = [](const std::string& s, bool multi_line) {
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (multi_line && (c == '\n' || c == '\t')) continue;
      if (multi_line && c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
      if (c < 0x20 || c == 0x7F) return false;
      if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
        return false;
      }
    }
    return true;
  };
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    EXPECT_TRUE(safe(printable(one), false)) << b;
    EXPECT_TRUE(safe(printable_lines("x" + one + "y"), true)) << b;
    const std::string c1 = std::string("\xC2") + static_cast<char>(b);
    EXPECT_TRUE(safe(printable(c1), false)) << b;
    EXPECT_TRUE(safe(printable_lines(c1), true)) << b;
  }
}

TEST(Text, PrintableLinesKeepsLinesAndTabsOnly) {
  EXPECT_EQ(printable_lines("a\nb\tc\r\nd"), "a\nb\tc\r\nd");
  EXPECT_EQ(printable_lines("over\rwrite"), "over\\x0Dwrite");
  EXPECT_EQ(printable_lines("\x1b]0;title\x07"), "\\x1B]0;title\\x07");
  EXPECT_EQ(printable_lines("back\bspace"), "back\\x08space");
  EXPECT_EQ(printable_lines(std::string(200, 'x')), std::string(200, 'x')) << "never cut";
}

TEST(Text, CEscapesAreUnambiguous) {
  const EscapeOptions c{.c_escapes = true};
  EXPECT_EQ(escape_for_terminal("a\\b\tc\nd\re", c), "a\\\\b\\tc\\nd\\re");
  EXPECT_EQ(escape_for_terminal("\x1b\xC2\x85\xff", c), "\\x1B\\u0085\\xFF");
}

TEST(Text, EscapeInvalidUtf8KeepsValidTextAndControls) {
  EXPECT_EQ(escape_invalid_utf8("a\nb é"), "a\nb é");
  EXPECT_EQ(escape_invalid_utf8("k\xff"), "k\\xFF");
  EXPECT_NE(escape_invalid_utf8("k\xff"), escape_invalid_utf8("k\xfe"));
}

}  // namespace
}  // namespace quip
