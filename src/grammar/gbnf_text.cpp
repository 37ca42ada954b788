#include "grammar/gbnf_text.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace quip::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

// How a code point is written inside a GBNF literal or class: the escapes
// llama.cpp's parser knows too (\" \\ \[ \] \n \r \t), \xHH for other
// controls and for the '-' and '^' of classes, and UTF-8 for the rest.
void append_gbnf_char(std::string& out, uint32_t c, bool in_class) {
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  if (in_class && (c == '[' || c == ']')) {
    out += '\\';
    out += static_cast<char>(c);
    return;
  }
  if (c < 0x20 || c == 0x7F || (in_class && (c == '-' || c == '^'))) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c));
    out += buf;
    return;
  }
  tokenizer::utf8_append(out, c);
}

std::string class_of(const std::vector<CodeRange>& ranges, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const CodeRange& r : ranges) {
    append_gbnf_char(out, r.lo, true);
    if (r.hi != r.lo) {
      if (r.hi != r.lo + 1) out += '-';
      append_gbnf_char(out, r.hi, true);
    }
  }
  out += ']';
  return out;
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) {
    if (i) out += " | ";
    out += alts[i];
  }
  out += ')';
  return out;
}

// How much of [lo, hi] the sorted ranges cover: 0 none, 1 part, 2 all.
int coverage(const std::vector<CodeRange>& ranges, uint32_t lo, uint32_t hi) {
  uint64_t covered = 0;
  for (const CodeRange& r : ranges) {
    if (r.hi < lo || r.lo > hi) continue;
    covered += std::min(r.hi, hi) - std::max(r.lo, lo) + 1;
  }
  if (covered == 0) return 0;
  return covered == uint64_t{hi} - lo + 1 ? 2 : 1;
}

// A class of the hex digits (either case) whose values are set in `nibbles`.
std::string hex_digit_class(const std::array<bool, 16>& nibbles) {
  CharSet set;
  for (uint32_t v = 0; v < 16; ++v) {
    if (!nibbles[v]) continue;
    if (v < 10) {
      set.add('0' + v, '0' + v);
    } else {
      set.add('a' + v - 10, 'a' + v - 10);
      set.add('A' + v - 10, 'A' + v - 10);
    }
  }
  return gbnf_class(set);
}

std::string any_hex(int n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9a-fA-F]" : "[0-9a-fA-F]{" + std::to_string(n) + "}";
}

// The remaining `digits` hex digits after `prefix` (the value so far).
// Recursion depth is at most four.
std::string hex_tail(const std::vector<CodeRange>& values, uint32_t prefix, int digits) {
  std::vector<std::string> alts;
  std::array<bool, 16> full{};
  bool any_full = false;
  const uint32_t span = 1u << (4 * (digits - 1));
  for (uint32_t d = 0; d < 16; ++d) {
    const uint32_t lo = (prefix * 16 + d) * span;
    const int c = coverage(values, lo, lo + span - 1);
    if (c == 2) full[d] = any_full = true;
  }
  if (any_full) {
    std::string a = hex_digit_class(full);
    if (digits > 1) {
      a += ' ';
      a += any_hex(digits - 1);
    }
    alts.push_back(std::move(a));
  }
  for (uint32_t d = 0; d < 16; ++d) {
    const uint32_t lo = (prefix * 16 + d) * span;
    if (coverage(values, lo, lo + span - 1) != 1) continue;
    std::array<bool, 16> one{};
    one[d] = true;
    std::string alt = hex_digit_class(one);
    alt += ' ';
    alt += hex_tail(values, prefix * 16 + d, digits - 1);
    alts.push_back(std::move(alt));
  }
  return alternatives(alts);
}

