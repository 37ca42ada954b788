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

TEST(Text, EscapeInvalidUtf8KeepsValidTextAndControls) {
  EXPECT_EQ(escape_invalid_utf8("a\nb é"), "a\nb é");
  EXPECT_EQ(escape_invalid_utf8("k\xff"), "k\\xFF");
  EXPECT_NE(escape_invalid_utf8("k\xff"), escape_invalid_utf8("k\xfe"));
}

}  // namespace
}  // namespace quip
