#include "grammar/regex_gbnf.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "grammar/gbnf_text.h"
#include "tokenizer/unicode.h"

namespace quip::grammar {
namespace {

// Groups nested deeper than this are an error: the parser recurses once per
// group and the grammar compiler once per parenthesis.
constexpr int kMaxGroupDepth = 64;

// ECMA-262 section 22.2.2.9 (CharacterClassEscape) and WhiteSpace /
// LineTerminator (sections 12.2, 12.3).
CharSet digit_set() {
  return CharSet::of('0', '9');
}

CharSet word_set() {
  CharSet s = CharSet::of('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}

CharSet space_set() {
  CharSet s = CharSet::of('\t', '\r');  // \t \n \v \f \r
  for (uint32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
    s.add(c, c);
  }
  s.add(0x2000, 0x200A);
  return s;
}

CharSet dot_set() {
  CharSet line_ends = CharSet::of('\n', '\n');
  line_ends.add('\r', '\r');
  line_ends.add(0x2028, 0x2029);
  return line_ends.complement();
}

// How JSON writes `c` when it need not escape it: itself, else the short
// escape, else \u00XX (RFC 8259 section 7).
std::string json_plain(uint32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  std::string out;
  if (c < 0x20) {
    static constexpr char kHex[] = "0123456789abcdef";
    out = "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  } else {
    tokenizer::utf8_append(out, c);
  }
  return out;
}

// A regular expression compiled so far. compile_gbnf refuses a repetition
// of something that can match the empty string ((a?)* loops a top-down
// matcher), so each piece also carries the GBNF of its non-empty strings:
// x* is written (x without the empty string)*, the same language.
struct Re {
  std::string full;                     // every string; "" with !nonempty: only ""
  std::optional<std::string> nonempty;  // its non-empty strings, if any
  bool nullable = false;                // whether "" is one of them
  std::string literal;                  // the JSON text, for a literal character
  bool is_literal = false;
};

Re re_empty() {
  return Re{"", std::nullopt, true, "", false};
}
Re re_symbol(const std::string& expr) {
  return Re{expr, expr, false, "", false};
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out;
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return "(" + out + ")";
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return b.empty() ? a : a + " " + b;
}

// a b c... (literal runs merged into one GBNF literal each).
Re re_sequence(const std::vector<Re>& in) {
  std::vector<Re> items;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].is_literal) {
      std::string text = in[k].literal;
      while (k + 1 < in.size() && in[k + 1].is_literal) text += in[++k].literal;
      items.push_back(re_symbol(gbnf_literal(text)));
    } else if (in[k].nonempty) {
      items.push_back(in[k]);
    }
  }
  if (items.empty()) return re_empty();
  Re out;
  out.nullable = true;
  for (const Re& r : items) {
    out.full = join(out.full, r.full);
    out.nullable = out.nullable && r.nullable;
  }
  if (!out.nullable) {
    out.nonempty = out.full;
    return out;
  }
  // All may be empty: non-empty when item j is the first that is not.
  std::vector<std::string> alts;
  for (size_t j = 0; j < items.size(); ++j) {
    std::string rest;
    for (size_t k = j + 1; k < items.size(); ++k) rest = join(rest, items[k].full);
    alts.push_back(join(*items[j].nonempty, rest));
  }
  out.nonempty = alternatives(alts);
  return out;
}

Re re_alternation(const std::vector<Re>& alts) {
  std::vector<std::string> nonempty;
  bool nullable = false;
  for (const Re& r : alts) {
    nullable = nullable || r.nullable;
    if (r.nonempty) nonempty.push_back(*r.nonempty);
  }
  if (nonempty.empty()) return re_empty();
  const std::string ne = alternatives(nonempty);
  return Re{nullable ? gbnf_group(ne) + "?" : ne, ne, nullable, "", false};
}

class Parser {
 public:
  Parser(std::vector<uint32_t> pattern, std::string_view any_char, uint64_t& cost)
      : p_(std::move(pattern)), any_char_(any_char), cost_(cost) {}

  Result<std::string> top() {
    std::vector<Re> alts;
    // Without an anchor the match may start or end anywhere.
    const std::string any(any_char_);
    const Re anything{any + "*", any + "+", true, "", false};
    while (true) {
      const bool start = accept('^');
      Result<Re> body = sequence();
      if (!body) return body.error();
      const bool end = accept('$');
      if (!at_end() && peek() != '|') {
        if (peek() == ')') return fail("unbalanced ')'");
        return fail("'$' is only supported at the end of the pattern");
      }
      std::vector<Re> parts;
      if (!start) parts.push_back(anything);
      if (body->nonempty) parts.push_back(*body);
      if (!end && (start || body->nonempty)) parts.push_back(anything);
      alts.push_back(re_sequence(parts));
      if (!accept('|')) break;
    }
    return re_alternation(alts).full;
  }

