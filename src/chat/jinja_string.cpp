#include "chat/jinja_string.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace quip::chat::jinja {
namespace {

using tokenizer::kInvalidCodepoint;
using tokenizer::utf8_append;
using tokenizer::utf8_decode;

// Calls fn(cp, bytes) for each character; an invalid byte comes as
// kInvalidCodepoint with its one byte.
template <class Fn>
void for_each_char(std::string_view s, Fn&& fn) {
  for (size_t i = 0; i < s.size();) {
    const tokenizer::Utf8Char c = utf8_decode(s, i);
    fn(c.cp, s.substr(i, c.len));
    i += c.len;
  }
}

// Appends a case-mapped character; invalid bytes are copied unchanged.
void append_mapped(std::string& out, uint32_t cp, std::string_view bytes, uint32_t mapped) {
  if (cp == kInvalidCodepoint || mapped == cp) {
    out += bytes;
  } else {
    utf8_append(out, mapped);
  }
}

template <class Map>
std::string map_chars(std::string_view s, Map&& map) {
  std::string out;
  out.reserve(s.size());
  for_each_char(s, [&](uint32_t cp, std::string_view bytes) {
    append_mapped(out, cp, bytes, cp == kInvalidCodepoint ? cp : map(cp));
  });
  return out;
}

bool is_digit_cp(uint32_t cp) {
  return (cp >= '0' && cp <= '9') || (cp >= 0x660 && cp <= 0x669) || (cp >= 0x6F0 && cp <= 0x6F9) ||
         (cp >= 0x966 && cp <= 0x96F) || (cp >= 0xFF10 && cp <= 0xFF19);
}

bool is_cased(uint32_t cp) { return to_upper(cp) != cp || to_lower(cp) != cp; }

// Characters Python's repr() writes as escapes: controls, separators other
// than the space, format characters and private use.
bool is_printable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) return false;
  if ((cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB)) return false;
  return cp <= 0x10FFFF;
}

}  // namespace

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for_each_char(s, [&](uint32_t, std::string_view bytes) { out.push_back(bytes); });
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  bool ascii = true;
  for (char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return s.size();
  for_each_char(s, [&](uint32_t, std::string_view) { ++n; });
  return n;
}

std::string utf8_slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                       int64_t step) {
  const SliceRange r = slice_range(static_cast<int64_t>(utf8_length(s)), start, stop, step);
  if (r.count == 0) return {};
  if (r.step == 1) {
    // One run of bytes: find where character start and start + count begin.
    size_t begin = 0, end = s.size();
    int64_t k = 0;
    for (size_t i = 0; i < s.size(); i += utf8_decode(s, i).len, ++k) {
      if (k == r.start) begin = i;
      if (k == r.start + r.count) {
        end = i;
        break;
      }
    }
    return std::string(s.substr(begin, end - begin));
  }
  std::vector<uint32_t> starts;  // byte offset of each character; strings are < 4 GiB
  starts.reserve(s.size());
  for (size_t i = 0; i < s.size(); i += utf8_decode(s, i).len) starts.push_back(static_cast<uint32_t>(i));
  starts.push_back(static_cast<uint32_t>(s.size()));
  std::string out;
  for (int64_t n = 0; n < r.count; ++n) {
    // start + n * step stays inside the string, so it cannot overflow.
    const auto idx = static_cast<size_t>(r.start + n * r.step);
    out += s.substr(starts[idx], starts[idx + 1] - starts[idx]);
  }
  return out;
}

std::optional<std::string_view> utf8_at(std::string_view s, int64_t index) {
  if (index < 0) index += static_cast<int64_t>(utf8_length(s));
  if (index < 0) return std::nullopt;
  int64_t k = 0;
  for (size_t i = 0; i < s.size(); ++k) {
    const uint32_t len = utf8_decode(s, i).len;
    if (k == index) return s.substr(i, len);
    i += len;
  }
  return std::nullopt;
}

bool is_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint32_t to_upper(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0x80) return cp;
  if (cp == 0xB5) return 0x39C;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp == 0xFF) return 0x178;
  // Latin Extended-A: upper/lower pairs at even/odd code points, shifted by one in 0x139-0x148
  // and 0x179-0x17E.
  if (cp >= 0x100 && cp <= 0x17E && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149) {
    const bool odd_lower = !((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E));
    if ((cp % 2 == 1) == odd_lower) return cp - 1;
    return cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

uint32_t to_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149) {
    const bool odd_lower = !((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E));
    if ((cp % 2 == 1) != odd_lower) return cp + 1;
    return cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp | 32) >= 'a' && (cp | 32) <= 'z';
  if (is_cased(cp)) return true;
  return cp == 0xAA || cp == 0xBA || cp == 0xDF || (cp >= 0x100 && cp <= 0x2AF) ||
         (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
         (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30A1 && cp <= 0x30FA) ||
         (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3);
}

