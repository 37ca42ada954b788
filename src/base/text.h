// Small text utilities for messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace quip {

// C's isspace in the "C" locale: space, \t, \n, \v, \f, \r.
inline bool is_c_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

// Length of the valid UTF-8 sequence that starts at s[i], or 0 if none does
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF).
// PRECONDITIONS: i < s.size().
size_t utf8_sequence_length(std::string_view s, size_t i);

// `text` made safe to print on one line of a terminal: control characters and
// bytes that are not valid UTF-8 become \xNN, and text longer than
// `max_bytes` is cut with "...".
std::string printable(std::string_view text, size_t max_bytes = 80);

// `text` with each byte that is not part of valid UTF-8 written as \xNN, and
// everything else (control characters included) kept: for JSON keys, where
// replacing bad bytes with U+FFFD could make two keys equal.
std::string escape_invalid_utf8(std::string_view text);

}  // namespace quip
