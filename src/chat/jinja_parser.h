// Parses Jinja template source into statements (see jinja_ast.h), following
// jinja2's grammar and operator precedence, with the loop controls extension
// (break, continue) and Hugging Face's {% generation %} block.
//
// Not supported (parse errors naming the tag): template inheritance and
// inclusion (extends, block, include, import, from), recursive for loops.
#pragma once

#include <memory>
#include <string_view>

#include "base/result.h"
#include "chat/jinja_ast.h"

namespace quip::chat::jinja {

struct ParsedTemplate {
  Body body;
};

// Nesting of blocks and expressions beyond this is refused: the parser and
// the evaluator recurse once per level.
inline constexpr int kMaxParseDepth = 200;

// Errors name the line: "line 12: unexpected 'endfor'".
Result<std::shared_ptr<const ParsedTemplate>> parse(std::string_view source);

}  // namespace quip::chat::jinja
