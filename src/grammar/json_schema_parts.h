// Helpers of json_schema.cpp that need no converter state: keyword checks,
// JSON pointers, rule names, and the GBNF of fixed JSON values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "base/result.h"

namespace quip::grammar {

using Json = nlohmann::ordered_json;

// Where a schema is, for messages: its JSON pointer, or "the root".
std::string where(const std::string& ptr);

// `key` as one JSON pointer token (RFC 6901: ~ as ~0, / as ~1).
std::string pointer_token(std::string_view key);

// A GBNF rule name ([a-zA-Z0-9-]+, at most 48 characters) made from `hint`.
std::string rule_name(std::string_view hint);

// Checks that every keyword of the schema object `s` (at `ptr`) is one the
// converter knows and that its value has the right kind ("keyword
// 'required' at /a must be an array of strings").
Result<void> check_keywords(const Json& s, const std::string& ptr, bool at_root);

// The names of `type` (all seven when it is absent), checked.
Result<std::set<std::string>> allowed_types(const Json& s, const std::string& ptr);

// Whether the JSON value `v` has one of `types` (1.0 is an integer).
bool has_type(const Json& v, const std::set<std::string>& types);

// A GBNF expression for `v` written as JSON plainly, with the white space
// rule `ws` where json_schema.h allows it (`uses_ws` says whether it did).
// Errors for values nested too deeply.
Result<std::string> json_literal(const Json& v, int depth, bool& uses_ws);

// A count keyword's value. PRECONDITIONS: check_keywords passed.
uint64_t count_value(const Json& v);

// The least (`lower`) or greatest integer that a bound keyword's value
// allows, clamped well beyond kMaxInteger. PRECONDITIONS: v is a number.
int64_t integer_bound(const Json& v, bool lower, bool exclusive);

// The JSON pointer that a `$ref` within the document names ("#/$defs/a"
// gives "/$defs/a", "#" gives ""), %-escapes decoded.
Result<std::string> ref_pointer(const std::string& ref);

// What `pointer` points to in `root`.
Result<const Json*> resolve_pointer(const Json& root, const std::string& pointer);

}  // namespace quip::grammar
