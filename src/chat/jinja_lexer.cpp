#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "chat/jinja_string.h"
#include "tokenizer/unicode.h"

namespace quip::chat::jinja {
namespace {

// Bytes of the whitespace character at s[i] (Python's \s: ASCII and Unicode
// spaces), 0 if there is none.
size_t ws_len(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return is_space(c) ? 1 : 0;
  const tokenizer::Utf8Char ch = tokenizer::utf8_decode(s, i);
  return ch.cp != tokenizer::kInvalidCodepoint && is_space(ch.cp) ? ch.len : 0;
}

size_t skip_ws(std::string_view s, size_t i) {
  for (size_t n; (n = ws_len(s, i)) > 0;) i += n;
  return i;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;  // non-ASCII identifiers, as Python allows
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// jinja2 reads \r\n and \r as \n and, without keep_trailing_newline, drops
// one newline at the very end.
std::string normalize(std::string_view source) {
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize(source)) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;  // the text before the next tag starts a line
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        text(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      const char type = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const bool signed_tag = sign == '-' || sign == '+';
      std::string_view before(src_.data() + pos_, tag - pos_);
      if (sign == '-') {
        before = rstrip(before);
      } else if (sign != '+' && type != '{') {
        before = lstrip_block(before, line_starting);
      }
      text(before);
      pos_ = tag + 2 + (signed_tag ? 1 : 0);
      Result<bool> r = type == '#' ? comment(tag) : (type == '%' ? block(tag) : variable(tag));
      if (!r) return r.error();
      line_starting = *r;
    }
    tokens_.push_back(Token{TokenKind::End, line_at(src_.size()), {}});
    return std::move(tokens_);
  }

 private:
  // The first {{, {% or {# at or after `from`.
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  static std::string_view rstrip(std::string_view s) { return str_strip(s, std::nullopt, StripSide::Right); }

  // lstrip_blocks: spaces and tabs between the start of a line and a block
  // tag go, when nothing else is on the line before the tag.
  static std::string_view lstrip_block(std::string_view s, bool line_starting) {
    const size_t nl = s.rfind('\n');
    const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return s;
    if (l_pos == s.size() || skip_ws(s, l_pos) != s.size()) return s;
    return s.substr(0, l_pos);
  }

  int line_at(size_t pos) {
    // Positions only move forward, so lines are counted incrementally.
    pos = std::min(pos, src_.size());
    if (pos < line_pos_) {
      line_pos_ = 0;
      line_ = 1;
    }
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(line_pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    line_pos_ = pos;
    return line_;
  }

  Error fail(size_t pos, const std::string& message) {
    return Error{std::string("line ") + std::to_string(line_at(pos)) + ": " + message};
  }

  void text(std::string_view s) {
    if (s.empty()) return;
    const size_t start = static_cast<size_t>(s.data() - src_.data());
    tokens_.push_back(Token{TokenKind::Text, line_at(start), std::string(s)});
  }

  void push(TokenKind kind, size_t pos, std::string text = {}) {
    tokens_.push_back(Token{kind, line_at(pos), std::move(text)});
  }

  // After a %} or #}: trim_blocks drops one newline; -%} drops all
  // whitespace; +%} keeps everything. Returns whether the consumed text ends
  // with a newline (the next tag's lstrip then applies from there).
  bool after_block_end(char sign) {
    if (sign == '-') {
      size_t p = pos_;
      pos_ = skip_ws(src_, pos_);
      return pos_ > p && src_[pos_ - 1] == '\n';
    }
    if (sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      return true;
    }
    return false;
  }

  Result<bool> comment(size_t tag) {
    const size_t content = pos_;
    const size_t end = src_.find("#}", content);
    if (end == std::string::npos) return fail(tag, "unterminated comment");
    char sign = '\0';
    if (end > content && (src_[end - 1] == '-' || src_[end - 1] == '+')) sign = src_[end - 1];
    pos_ = end + 2;
    return after_block_end(sign);
  }

  // {% raw %}...{% endraw %}: the body is text, untouched.
  // Returns false when the tag at `tag` is not a raw tag.
  Result<bool> try_raw(size_t tag, bool& is_raw) {
    size_t p = skip_ws(src_, pos_);
    is_raw = false;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return false;
    }
    p = skip_ws(src_, p + 3);
    if (src_.compare(p, 3, "-%}") == 0) {
      p = skip_ws(src_, p + 3);
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;  // jinja2 applies no trim_blocks after {% raw %}
    } else {
      return false;
    }
    is_raw = true;
    const bool body_line_starting = p > 0 && src_[p - 1] == '\n';
    // Find {%[-+]? endraw [-+]?%}.
    for (size_t q = src_.find("{%", p); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      const char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : '\0';
      if (sign != '\0') ++r;
      r = skip_ws(src_, r);
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r = skip_ws(src_, r + 6);
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string_view body(src_.data() + p, q - p);
      if (sign == '-') {
        body = rstrip(body);
      } else if (sign != '+') {
        body = lstrip_block(body, body_line_starting);
      }
      text(body);
      pos_ = r + 2;
      return after_block_end(end_sign);
    }
    return fail(tag, "unterminated raw block (missing {% endraw %})");
  }

