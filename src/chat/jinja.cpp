#include "chat/jinja.h"

#include "chat/jinja_parser.h"

namespace quip::chat::jinja {

Result<Template> Template::parse(std::string_view source) {
  Result<std::shared_ptr<const ParsedTemplate>> parsed = jinja::parse(source);
  if (!parsed) return parsed.error();
  Template t;
  t.parsed_ = std::move(*parsed);
  return t;
}

Result<std::string> Template::render(const std::vector<std::pair<std::string, Value>>& variables,
                                     const Limits& limits) const {
  auto root = std::make_shared<Scope>();
  for (const auto& [name, value] : variables) root->vars[name] = value;
  Evaluator ev(limits, root);
  Result<std::string> out = ev.render(parsed_->body);
  // The root scope may hold macros whose closures point back at it (weakly),
  // and values the template made; drop them before the evaluator goes.
  root->vars.clear();
  return out;
}

}  // namespace quip::chat::jinja