// The surrogate pairs of the characters in [lo, hi] (all above U+FFFF).
void append_pairs(std::vector<std::string>& alts, uint32_t lo, uint32_t hi) {
  const uint32_t hlo = 0xD800 + ((lo - 0x10000) >> 10), llo = 0xDC00 + ((lo - 0x10000) & 0x3FF);
  const uint32_t hhi = 0xD800 + ((hi - 0x10000) >> 10), lhi = 0xDC00 + ((hi - 0x10000) & 0x3FF);
  auto pair = [&](uint32_t h1, uint32_t h2, uint32_t l1, uint32_t l2) {
    alts.push_back("\"\\\\u\" " + hex4_in({CodeRange{h1, h2}}) + " \"\\\\u\" " +
                   hex4_in({CodeRange{l1, l2}}));
  };
  if (hlo == hhi) {
    pair(hlo, hlo, llo, lhi);
    return;
  }
  uint32_t first_full = hlo, last_full = hhi;
  if (llo != 0xDC00) {
    pair(hlo, hlo, llo, 0xDFFF);
    ++first_full;
  }
  if (lhi != 0xDFFF) --last_full;
  if (first_full <= last_full) pair(first_full, last_full, 0xDC00, 0xDFFF);
  if (lhi != 0xDFFF) pair(hhi, hhi, 0xDC00, lhi);
}

// "(" expr ")", built by appends: GCC 12 at -O3 warns (-Wrestrict,
// wrongly) on "(" + std::string(...).
std::string parenthesized(std::string_view expr) {
  std::string out;
  out.reserve(expr.size() + 2);
  out += '(';
  out += expr;
  out += ')';
  return out;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

}  // namespace

CharSet CharSet::of(uint32_t lo, uint32_t hi) {
  CharSet s;
  s.add(lo, hi);
  return s;
}

void CharSet::add(uint32_t lo, uint32_t hi) {
  CHECK(lo <= hi);
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  if (lo <= kSurrogateHi && hi >= kSurrogateLo) {
    if (lo < kSurrogateLo) add(lo, kSurrogateLo - 1);
    if (hi > kSurrogateHi) add(kSurrogateHi + 1, hi);
    return;
  }
  // Merge with every range that overlaps or touches [lo, hi].
  std::vector<CodeRange> out;
  out.reserve(ranges_.size() + 1);
  CodeRange n{lo, hi};
  bool placed = false;
  for (const CodeRange& r : ranges_) {
    if (uint64_t{r.hi} + 1 < n.lo) {
      out.push_back(r);
    } else if (uint64_t{n.hi} + 1 < r.lo) {
      if (!placed) out.push_back(n), placed = true;
      out.push_back(r);
    } else {
      n = {std::min(n.lo, r.lo), std::max(n.hi, r.hi)};
    }
  }
  if (!placed) out.push_back(n);
  ranges_ = std::move(out);
}

void CharSet::add(const CharSet& other) {
  for (const CodeRange& r : other.ranges_) add(r.lo, r.hi);
}

CharSet CharSet::complement() const {
  CharSet out;
  uint32_t next = 0;
  for (const CodeRange& r : ranges_) {
    if (r.lo > next) out.add(next, r.lo - 1);
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
  return out;
}

CharSet CharSet::intersect(uint32_t lo, uint32_t hi) const {
  CharSet out;
  for (const CodeRange& r : ranges_) {
    const uint32_t a = std::max(r.lo, lo), b = std::min(r.hi, hi);
    if (a <= b) out.add(a, b);
  }
  return out;
}

bool CharSet::contains(uint32_t c) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [c](const CodeRange& r) { return r.lo <= c && c <= r.hi; });
}

bool decode_utf8(std::string_view s, std::vector<uint32_t>& out) {
  for (size_t i = 0; i < s.size();) {
    const tokenizer::Utf8Char c = tokenizer::utf8_decode(s, i);
    if (c.cp == tokenizer::kInvalidCodepoint) return false;
    out.push_back(c.cp);
    i += c.len;
  }
  return true;
}

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    // Bytes of multi-byte UTF-8 characters pass through whole.
    if (c >= 0x80) {
      out += ch;
    } else {
      append_gbnf_char(out, c, false);
    }
  }
  out += '"';
  return out;
}