  Result<bool> block(size_t tag) {
    bool is_raw = false;
    Result<bool> raw = try_raw(tag, is_raw);
    if (!raw || is_raw) return raw;
    push(TokenKind::BlockBegin, tag);
    return expression(tag, '%');
  }

  Result<bool> variable(size_t tag) {
    push(TokenKind::VarBegin, tag);
    return expression(tag, '}');
  }

  // Tokens up to the closing %} or }}. A closer inside brackets does not
  // count (as in jinja2), so {{ {'a': {'b': 1}} }} works.
  Result<bool> expression(size_t tag, char closer) {
    std::vector<char> brackets;
    while (true) {
      if (pos_ >= src_.size()) {
        return fail(tag, closer == '%' ? "unterminated block tag (missing %})"
                                       : "unterminated expression (missing }})");
      }
      if (brackets.empty()) {
        char sign = '\0';
        size_t p = pos_;
        if (src_[p] == '-' || (src_[p] == '+' && closer == '%')) sign = src_[p++];
        if (p + 1 < src_.size() && src_[p] == closer && src_[p + 1] == '}') {
          push(closer == '%' ? TokenKind::BlockEnd : TokenKind::VarEnd, pos_);
          pos_ = p + 2;
          if (closer == '}') {
            // }} has no trim_blocks; -}} strips the whitespace after it.
            if (sign == '-') return after_block_end('-');
            return false;
          }
          return after_block_end(sign);
        }
      }
      const char c = src_[pos_];
      if (const size_t n = ws_len(src_, pos_); n > 0) {
        pos_ += n;
      } else if (c == '\'' || c == '"') {
        if (auto r = string_literal(); !r) return r.error();
      } else if (is_digit(c)) {
        if (auto r = number(); !r) return r.error();
      } else if (is_name_start(c)) {
        const size_t b = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        push(TokenKind::Name, b, src_.substr(b, pos_ - b));
      } else if (auto r = op(brackets); !r) {
        return r.error();
      }
    }
  }

  Result<void> op(std::vector<char>& brackets) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view t : kTwo) {
      if (src_.compare(pos_, 2, t) == 0) {
        push(TokenKind::Operator, pos_, std::string(t));
        pos_ += 2;
        return {};
      }
    }
    const char c = src_[pos_];
    static constexpr std::string_view kOne = "+-/*%~[](){}<>=.:|,;";
    if (kOne.find(c) == std::string_view::npos) {
      const auto u = static_cast<unsigned char>(c);
      std::string shown = u >= 0x20 && u < 0x7F ? std::string(1, c) : std::string("\\x") + std::to_string(u);
      return fail(pos_, std::string("unexpected character '") + shown + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) return fail(pos_, std::string("unexpected '") + c + "'");
      if (brackets.back() != c) {
        return fail(pos_, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
      }
      brackets.pop_back();
    }
    push(TokenKind::Operator, pos_, std::string(1, c));
    ++pos_;
    return {};
  }

