// The fixed GBNF rules that json_schema_to_gbnf's grammars share: JSON's
// primitives (any value, string, number, ...), bounded white space, and the
// contents of the string formats it supports.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace quip::grammar {

// Whether `name` is one of the built-in rules (schema-made rules avoid
// these names).
bool is_builtin_rule(std::string_view name);

// The built-in rule that holds the contents (between the quotes) of strings
// of `format`, or "" when the format is not supported.
std::string_view format_rule(std::string_view format);

// The GBNF of the built-in rules in `used` and those they refer to, one
// rule a line. PRECONDITIONS: every name in `used` is a built-in rule.
std::string builtin_rules(const std::set<std::string>& used);

}  // namespace quip::grammar