 private:
  bool at_end() const { return i_ >= p_.size(); }
  uint32_t peek() const { return p_[i_]; }
  bool accept(uint32_t c) {
    if (!at_end() && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  Error fail(std::string_view what) const { return fail_at(what, i_); }
  Error fail_at(std::string_view what, size_t at) const {
    return Error{std::string(what) + " at offset " + std::to_string(at)};
  }

  // alternative ('|' alternative)* inside a group, up to its ')'.
  Result<Re> alternation() {
    std::vector<Re> alts;
    while (true) {
      Result<Re> body = sequence();
      if (!body) return body;
      alts.push_back(std::move(*body));
      if (!accept('|')) break;
    }
    return re_alternation(alts);
  }

  Result<Re> sequence() {
    std::vector<Re> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '^') return fail("'^' is only supported at the start of the pattern");
      if (peek() == '$') {
        if (depth_ > 0) return fail("'$' is only supported at the end of the pattern");
        break;
      }
      const size_t atom_at = i_;
      Result<Re> atom = this->atom();
      if (!atom) return atom.error();
      Result<bool> quantified = quantifier(*atom);
      if (!quantified) return quantified.error();
      if (*quantified) {
        Result<bool> again = quantifier(*atom);
        if (!again) return again.error();
        if (*again) return fail_at("a repetition of a repetition", atom_at);
      }
      items.push_back(std::move(*atom));
    }
    return re_sequence(items);
  }

  Result<Re> atom() {
    const size_t at = i_;
    const uint32_t c = p_[i_++];
    switch (c) {
      case '(': return group(at);
      case '[': {
        Result<CharSet> set = char_class(at);
        if (!set) return set.error();
        return re_symbol(json_chars(*set));
      }
      case '.': return re_symbol(json_chars(dot_set()));
      case '\\': {
        Result<CharSet> set = escape(false);
        if (!set) return set.error();
        if (set->ranges().size() == 1 && set->ranges()[0].lo == set->ranges()[0].hi) {
          return literal(set->ranges()[0].lo);
        }
        return re_symbol(json_chars(*set));
      }
      case '*':
      case '+':
      case '?': return fail_at("a repetition of nothing", at);
      case '{': {
        // A '{' that starts no valid repetition is a literal (ECMA-262 Annex B).
        --i_;
        Re none = re_empty();
        Result<bool> q = quantifier(none);
        if (!q) return q.error();
        if (*q) return fail_at("a repetition of nothing", at);
        ++i_;
        return literal('{');
      }
      default: return literal(c);
    }
  }

  static Re literal(uint32_t c) {
    const std::string text = json_plain(c);
    Re r = re_symbol(gbnf_literal(text));
    r.literal = text;
    r.is_literal = true;
    return r;
  }

  Result<Re> group(size_t at) {
    if (accept('?')) {
      if (accept(':')) {
      } else if (accept('<')) {
        if (!at_end() && (peek() == '=' || peek() == '!')) {
          return fail_at("lookbehind is not supported", at);
        }
        // A named group: the name does not change what matches.
        while (!at_end() && peek() != '>') ++i_;
        if (!accept('>')) return fail_at("unterminated group name", at);
      } else if (!at_end() && (peek() == '=' || peek() == '!')) {
        return fail_at("lookahead is not supported", at);
      } else {
        return fail_at("this '(?' group (flags or another extension) is not supported", at);
      }
    }
    if (++depth_ > kMaxGroupDepth) {
      return fail_at("groups nested deeper than " + std::to_string(kMaxGroupDepth), at);
    }
    Result<Re> inner = alternation();
    --depth_;
    if (!inner) return inner;
    if (!accept(')')) return fail_at("unterminated group '('", at);
    return inner;
  }

  // Applies a repetition, if one follows, to `item`. Returns whether one did.
  Result<bool> quantifier(Re& item) {
    if (at_end()) return false;
    const size_t at = i_;
    uint64_t min = 0;
    std::optional<uint64_t> max;
    const uint32_t c = peek();
    if (c == '*') {
      ++i_;
    } else if (c == '+') {
      min = 1, ++i_;
    } else if (c == '?') {
      max = 1, ++i_;
    } else if (c == '{') {
      size_t j = i_ + 1;
      auto number = [&](uint64_t& out) {
        const size_t from = j;
        out = 0;
        while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
          out = out * 10 + (p_[j] - '0');
          if (out > 1'000'000'000) out = 1'000'000'000;
          ++j;
        }
        return j > from;
      };
      if (!number(min)) return false;
      if (j < p_.size() && p_[j] == ',') {
        ++j;
        uint64_t n = 0;
        if (number(n)) max = n;
      } else {
        max = min;
      }
      if (j >= p_.size() || p_[j] != '}') return false;
      i_ = j + 1;
      if (max && *max < min) return fail_at("repetition bounds out of order", at);
    } else {
      return false;
    }
    accept('?');                      // lazy: the same strings match
    if (!item.nonempty) return true;  // only "" stays only ""
    // A nullable x: x{m,n} matches what (x without "")'s {0,n} does.
    const std::string& base = item.nullable ? *item.nonempty : item.full;
    const uint64_t lo = item.nullable ? 0 : min;
    Result<std::string> full = gbnf_repeat(base, lo, max, cost_);
    if (!full) return fail_at(full.error().message, at);
    if (full->empty()) {
      item = re_empty();
      return true;
    }
    Result<std::string> nonempty = gbnf_repeat(base, std::max<uint64_t>(lo, 1), max, cost_);
    if (!nonempty) return fail_at(nonempty.error().message, at);
    item = Re{gbnf_group(*full), gbnf_group(*nonempty), lo == 0, "", false};
    return true;
  }

