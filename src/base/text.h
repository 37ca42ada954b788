// Small text utilities for messages.
#pragma once

#include <cstddef>
#include <cstdint>
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

// How escape_for_terminal writes what a terminal must not be sent.
struct EscapeOptions {
  // The output is cut after this many bytes, followed by "...".
  size_t max_bytes = SIZE_MAX;
  // Multi-line text: newline and tab are kept, and so is a carriage return
  // just before a newline (a CRLF line end); everything else is escaped.
  bool multi_line = false;
  // Unambiguous: a backslash is doubled and tab, newline and carriage
  // return are written \t, \n and \r (for token pieces).
  bool c_escapes = false;
};

// `text` made safe to send to a terminal: the one escaping function for
// every text quip did not write itself (stored messages, file names, GGUF
// metadata, template messages). Escaped: C0 controls (ESC, BEL, BS, CR,
// ...) and DEL as \xNN, C1 controls U+0080..U+009F (which terminals read as
// CSI, OSC, ...) as \uNNNN, and each byte that is not part of valid UTF-8 as
// \xNN. The result holds no control character but, with multi_line,
// newline and tab (and CR before a newline).
std::string escape_for_terminal(std::string_view text, const EscapeOptions& options);

// One line of a terminal: everything escaped, cut at `max_bytes` with "...".
inline std::string printable(std::string_view text, size_t max_bytes = 80) {
  return escape_for_terminal(text, {.max_bytes = max_bytes});
}

// Multi-line text (a stored message): newlines and tabs kept, never cut.
inline std::string printable_lines(std::string_view text) {
  return escape_for_terminal(text, {.multi_line = true});
}

// `text` with each byte that is not part of valid UTF-8 written as \xNN, and
// everything else (control characters included) kept: for JSON keys, where
// replacing bad bytes with U+FFFD could make two keys equal.
std::string escape_invalid_utf8(std::string_view text);

// `text` without the spaces, tabs, CRs and newlines at either end (what a
// one-line file written by another tool holds: a commit, a token).
inline std::string_view trim_space(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}

}  // namespace quip
