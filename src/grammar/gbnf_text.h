// Pieces of GBNF text (grammar.h's dialect) for the JSON Schema converter:
// quoting, character classes, the JSON encodings of a set of characters,
// bounded repetition and integer ranges. Every function returns one GBNF
// expression (alternatives joined by `|` are wrapped in parentheses, so a
// result can be placed in a sequence as it is).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::grammar {

struct CodeRange {
  uint32_t lo, hi;  // inclusive
};

// A set of Unicode scalar values: code points 0..0x10FFFF without the
// surrogates (which no UTF-8 text and no JSON string character can be).
class CharSet {
 public:
  CharSet() = default;
  static CharSet of(uint32_t lo, uint32_t hi);
  static CharSet all() { return of(0, kMaxCodePoint); }

  // Adds [lo, hi], less any surrogates in it. PRECONDITIONS: lo <= hi.
  void add(uint32_t lo, uint32_t hi);
  void add(const CharSet& other);
  CharSet complement() const;
  CharSet intersect(uint32_t lo, uint32_t hi) const;
  bool contains(uint32_t c) const;
  bool empty() const { return ranges_.empty(); }
  // Sorted, disjoint and not adjacent.
  const std::vector<CodeRange>& ranges() const { return ranges_; }

  static constexpr uint32_t kMaxCodePoint = 0x10FFFF;

 private:
  std::vector<CodeRange> ranges_;
};

// The most a GBNF repetition bound may be (compile_gbnf refuses more).
inline constexpr uint64_t kMaxRepeat = 10000;

// The most digits of a JSON integer (and of each part of a number) that the
// grammars allow: a model cannot write digits forever, and 16 digits hold
// every integer a double represents exactly.
inline constexpr int kMaxDigits = 16;

// A GBNF string literal matching exactly the UTF-8 bytes of `text`.
std::string gbnf_literal(std::string_view text);

// A GBNF character class matching one character of `set`.
// PRECONDITIONS: !set.empty().
std::string gbnf_class(const CharSet& set);

// Every way a JSON string (between its quotes) can spell one character of
// `set`: the raw character where JSON allows it, the short escapes (\" \\ \/
// \b \f \n \r \t), and \uXXXX in either case, with surrogate pairs for
// characters above U+FFFF. PRECONDITIONS: !set.empty().
std::string json_chars(const CharSet& set);

// Four hex digits (either case) whose value is in `values`: sorted, disjoint
// ranges within 0..0xFFFF (surrogates allowed: the halves of a pair).
// PRECONDITIONS: values is not empty.
std::string hex4_in(const std::vector<CodeRange>& values);

// `item` (a GBNF expression) repeated between `min` and `max` times (no
// `max`: unbounded). Counts above kMaxRepeat are split into nested
// repetitions with the same language; above kMaxRepeat^2 it is an error.
// Returns "" (the empty sequence) when max is 0. Adds to `cost` a bound on
// the symbols compile_gbnf will copy for it (it expands x{m,n} into n
// copies), so that callers can refuse a grammar the compiler would find too
// large.
Result<std::string> gbnf_repeat(std::string_view item, uint64_t min, std::optional<uint64_t> max,
                                uint64_t& cost);

// The JSON integers (no exponent, no fraction) in [lo, hi], each bound
// defaulting to the most kMaxDigits digits allow.
// PRECONDITIONS: the range, after clamping, is not empty.
std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// The largest integer of kMaxDigits digits.
inline constexpr int64_t kMaxInteger = 9'999'999'999'999'999;

// `expr` wrapped in parentheses unless it is already one symbol.
std::string gbnf_group(std::string_view expr);

// Decodes UTF-8 into code points; false when it is malformed (what
// base's utf8_sequence_length refuses). Encoding: tokenizer::utf8_append.
bool decode_utf8(std::string_view s, std::vector<uint32_t>& out);

}  // namespace quip::grammar