std::string gbnf_class(const CharSet& set) {
  CHECK(!set.empty());
  // A negated class reads better when the set is nearly everything.
  const CharSet rest = set.complement();
  if (!rest.empty() && rest.ranges().size() < set.ranges().size()) {
    return class_of(rest.ranges(), true);
  }
  return class_of(set.ranges(), false);
}

std::string hex4_in(const std::vector<CodeRange>& values) {
  CHECK(!values.empty());
  return hex_tail(values, 0, 4);
}

std::string json_chars(const CharSet& set) {
  CHECK(!set.empty());
  std::vector<std::string> alts;
  // RFC 8259 section 7: any character but the quote, the backslash and the
  // controls below U+0020 may stand for itself.
  CharSet kept;
  const CharSet printable = set.intersect(0x20, CharSet::kMaxCodePoint);
  for (const CodeRange& r : printable.ranges()) {
    uint32_t lo = r.lo;
    for (uint32_t s : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (s < lo || s > r.hi) continue;
      if (s > lo) kept.add(lo, s - 1);
      lo = s + 1;
    }
    if (lo <= r.hi) kept.add(lo, r.hi);
  }
  if (!kept.empty()) alts.push_back(gbnf_class(kept));

  static constexpr std::pair<uint32_t, char> kShort[] = {{'"', '"'},  {'\\', '\\'}, {'/', '/'},
                                                         {0x08, 'b'}, {0x0C, 'f'},  {0x0A, 'n'},
                                                         {0x0D, 'r'}, {0x09, 't'}};
  CharSet letters;
  for (const auto& [c, letter] : kShort) {
    if (set.contains(c)) letters.add(letter, letter);
  }
  if (!letters.empty()) alts.push_back("\"\\\\\" " + gbnf_class(letters));

  const CharSet bmp = set.intersect(0, 0xFFFF);
  if (!bmp.empty()) alts.push_back("\"\\\\u\" " + hex4_in(bmp.ranges()));
  const CharSet astral = set.intersect(0x10000, CharSet::kMaxCodePoint);
  for (const CodeRange& r : astral.ranges()) {
    append_pairs(alts, r.lo, r.hi);
  }
  return alternatives(alts);
}

std::string gbnf_group(std::string_view expr) {
  bool ident = !expr.empty();
  for (char c : expr) ident = ident && is_ident_char(c);
  if (ident) return std::string(expr);
  // One literal, one class or one parenthesised group stays as it is.
  int depth = 0;
  bool in_literal = false, in_class = false;
  for (size_t i = 0; i < expr.size(); ++i) {
    const char c = expr[i];
    if (in_literal || in_class) {
      if (c == '\\') {
        ++i;
      } else if ((in_literal && c == '"') || (in_class && c == ']')) {
        in_literal = in_class = false;
        if (depth == 0 && i + 1 != expr.size()) return parenthesized(expr);
      }
      continue;
    }
    if (c == '"') {
      in_literal = true;
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0 && i + 1 != expr.size()) return parenthesized(expr);
    } else if (depth == 0) {
      return parenthesized(expr);
    }
  }
  return std::string(expr);
}