std::string str_upper(std::string_view s) {
  std::string out = map_chars(s, to_upper);
  // The one common letter whose capital is two letters.
  return out.find("\xC3\x9F") == std::string::npos ? out : str_replace(out, "\xC3\x9F", "SS", -1);
}
std::string str_lower(std::string_view s) { return map_chars(s, to_lower); }

std::string str_swapcase(std::string_view s) {
  return map_chars(s, [](uint32_t cp) {
    const uint32_t up = to_upper(cp);
    return up != cp ? up : to_lower(cp);
  });
}

std::string str_capitalize(std::string_view s) {
  bool first = true;
  return map_chars(s, [&](uint32_t cp) {
    const uint32_t m = first ? to_upper(cp) : to_lower(cp);
    first = false;
    return m;
  });
}

std::string str_title(std::string_view s) {
  bool prev_cased = false;
  return map_chars(s, [&](uint32_t cp) {
    const uint32_t m = prev_cased ? to_lower(cp) : to_upper(cp);
    prev_cased = is_cased(cp);
    return m;
  });
}

std::string jinja_title(std::string_view s) {
  // Jinja splits on runs of [-\s([{<] and capitalizes each piece.
  bool word_start = true;
  return map_chars(s, [&](uint32_t cp) {
    const bool sep = is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    const uint32_t m = sep ? cp : (word_start ? to_upper(cp) : to_lower(cp));
    word_start = sep;
    return m;
  });
}

namespace {

// The character that ends at `end`: the longest valid sequence of up to 4
// bytes ending there, else the last byte alone (as forward decoding would
// have read it). PRECONDITIONS: end > 0.
size_t last_char_start(std::string_view s, size_t end) {
  for (size_t back = std::min<size_t>(4, end); back > 1; --back) {
    const size_t p = end - back;
    if (utf8_decode(s, p).len == back && utf8_decode(s, p).cp != kInvalidCodepoint) return p;
  }
  return end - 1;
}

}  // namespace

std::string_view str_strip(std::string_view s, std::optional<std::string_view> chars,
                           StripSide side) {
  // `chars` is a set of characters, compared as their UTF-8 bytes.
  const auto strip_it = [&](std::string_view c) {
    if (!chars) {
      const tokenizer::Utf8Char d = utf8_decode(c, 0);
      return d.len == c.size() && d.cp != kInvalidCodepoint && is_space(d.cp);
    }
    for (size_t i = 0; i < chars->size();) {
      const uint32_t len = utf8_decode(*chars, i).len;
      if (chars->substr(i, len) == c) return true;
      i += len;
    }
    return false;
  };
  size_t b = 0, e = s.size();
  if (side != StripSide::Right) {
    while (b < e) {
      const uint32_t len = utf8_decode(s, b).len;
      if (!strip_it(s.substr(b, len))) break;
      b += len;
    }
  }
  if (side != StripSide::Left) {
    while (e > b) {
      const size_t p = std::max(last_char_start(s, e), b);
      if (!strip_it(s.substr(p, e - p))) break;
      e = p;
    }
  }
  return s.substr(b, e - b);
}