  // Integers (with _ separators, 0x/0o/0b prefixes) and floats (1.5, 1e3).
  Result<void> number() {
    const size_t b = pos_;
    const auto digits = [&](auto&& ok) {
      while (pos_ < src_.size() && (ok(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && ok(src_[pos_ + 1])))) {
        ++pos_;
      }
    };
    const auto strip = [&](size_t from) {
      std::string s;
      for (size_t i = from; i < pos_; ++i) {
        if (src_[i] != '_') s += src_[i];
      }
      return s;
    };
    if (src_[b] == '0' && pos_ + 1 < src_.size() && std::string_view("xXoObB").find(src_[b + 1]) != std::string_view::npos) {
      const char base_char = static_cast<char>(src_[b + 1] | 32);
      const int base = base_char == 'x' ? 16 : (base_char == 'o' ? 8 : 2);
      pos_ += 2;
      const size_t from = pos_;
      digits([&](char c) {
        const int d = is_digit(c) ? c - '0' : ((c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : 99);
        return d < base;
      });
      const std::string s = strip(from);
      if (s.empty()) return fail(b, "invalid number literal");
      errno = 0;
      const unsigned long long v = std::strtoull(s.c_str(), nullptr, base);
      if (errno != 0 || v > static_cast<unsigned long long>(INT64_MAX)) return fail(b, "integer literal too large");
      push(TokenKind::Integer, b);
      tokens_.back().integer = static_cast<int64_t>(v);
      return {};
    }
    digits(is_digit);
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      digits(is_digit);
    }
    if (pos_ < src_.size() && (src_[pos_] | 32) == 'e') {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_digit(src_[p])) {
        is_float = true;
        pos_ = p;
        digits(is_digit);
      }
    }
    const std::string s = strip(b);
    push(is_float ? TokenKind::Float : TokenKind::Integer, b);
    if (is_float) {
      tokens_.back().number = std::strtod(s.c_str(), nullptr);
    } else {
      errno = 0;
      const long long v = std::strtoll(s.c_str(), nullptr, 10);
      if (errno != 0) return fail(b, "integer literal too large");
      tokens_.back().integer = v;
    }
    return {};
  }

  // A quoted string with Python's escapes (jinja2 decodes literals with
  // Python's unicode-escape codec).
  Result<void> string_literal() {
    const size_t b = pos_;
    const char quote = src_[pos_++];
    std::string out;
    // \ud83e\udd99 (a surrogate pair) is one character; a lone surrogate,
    // which UTF-8 cannot hold, becomes U+FFFD.
    uint32_t high_surrogate = 0;
    const auto flush = [&] {
      if (high_surrogate != 0) tokenizer::utf8_append(out, 0xFFFD);
      high_surrogate = 0;
    };
    const auto put_cp = [&](uint32_t cp) {
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        flush();
        high_surrogate = cp;
        return;
      }
      if (cp >= 0xDC00 && cp <= 0xDFFF) {
        cp = high_surrogate != 0 ? 0x10000 + ((high_surrogate - 0xD800) << 10) + (cp - 0xDC00) : 0xFFFD;
        high_surrogate = 0;
      }
      flush();
      tokenizer::utf8_append(out, cp > 0x10FFFF ? 0xFFFD : cp);
    };
    while (true) {
      if (pos_ >= src_.size()) return fail(b, "unterminated string");
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        flush();
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) return fail(b, "unterminated string");
      const char e = src_[pos_++];
      const auto hex = [&](int n) -> Result<uint32_t> {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          const char h = pos_ < src_.size() ? static_cast<char>(src_[pos_] | 32) : '\0';
          if (!is_digit(h) && !(h >= 'a' && h <= 'f')) return fail(b, "truncated \\x, \\u or \\U escape in string");
          v = v * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : h - 'a' + 10);
          ++pos_;
        }
        return v;
      };
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': put_cp('\\'); break;
        case '\'': put_cp('\''); break;
        case '"': put_cp('"'); break;
        case 'a': put_cp(7); break;
        case 'b': put_cp(8); break;
        case 'f': put_cp(12); break;
        case 'n': put_cp('\n'); break;
        case 'r': put_cp('\r'); break;
        case 't': put_cp('\t'); break;
        case 'v': put_cp(11); break;
        case 'x':
        case 'u':
        case 'U': {
          Result<uint32_t> v = hex(e == 'x' ? 2 : (e == 'u' ? 4 : 8));
          if (!v) return v.error();
          put_cp(*v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k) {
              v = v * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            }
            put_cp(v);
          } else {
            // Python keeps unknown escapes as written.
            flush();
            out += '\\';
            out += e;
          }
      }
    }
    flush();
    push(TokenKind::String, b, std::move(out));
    return {};
  }

  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0;
  int line_ = 1;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace quip::chat::jinja