Result<std::string> gbnf_repeat(std::string_view item, uint64_t min, std::optional<uint64_t> max,
                                uint64_t& cost) {
  CHECK(!max || *max >= min);
  if (max && *max == 0) return std::string();
  const std::string x = gbnf_group(item);
  // A repetition within compile_gbnf's bounds.
  auto rep = [&x, &cost](uint64_t lo, std::optional<uint64_t> hi) -> std::string {
    if (hi && *hi == 0) return "";
    cost += std::max<uint64_t>(lo, hi.value_or(lo)) * x.size();
    if (!hi) return lo == 0 ? x + "*" : lo == 1 ? x + "+" : x + "{" + std::to_string(lo) + ",}";
    if (lo == 1 && *hi == 1) return x;
    if (lo == 0 && *hi == 1) return x + "?";
    if (lo == *hi) return x + "{" + std::to_string(lo) + "}";
    return x + "{" + std::to_string(lo) + "," + std::to_string(*hi) + "}";
  };
  if (min <= kMaxRepeat && (!max || *max <= kMaxRepeat)) return rep(min, max);
  if (min > kMaxRepeat * kMaxRepeat || (max && *max > kMaxRepeat * kMaxRepeat)) {
    return Error{"a repetition count above " + std::to_string(kMaxRepeat * kMaxRepeat) +
                 " is not supported"};
  }
  // x{m,n} = x{m} x{0,n-m}; x{m} = (x{K}){m/K} x{m%K}; and x{0,N} with
  // N = qK + r is (x{K}){0,q-1} x{0,K-1} | (x{K}){q} x{0,r}: the same counts.
  const std::string block = "(" + x + "{" + std::to_string(kMaxRepeat) + "})";
  std::vector<std::string> parts;
  cost += kMaxRepeat * x.size();
  auto blocks = [&](uint64_t lo, uint64_t hi) {
    if (hi == 0) return std::string();
    cost += hi * block.size();
    if (lo == hi) return hi == 1 ? block : block + "{" + std::to_string(hi) + "}";
    return block + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  };
  auto join = [](std::string a, const std::string& b) {
    if (a.empty()) return b;
    return b.empty() ? a : a + " " + b;
  };
  std::string head =
      join(blocks(min / kMaxRepeat, min / kMaxRepeat), rep(min % kMaxRepeat, min % kMaxRepeat));
  if (!max) return join(head, rep(0, std::nullopt));
  const uint64_t n = *max - min;
  if (n <= kMaxRepeat) return join(head, rep(0, n));
  const uint64_t q = n / kMaxRepeat, r = n % kMaxRepeat;
  std::string low = join(blocks(0, q - 1), rep(0, kMaxRepeat - 1));
  std::string high = join(blocks(q, q), rep(0, r));
  return join(head, "(" + low + " | " + high + ")");
}

namespace {

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string seq(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return b.empty() ? a : a + " " + b;
}

// Digit strings of one length between a and b. PRECONDITIONS: a <= b,
// a.size() == b.size(). Recursion depth is the length (at most kMaxDigits).
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a[0] == b[0]) {
    return seq(digit_class(a[0], a[0]), gbnf_group(same_length_range(a.substr(1), b.substr(1))));
  }
  const size_t rest = a.size() - 1;
  const bool a_low = a.find_first_not_of('0', 1) == std::string::npos;
  const bool b_high = b.find_first_not_of('9', 1) == std::string::npos;
  std::vector<std::string> alts;
  char from = a[0], to = b[0];
  if (!a_low) {
    alts.push_back(seq(digit_class(a[0], a[0]),
                       gbnf_group(same_length_range(a.substr(1), std::string(rest, '9')))));
    ++from;
  }
  if (!b_high) --to;
  if (from <= to) alts.insert(alts.begin(), seq(digit_class(from, to), any_digits(rest)));
  if (!b_high) {
    alts.push_back(seq(digit_class(b[0], b[0]),
                       gbnf_group(same_length_range(std::string(rest, '0'), b.substr(1)))));
  }
  return alternatives(alts);
}

// Non-negative integers in [lo, hi] without leading zeros.
std::string natural_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  const std::string slo = std::to_string(lo), shi = std::to_string(hi);
  for (size_t d = slo.size(); d <= shi.size(); ++d) {
    std::string a = slo;
    if (d != slo.size()) {
      a.assign(d, '0');
      a[0] = '1';
    }
    const std::string b = d == shi.size() ? shi : std::string(d, '9');
    alts.push_back(same_length_range(a, b));
  }
  return alternatives(alts);
}

}  // namespace

std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  const int64_t l = std::max(lo.value_or(-kMaxInteger), -kMaxInteger);
  const int64_t h = std::min(hi.value_or(kMaxInteger), kMaxInteger);
  CHECK(l <= h);
  std::vector<std::string> alts;
  if (l < 0) alts.push_back("\"-\" " + gbnf_group(natural_range(std::max<int64_t>(1, -h), -l)));
  if (h >= 0) alts.push_back(natural_range(std::max<int64_t>(0, l), h));
  return alternatives(alts);
}

}  // namespace quip::grammar
