#include "base/text.h"

#include <cstdint>
#include <cstdio>

namespace quip {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t min;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

namespace {

void append_hex(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", c);
  out += buf;
}

}  // namespace

std::string escape_for_terminal(std::string_view text, const EscapeOptions& options) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (out.size() >= options.max_bytes) {
      out += "...";
      break;
    }
    const size_t n = utf8_sequence_length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0) {  // not UTF-8
      append_hex(out, c);
      ++i;
      continue;
    }
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      // A C1 control, U+0080..U+009F: U+009B is CSI, U+009D OSC.
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      i += 2;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    if (options.c_escapes && (c == '\\' || c == '\t' || c == '\n' || c == '\r')) {
      out += c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
    } else if (options.multi_line && !options.c_escapes &&
               (c == '\n' || c == '\t' ||
                (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n'))) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      append_hex(out, c);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      append_hex(out, static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace quip
