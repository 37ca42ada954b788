// A Jinja template engine for chat templates: the subset of jinja2 that
// Hugging Face tokenizer.chat_template files use, rendered the way
// transformers' apply_chat_template renders them (see jinja_lexer.h for the
// whitespace settings, jinja_value.h for the Python value semantics).
//
// A Template is immutable after parse(), cheap to copy (it shares the
// parsed statements) and safe to render from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_value.h"

namespace quip::chat::jinja {

struct ParsedTemplate;

class Template {
 public:
  // Syntax errors name the line: "line 12: unexpected 'endfor'".
  static Result<Template> parse(std::string_view source);

  // Renders with `variables` as the template's top-level names, after which
  // come the built-in globals (range, namespace, dict, joiner). The template
  // may modify lists and dicts among the variables (append, update): pass
  // values made for this render. Errors name the line.
  Result<std::string> render(const std::vector<std::pair<std::string, Value>>& variables,
                             const Limits& limits = {}) const;

 private:
  Template() = default;
  std::shared_ptr<const ParsedTemplate> parsed_;
};

}  // namespace quip::chat::jinja