std::vector<std::string> str_split(std::string_view s, std::optional<std::string_view> sep,
                                   int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    if (!from_right) {
      size_t begin = 0;
      for (size_t pos; (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) &&
                       (pos = s.find(*sep, begin)) != std::string_view::npos;
           begin = pos + sep->size()) {
        out.emplace_back(s.substr(begin, pos - begin));
      }
      out.emplace_back(s.substr(begin));
      return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t pos = s.rfind(*sep, end - sep->size());
      if (pos == std::string_view::npos) break;
      out.emplace_back(s.substr(pos + sep->size(), end - pos - sep->size()));
      end = pos;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  // Whitespace splitting: runs of whitespace separate, ends are dropped; once
  // maxsplit is reached the rest is kept whole (minus leading whitespace).
  const std::vector<std::string_view> cs = utf8_chars(s);
  const auto space = [&](size_t i) {
    const tokenizer::Utf8Char c = utf8_decode(cs[i], 0);
    return c.len == cs[i].size() && is_space(c.cp);
  };
  const auto join = [&](size_t b, size_t e) {
    std::string w;
    for (size_t k = b; k < e; ++k) w += cs[k];
    return w;
  };
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < cs.size() && space(i)) ++i;
      if (i == cs.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(join(i, cs.size()));  // the rest, trailing whitespace kept
        break;
      }
      size_t j = i;
      while (j < cs.size() && !space(j)) ++j;
      out.push_back(join(i, j));
      i = j;
    }
    return out;
  }
  size_t i = cs.size();
  while (true) {
    while (i > 0 && space(i - 1)) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(join(0, i));  // the rest, leading whitespace kept
      break;
    }
    size_t j = i;
    while (j > 0 && !space(j - 1)) --j;
    out.push_back(join(j, i));
    i = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> str_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t i = 0; i < s.size();) {
    const tokenizer::Utf8Char c = utf8_decode(s, i);
    const uint32_t cp = c.cp;
    const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                     cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) {
      i += c.len;
      continue;
    }
    size_t end = i + c.len;
    if (cp == '\r' && end < s.size() && s[end] == '\n') ++end;
    out.emplace_back(s.substr(begin, (keepends ? end : i) - begin));
    begin = i = end;
  }
  if (begin < s.size()) out.emplace_back(s.substr(begin));
  return out;
}

std::string str_replace(std::string_view s, std::string_view from, std::string_view to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    int64_t n = 0;
    for (std::string_view c : utf8_chars(s)) {
      if (count < 0 || n < count) out += to, ++n;
      out += c;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t begin = 0;
  int64_t n = 0;
  for (size_t pos; (count < 0 || n < count) && (pos = s.find(from, begin)) != std::string_view::npos;
       begin = pos + from.size(), ++n) {
    out += s.substr(begin, pos - begin);
    out += to;
  }
  out += s.substr(begin);
  return out;
}

int64_t str_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = 0; (pos = s.find(sub, pos)) != std::string_view::npos; pos += sub.size()) ++n;
  return n;
}

int64_t str_find(std::string_view s, std::string_view sub, bool from_right) {
  const size_t pos = from_right ? s.rfind(sub) : s.find(sub);
  if (pos == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8_length(s.substr(0, pos)));
}

namespace {

template <class Pred>
bool all_chars(std::string_view s, Pred&& pred) {
  if (s.empty()) return false;
  bool ok = true;
  for_each_char(s, [&](uint32_t cp, std::string_view) { ok = ok && pred(cp); });
  return ok;
}

// Python's isupper/islower: at least one cased character, and none of the other case.
bool case_test(std::string_view s, bool upper) {
  bool any = false, ok = true;
  for_each_char(s, [&](uint32_t cp, std::string_view) {
    if (!is_cased(cp)) return;
    any = true;
    const bool is_up = to_lower(cp) != cp;
    if (is_up != upper) ok = false;
  });
  return any && ok;
}

}  // namespace

bool str_isdigit(std::string_view s) { return all_chars(s, is_digit_cp); }
bool str_isalpha(std::string_view s) { return all_chars(s, is_alpha); }
bool str_isalnum(std::string_view s) {
  return all_chars(s, [](uint32_t cp) { return is_alpha(cp) || is_digit_cp(cp); });
}
bool str_isspace(std::string_view s) { return all_chars(s, is_space); }
bool str_isupper(std::string_view s) { return case_test(s, true); }
bool str_islower(std::string_view s) { return case_test(s, false); }

std::string str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  static constexpr char kHex[] = "0123456789abcdef";
  for_each_char(s, [&](uint32_t cp, std::string_view bytes) {
    if (cp == kInvalidCodepoint) {
      // Python would have failed to decode; show the byte as an escape.
      const auto b = static_cast<unsigned char>(bytes[0]);
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else if (cp == '\\' || cp == static_cast<uint32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (is_printable(cp)) {
      out += bytes;
    } else {
      const int digits = cp < 0x100 ? 2 : (cp < 0x10000 ? 4 : 8);
      out += digits == 2 ? "\\x" : (digits == 4 ? "\\u" : "\\U");
      for (int k = digits - 1; k >= 0; --k) out += kHex[(cp >> (4 * k)) & 15];
    }
  });
  out += quote;
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace quip::chat::jinja
