// Splits a Jinja template into tokens, the way jinja2's lexer does with the
// settings Hugging Face uses: trim_blocks and lstrip_blocks on, the trailing
// newline dropped, \r\n and \r read as \n.
//
// Whitespace control is applied here, so the parser only sees the text that
// will be printed: {%- / -%} strip all whitespace on that side, a newline
// right after %} or #} is dropped (unless +%}), and spaces or tabs before a
// block or comment tag at the start of a line are dropped (unless {%+).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::chat::jinja {

enum class TokenKind : uint8_t {
  Text,        // template text to print, whitespace control applied
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifiers and keywords (if, in, not, ...)
  String,      // a string literal, escapes resolved
  Integer,
  Float,
  Operator,    // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  End,         // end of the template
};

struct Token {
  TokenKind kind;
  int line;          // 1-based line of the token's first character
  std::string text;  // Text, Name, String (decoded), Operator
  int64_t integer = 0;
  double number = 0;
};

// Errors name the line: "line 3: unterminated string".
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace quip::chat::jinja
