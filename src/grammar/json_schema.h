// JSON Schema (draft 2020-12) converted to a GBNF grammar (grammar.h's
// dialect) of the JSON texts the schema accepts: `quip --json-schema`.
//
// Supported: `type` (one name or a list), `enum`, `const`, `anyOf`, `oneOf`
// (its branches are joined like anyOf's: a text that two branches accept is
// not refused, so give oneOf disjoint branches), `allOf` with one schema,
// `$ref` to "#" or a JSON pointer within the document (`$defs`,
// `definitions`, recursion allowed), objects (`properties`, `required`,
// `additionalProperties`), arrays (`items`, `prefixItems`, `minItems`,
// `maxItems`, `uniqueItems: false`), strings (`minLength`, `maxLength`,
// `pattern` as regex_gbnf.h describes, `format` date, time, date-time, uuid,
// email), integer bounds (`minimum`, `maximum`, `exclusiveMinimum`,
// `exclusiveMaximum`, exact), and the annotations that constrain nothing
// (title, description, $schema, $id at the root, $comment, examples,
// default, readOnly, writeOnly, deprecated). Every other keyword, and every
// keyword with a value of the wrong kind, is an error: a schema is never
// half applied.
//
// The texts the grammar allows are a subset of those the schema accepts,
// written one way where JSON allows several:
//   - white space only after `{ [ , :` and before `} ]`, one space or a
//     newline and up to 20 spaces or tabs each (a model cannot pad forever);
//   - properties in the order of `properties` (then those `required` names
//     but does not describe, then additional ones), each at most once;
//   - integers without fraction or exponent, at most 16 digits; numbers with
//     at most 16 digits in each part and 3 in the exponent;
//   - `enum`, `const` and property names spelled as JSON writes them
//     plainly (no needless \u escapes), objects in them in their key order;
//   - any other string in every JSON spelling, lengths counted in characters
//     (code points; a surrogate pair is one); lone surrogates are refused.
// Additional property names are checked against the described ones after
// decoding, so "\u0061" cannot slip past a described "a".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"

namespace quip::grammar {

// The GBNF of the JSON texts that `schema` accepts; its start rule is
// `root`. Errors are one line naming the keyword and where it is (a JSON
// pointer): "unsupported keyword 'patternProperties' at /properties/tags".
// The ordered form keeps the order of `properties`; nlohmann::json sorts
// object keys, so with it properties come in name order.
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);

}  // namespace quip::grammar
