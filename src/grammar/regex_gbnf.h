// JSON Schema's `pattern` keyword compiled to GBNF.
//
// A pattern is an ECMA-262 regular expression that a string must contain
// somewhere (JSON Schema 2020-12, validation section 6.3.3: an unanchored
// search); `^` and `$` anchor it. The subset supported: literal characters,
// escapes (\t \n \r \f \v \0 \xHH \uHHHH and escaped punctuation), `.`,
// classes `[...]` and `[^...]` with ranges, \d \w \s and their negations,
// groups `(...)`, `(?:...)` and `(?<name>...)`, `|`, the repetitions
// `* + ? {m} {m,} {m,n}` (lazy forms match the same strings), and `^` / `$`
// at the start / end of the pattern or of a top-level alternative.
// Everything else (lookaround, backreferences, word boundaries, flags,
// Unicode property escapes) is an error naming it.
//
// Semantics are ECMA-262's without flags: \d \w are ASCII, \s is ECMA's
// white space list, `.` is any character but \n \r U+2028 U+2029.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace quip::grammar {

// A GBNF expression matching the contents of a JSON string literal (as JSON
// spells them, between the quotes) whose decoded text `pattern` finds.
// Characters from a class, `.` or an escape like \d match in every JSON
// spelling; a literal character matches as JSON writes it plainly (a model
// writes "a", not "\u0061"). `any_char` names a rule that matches one JSON
// string character: the unanchored ends repeat it. Returns "" when the
// contents must be empty. Errors are one line naming the construct and its
// offset in the pattern ("lookahead is not supported at offset 3").
// `cost` grows as gbnf_repeat's does.
Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view any_char,
                                  uint64_t& cost);

}  // namespace quip::grammar
