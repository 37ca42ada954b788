// Formal grammars for constrained output: llama.cpp's GBNF, compiled to
// rules over bytes.
//
// GBNF (llama.cpp's grammars/README.md): `name ::= alternatives` rules,
// "literals" with \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH escapes, character
// classes [a-z] and [^...] over Unicode code points, `.` for any character,
// grouping, `|`, and the repetitions * + ? {m} {m,} {m,n}; `#` comments.
// The rule `root` is the whole output. Token references (`<[id]>`,
// `<think>`) are not supported and are an error that says so.
//
// Terminals are compiled to UTF-8 byte sequences, so the grammar is over
// bytes: a token boundary that splits a character is matched exactly, with
// no special case for partial characters. Only valid UTF-8 is accepted.
//
// Thread safety: a Grammar is immutable once compiled; Matchers are not shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::grammar {

// A terminal: one byte in [lo, hi].
struct ByteRange {
  uint8_t lo, hi;
};

// One symbol of an alternative: a byte class or a reference to a rule.
struct Symbol {
  bool is_rule = false;
  uint32_t rule = 0;             // is_rule: the rule's index
  std::vector<ByteRange> bytes;  // !is_rule: the bytes it matches (one byte)
};

using Alternative = std::vector<Symbol>;  // empty: matches the empty string

struct Rule {
  std::string name;  // as written, or "<parent>#<n>" for what a group or repetition became
  std::vector<Alternative> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  uint32_t root = 0;
};

// Compiles GBNF text. Errors are one line naming the rule and the position
// ("line 3, column 7: rule 'value': unknown rule 'valu'"): undefined rules,
// a missing root, left recursion (which a top-down matcher cannot run),
// repetition bounds out of order or above 10000, invalid UTF-8 or escapes,
// token references.
Result<std::shared_ptr<const Grammar>> compile_gbnf(std::string_view text,
                                                    std::string_view root = "root");

// Whether the whole of `text` is a sentence of `grammar`.
bool matches(const Grammar& grammar, std::string_view text);

// Whether `text` can be continued into a sentence (or is one).
bool is_prefix(const Grammar& grammar, std::string_view text);

}  // namespace quip::grammar