  // After a backslash. In a class \b is a backspace; outside it is a word
  // boundary, which a grammar over characters cannot express.
  Result<CharSet> escape(bool in_class) {
    if (at_end()) return fail("a '\\' at the end of the pattern");
    const size_t at = i_ - 1;
    const uint32_t c = p_[i_++];
    auto one = [](uint32_t x) { return CharSet::of(x, x); };
    switch (c) {
      case 'd': return digit_set();
      case 'D': return digit_set().complement();
      case 'w': return word_set();
      case 'W': return word_set().complement();
      case 's': return space_set();
      case 'S': return space_set().complement();
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'b':
        if (in_class) return one('\b');
        return fail_at("the word boundary '\\b' is not supported", at);
      case 'B': return fail_at("the word boundary '\\B' is not supported", at);
      case 'k': return fail_at("the backreference '\\k' is not supported", at);
      case 'p':
      case 'P': return fail_at("Unicode property escapes are not supported", at);
      case '0':
        if (!at_end() && peek() >= '0' && peek() <= '9') {
          return fail_at("octal escapes are not supported", at);
        }
        return one(0);
      case 'x':
      case 'u': {
        const int digits = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          if (at_end()) return fail_at("a short hex escape", at);
          const uint32_t h = p_[i_++];
          int d = -1;
          if (h >= '0' && h <= '9') d = static_cast<int>(h - '0');
          if (h >= 'a' && h <= 'f') d = static_cast<int>(h - 'a' + 10);
          if (h >= 'A' && h <= 'F') d = static_cast<int>(h - 'A' + 10);
          if (d < 0) return fail_at("a malformed hex escape", at);
          v = v * 16 + static_cast<uint32_t>(d);
        }
        if (v >= 0xD800 && v <= 0xDFFF) return fail_at("surrogate escapes are not supported", at);
        return one(v);
      }
      default: break;
    }
    if (c >= '1' && c <= '9') return fail_at("backreferences are not supported", at);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      std::string name = "\\";
      name += static_cast<char>(c);
      return fail_at("the escape '" + name + "' is not supported", at);
    }
    return one(c);  // escaped punctuation (or any other character) is itself
  }

  // After '['.
  Result<CharSet> char_class(size_t at) {
    const bool negated = accept('^');
    if (!at_end() && peek() == ']') {
      return fail_at("an empty class ('[]' or '[^]') is not supported", at);
    }
    CharSet set;
    while (true) {
      if (at_end()) return fail_at("unterminated class '['", at);
      if (accept(']')) break;
      Result<CharSet> lo = class_atom();
      if (!lo) return lo;
      const bool single = lo->ranges().size() == 1 && lo->ranges()[0].lo == lo->ranges()[0].hi;
      if (i_ + 1 < p_.size() && peek() == '-' && p_[i_ + 1] != ']') {
        const size_t range_at = i_;
        ++i_;
        Result<CharSet> hi = class_atom();
        if (!hi) return hi;
        const bool hi_single = hi->ranges().size() == 1 && hi->ranges()[0].lo == hi->ranges()[0].hi;
        if (!single || !hi_single) {
          return fail_at("a class range with a class escape as an end", range_at);
        }
        const uint32_t a = lo->ranges()[0].lo, b = hi->ranges()[0].lo;
        if (a > b) return fail_at("a class range out of order", range_at);
        set.add(a, b);
      } else {
        set.add(*lo);
      }
    }
    if (negated) set = set.complement();
    if (set.empty()) return fail_at("a class that matches no character", at);
    return set;
  }

  Result<CharSet> class_atom() {
    const uint32_t c = p_[i_++];
    if (c == '\\') return escape(true);
    return CharSet::of(c, c);
  }

  std::vector<uint32_t> p_;
  std::string_view any_char_;
  uint64_t& cost_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view any_char,
                                  uint64_t& cost) {
  std::vector<uint32_t> code_points;
  if (!decode_utf8(pattern, code_points)) return Error{"the pattern is not valid UTF-8"};
  return Parser(std::move(code_points), any_char, cost).top();
}

}  // namespace quip::grammar
