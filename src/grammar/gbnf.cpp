// GBNF text -> Grammar (grammar.h). A recursive-descent parser over the
// text that emits rules as it goes: groups and repetitions become rules of
// their own, literals become one symbol per byte, and character classes
// become the UTF-8 byte sequences of their code points.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/text.h"
#include "grammar/grammar.h"
#include "tokenizer/unicode.h"

namespace quip::grammar {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kMaxRepetition = 10000;
// Symbols in all rules: repetitions copy their item, and nested ones
// multiply; a grammar past this is refused rather than filling memory.
constexpr size_t kMaxSymbols = size_t{1} << 22;

struct CodeRange {
  uint32_t lo, hi;
};

// The byte-range sequences whose UTF-8 strings are exactly the code points
// of [lo, hi] (no surrogates in it), as in Russ Cox's "Regular Expression
// Matching in the Wild" (RE2's UTF-8 range compilation): split the range
// until every byte position varies independently over one range.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteRange>>& out) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  for (uint32_t end : kLengthEnds) {
    if (lo <= end && hi > end) {
      utf8_sequences(lo, end, out);
      utf8_sequences(end + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  std::string a, b;
  tokenizer::utf8_append(a, lo);
  tokenizer::utf8_append(b, hi);
  const size_t n = a.size();
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::vector<ByteRange> seq;
  for (size_t i = 0; i < n; ++i)
    seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  out.push_back(std::move(seq));
}

// Sorted, merged, without surrogates (which UTF-8 cannot hold).
std::vector<CodeRange> normalize(std::vector<CodeRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodeRange& x, const CodeRange& y) { return x.lo < y.lo; });
  std::vector<CodeRange> merged;
  for (const CodeRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  std::vector<CodeRange> out;
  for (const CodeRange& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<CodeRange> complement(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const CodeRange& r : normalize(ranges)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize(out);
}

struct ParseError {
  size_t offset;
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<std::shared_ptr<const Grammar>> run(std::string_view root_name) {
    try {
      parse_rules();
      return finish(root_name);
    } catch (const ParseError& e) {
      return Error{where(e.offset) + e.message};
    }
  }

 private:
  // ---- the text ----

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  [[noreturn]] void fail(std::string message) const { fail_at(pos_, std::move(message)); }
  [[noreturn]] void fail_at(size_t offset, std::string message) const {
    if (!rule_name_.empty()) message = "rule '" + rule_name_ + "': " + message;
    throw ParseError{offset, std::move(message)};
  }

  std::string where(size_t offset) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
  }

  // Spaces, tabs and comments; newlines too where `newlines` (between
  // rules, inside parentheses, after `|`).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }

  std::string parse_name() {
    const size_t begin = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == begin) fail("expected a rule name");
    return std::string(text_.substr(begin, pos_ - begin));
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  // One character of a literal or class, escapes decoded, as a code point.
  uint32_t parse_char() {
    const size_t begin = pos_;
    if (peek() == '\\') {
      ++pos_;
      const char c = peek();
      ++pos_;
      uint32_t v = 0;
      switch (c) {
        case 'x': v = parse_hex(2); break;
        case 'u': v = parse_hex(4); break;
        case 'U': v = parse_hex(8); break;
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/': return static_cast<uint8_t>(c);
        default: fail_at(begin, "unknown escape '\\" + printable(std::string(1, c)) + "'");
      }
      if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF))
        fail_at(begin, "escape is not a Unicode scalar value");
      return v;
    }
    const tokenizer::Utf8Char c = tokenizer::utf8_decode(text_, pos_);
    if (c.cp == tokenizer::kInvalidCodepoint) fail("invalid UTF-8");
    pos_ += c.len;
    return c.cp;
  }

  // ---- rules ----

  // The rule called `name`, named at `offset` (for errors) if new.
  uint32_t rule_index(const std::string& name, size_t offset) {
    const auto [it, added] = index_.try_emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.push_back({name, {}});
      defined_.push_back(false);
      first_use_.push_back(offset);
      first_user_.push_back(rule_name_);
    }
    return it->second;
  }

  uint32_t new_rule(std::vector<Alternative> alternatives) {
    // '#' cannot be in a name the user writes, so the two never collide.
    const std::string name = rule_name_ + "#" + std::to_string(++generated_);
    const uint32_t index = rule_index(name, pos_);
    generated_names_.insert(index);
    rules_[index].alternatives = std::move(alternatives);
    defined_[index] = true;
    return index;
  }

  static Symbol ref(uint32_t rule) { return Symbol{.is_rule = true, .rule = rule, .bytes = {}}; }
  static Symbol byte(uint8_t b) { return Symbol{.is_rule = false, .rule = 0, .bytes = {{b, b}}}; }

  // The code points of `ranges` as one symbol: a byte class when they are
  // all ASCII, else a rule of their UTF-8 sequences (shared by equal classes).
  Symbol class_symbol(const std::vector<CodeRange>& ranges) {
    std::vector<std::vector<ByteRange>> seqs;
    for (const CodeRange& r : ranges) utf8_sequences(r.lo, r.hi, seqs);
    if (seqs.empty()) fail("the character class matches nothing");
    std::vector<ByteRange> single;
    std::vector<Alternative> alternatives;
    for (auto& seq : seqs) {
      if (seq.size() == 1) {
        single.push_back(seq[0]);
        continue;
      }
      Alternative alt;
      for (const ByteRange& b : seq)
        alt.push_back(Symbol{.is_rule = false, .rule = 0, .bytes = {b}});
      alternatives.push_back(std::move(alt));
    }
    if (alternatives.empty()) return Symbol{.is_rule = false, .rule = 0, .bytes = single};
    if (!single.empty())
      alternatives.insert(alternatives.begin(),
                          {Symbol{.is_rule = false, .rule = 0, .bytes = single}});
    std::string key;
    for (const CodeRange& r : ranges)
      key += std::to_string(r.lo) + "-" + std::to_string(r.hi) + ",";
    if (const auto it = classes_.find(key); it != classes_.end()) return ref(it->second);
    const uint32_t index = new_rule(std::move(alternatives));
    classes_.emplace(key, index);
    return ref(index);
  }

  void parse_rules() {
    skip_space(true);
    while (!at_end()) {
      const size_t begin = pos_;
      const std::string name = parse_name();
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after the rule name '" + name + "'");
      pos_ += 3;
      const uint32_t index = rule_index(name, begin);
      if (defined_[index]) fail_at(begin, "rule '" + name + "' is defined twice");
      defined_[index] = true;
      rule_name_ = name;
      generated_ = 0;
      skip_space(true);
      rules_[index].alternatives = parse_alternatives(false);
      if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected the end of the line");
      rule_name_.clear();
      skip_space(true);
    }
  }

  std::vector<Alternative> parse_alternatives(bool nested) {
    std::vector<Alternative> alternatives;
    alternatives.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested));
    }
    return alternatives;
  }

  Alternative parse_sequence(bool nested) {
    Alternative seq;
    size_t last_begin = seq.size();  // where the last item's symbols start
    bool have_item = false;
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_begin = seq.size();
        while (peek() != '"') {
          if (at_end() || peek() == '\n') fail("the literal is not closed");
          std::string bytes;
          tokenizer::utf8_append(bytes, parse_char());
          for (char b : bytes) seq.push_back(byte(static_cast<uint8_t>(b)));
        }
        ++pos_;
        have_item = true;
      } else if (c == '[') {
        ++pos_;
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        std::vector<CodeRange> ranges;
        while (peek() != ']') {
          if (at_end() || peek() == '\n') fail("the character class is not closed");
          const size_t at = pos_;
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail_at(at, "the range's end comes before its start");
          }
          ranges.push_back({lo, hi});
        }
        ++pos_;
        last_begin = seq.size();
        seq.push_back(class_symbol(negated ? complement(ranges) : normalize(ranges)));
        have_item = true;
      } else if (c == '.') {
        ++pos_;
        last_begin = seq.size();
        seq.push_back(class_symbol(complement({})));
        have_item = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        auto inner = parse_alternatives(true);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
        last_begin = seq.size();
        seq.push_back(ref(new_rule(std::move(inner))));
        have_item = true;
      } else if (c == '<' || (c == '!' && peek(1) == '<')) {
        fail("token references (<...>) are not supported; write the text instead");
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (text_.substr(pos_, 3) == "::=")
          fail_at(at, "expected the end of the line before the rule '" + name + "'");
        pos_ = at + name.size();
        last_begin = seq.size();
        seq.push_back(ref(rule_index(name, at)));
        have_item = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) fail(std::string("'") + c + "' follows nothing it could repeat");
        repeat(seq, last_begin);
        have_item = false;  // "a**" is an error, as in llama.cpp
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  // Applies the repetition at pos_ to seq[last_begin...], llama.cpp's way:
  // x{m,n} is m copies of x, then n-m nested optional ones; x{m,} is m
  // copies and a right-recursive x*.
  void repeat(Alternative& seq, size_t last_begin) {
    const Alternative item(seq.begin() + static_cast<std::ptrdiff_t>(last_begin), seq.end());
    seq.resize(last_begin);
    uint32_t min = 0, max = 0;
    bool unbounded = false;
    const char c = peek();
    ++pos_;
    if (c == '*') {
      unbounded = true;
    } else if (c == '+') {
      min = 1;
      unbounded = true;
    } else if (c == '?') {
      max = 1;
    } else {
      skip_space(false);
      min = parse_count();
      skip_space(false);
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        if (peek() == '}')
          unbounded = true;
        else
          max = parse_count();
        skip_space(false);
      } else {
        max = min;
      }
      if (peek() != '}') fail("expected '}'");
      ++pos_;
      if (!unbounded && max < min) fail("the repetition's maximum is below its minimum");
    }
    symbols_ += static_cast<size_t>(max > min ? max : min) * std::max<size_t>(item.size(), 1);
    if (symbols_ > kMaxSymbols)
      fail("the grammar is too large (repetitions copy what they repeat)");
    for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (unbounded) {
      // star ::= item star | (empty)
      const uint32_t star = new_rule({});
      Alternative again = item;
      again.push_back(ref(star));
      rules_[star].alternatives = {std::move(again), {}};
      seq.push_back(ref(star));
    } else if (max > min) {
      // opt_k ::= item opt_(k-1) | (empty), nested max-min deep.
      uint32_t inner = 0;
      bool have_inner = false;
      for (uint32_t i = min; i < max; ++i) {
        Alternative alt = item;
        if (have_inner) alt.push_back(ref(inner));
        inner = new_rule({std::move(alt), {}});
        have_inner = true;
      }
      seq.push_back(ref(inner));
    }
  }

  uint32_t parse_count() {
    const size_t begin = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepetition)
        fail_at(begin,
                "repetitions above " + std::to_string(kMaxRepetition) + " are not supported");
      ++pos_;
    }
    if (pos_ == begin) fail("expected a number");
    return static_cast<uint32_t>(v);
  }

  // ---- checks ----

  Result<std::shared_ptr<const Grammar>> finish(std::string_view root_name) {
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (defined_[i]) continue;
      rule_name_ = first_user_[i];
      fail_at(first_use_[i], "unknown rule '" + rules_[i].name + "'");
    }
    const auto root = index_.find(std::string(root_name));
    if (root == index_.end())
      fail_at(0, "the grammar has no rule '" + std::string(root_name) + "'");
    check_left_recursion();
    auto grammar = std::make_shared<Grammar>();
    grammar->rules = std::move(rules_);
    grammar->root = root->second;
    return std::shared_ptr<const Grammar>(std::move(grammar));
  }

  // A rule that can reach itself without consuming a byte would send a
  // top-down matcher round forever (x ::= x "a", or (y?)* where y can be
  // empty): refused, as llama.cpp refuses left recursion.
  void check_left_recursion() {
    const size_t n = rules_.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Alternative& alt : rules_[r].alternatives) {
          if (std::all_of(alt.begin(), alt.end(),
                          [&](const Symbol& s) { return s.is_rule && nullable[s.rule]; })) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s where s can come first in r.
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Alternative& alt : rules_[r].alternatives) {
        for (const Symbol& s : alt) {
          if (!s.is_rule) break;
          first[r].push_back(s.rule);
          if (!nullable[s.rule]) break;
        }
      }
    }
    // Depth-first search for a cycle, without recursion (grammars may be deep).
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    for (size_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      std::vector<std::pair<uint32_t, size_t>> stack{{static_cast<uint32_t>(start), 0}};
      color[start] = 1;
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        if (next == first[r].size()) {
          color[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t s = first[r][next++];
        if (color[s] == 1) {
          // Name the rule as the user wrote it, not a group inside it.
          std::string name = rules_[s].name;
          for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
            if (defined_by_user(it->first)) {
              name = rules_[it->first].name;
              break;
            }
          }
          throw ParseError{first_use_[s], "rule '" + name +
                                              "' is left-recursive (it can reach itself without "
                                              "matching a character)"};
        }
        if (color[s] == 0) {
          color[s] = 1;
          stack.push_back({s, 0});
        }
      }
    }
  }

  bool defined_by_user(uint32_t r) const { return generated_names_.count(r) == 0; }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<Rule> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;        // where each rule was first named, for errors
  std::vector<std::string> first_user_;  // and in which rule
  std::map<std::string, uint32_t> index_;
  std::map<std::string, uint32_t> classes_;
  std::set<uint32_t> generated_names_;
  std::string rule_name_;  // the rule being parsed, for errors and generated names
  int generated_ = 0;
  size_t symbols_ = 0;  // copied by repetitions so far
};

}  // namespace

Result<std::shared_ptr<const Grammar>> compile_gbnf(std::string_view text, std::string_view root) {
  return Parser(text).run(root);
}

}  // namespace quip::grammar
