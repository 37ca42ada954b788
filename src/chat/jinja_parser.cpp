#include "chat/jinja_parser.h"

#include "chat/jinja_parser_internal.h"

namespace quip::chat::jinja {

std::string Parser::describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End: return "end of template";
    case TokenKind::VarBegin: return "'{{'";
    case TokenKind::VarEnd: return "'}}'";
    case TokenKind::BlockBegin: return "'{%'";
    case TokenKind::BlockEnd: return "'%}'";
    case TokenKind::Text: return "template text";
    case TokenKind::String: return "string";
    case TokenKind::Integer:
    case TokenKind::Float: return "number";
    default: return std::string("'") + t.text + "'";
  }
}

Error Parser::fail(const std::string& message) const {
  return Error{std::string("line ") + std::to_string(cur().line) + ": " + message};
}

Error Parser::unexpected() const { return fail(std::string("unexpected ") + describe(cur())); }

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  advance();
  return true;
}

Result<void> Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) return fail(std::string("expected '") + std::string(op) + "', got " + describe(cur()));
  return {};
}

Result<std::string> Parser::expect_name() {
  if (cur().kind != TokenKind::Name) return fail(std::string("expected a name, got ") + describe(cur()));
  std::string n = cur().text;
  advance();
  return n;
}

Result<void> Parser::expect_block_end() {
  if (cur().kind != TokenKind::BlockEnd) return fail(std::string("expected '%}', got ") + describe(cur()));
  advance();
  return {};
}

Result<Body> Parser::parse_template() {
  Body body;
  Result<std::string> end = parse_body(body, {}, "", 0);
  if (!end) return end.error();
  return body;
}

namespace {

bool is_end_tag(std::string_view name) {
  return name.starts_with("end") || name == "else" || name == "elif";
}

}  // namespace

Result<std::string> Parser::parse_body(Body& body, std::initializer_list<std::string_view> ends,
                                       std::string_view opened, int opened_line) {
  while (true) {
    const Token& t = cur();
    switch (t.kind) {
      case TokenKind::End:
        if (ends.size() == 0) return std::string();
        return fail(std::string("unexpected end of template: '") + std::string(opened) + "' from line " +
                    std::to_string(opened_line) + " is not closed (expected '" +
                    std::string(*ends.begin()) + "')");
      case TokenKind::Text:
        body.push_back(std::make_unique<TextStmt>(t.line, t.text));
        advance();
        break;
      case TokenKind::VarBegin: {
        const int line = t.line;
        advance();
        Result<ExprPtr> e = parse_tuple(true);
        if (!e) return e.error();
        if (cur().kind != TokenKind::VarEnd) return fail(std::string("expected '}}', got ") + describe(cur()));
        advance();
        body.push_back(std::make_unique<OutputStmt>(line, std::move(*e)));
        break;
      }
      case TokenKind::BlockBegin: {
        advance();
        if (cur().kind == TokenKind::Name) {
          for (std::string_view e : ends) {
            if (cur().text == e) {
              std::string name = cur().text;
              advance();
              return name;
            }
          }
          if (is_end_tag(cur().text)) return unexpected();
        }
        Result<StmtPtr> s = parse_statement();
        if (!s) return s.error();
        if (*s) body.push_back(std::move(*s));
        break;
      }
      default: return unexpected();
    }
  }
}

Result<StmtPtr> Parser::parse_statement() {
  DepthGuard guard(depth_);
  if (auto d = check_depth(); !d) return d.error();
  if (cur().kind != TokenKind::Name) return fail(std::string("expected a tag name, got ") + describe(cur()));
  const std::string tag = cur().text;
  const int line = cur().line;
  advance();
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "with") return parse_with(line, false);
  if (tag == "generation") return parse_with(line, true);
  if (tag == "do") {
    Result<ExprPtr> e = parse_tuple(true);
    if (!e) return e.error();
    if (auto r = expect_block_end(); !r) return r.error();
    return StmtPtr(std::make_unique<DoStmt>(line, std::move(*e)));
  }
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return Error{std::string("line ") + std::to_string(line) + ": '" + tag + "' outside a for loop"};
    if (auto r = expect_block_end(); !r) return r.error();
    return StmtPtr(std::make_unique<LoopControlStmt>(line, tag == "break" ? StmtKind::Break : StmtKind::Continue));
  }
  if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" || tag == "block") {
    return Error{std::string("line ") + std::to_string(line) + ": '" + tag + "' is not supported in chat templates"};
  }
  return Error{std::string("line ") + std::to_string(line) + ": unknown tag '" + tag + "'"};
}

Result<StmtPtr> Parser::parse_if(int line) {
  auto stmt = std::make_unique<IfStmt>(line);
  while (true) {
    Result<ExprPtr> test = parse_tuple(false);
    if (!test) return test.error();
    if (auto r = expect_block_end(); !r) return r.error();
    Body body;
    Result<std::string> end = parse_body(body, {"endif", "elif", "else"}, "if", line);
    if (!end) return end.error();
    stmt->branches.emplace_back(std::move(*test), std::move(body));
    if (*end == "elif") continue;
    if (*end == "else") {
      if (auto r = expect_block_end(); !r) return r.error();
      Result<std::string> e2 = parse_body(stmt->otherwise, {"endif"}, "if", line);
      if (!e2) return e2.error();
    }
    if (auto r = expect_block_end(); !r) return r.error();
    return StmtPtr(std::move(stmt));
  }
}

Result<StmtPtr> Parser::parse_for(int line) {
  auto stmt = std::make_unique<ForStmt>(line);
  Result<Target> target = parse_target(false, true);
  if (!target) return target.error();
  stmt->target = std::move(*target);
  if (!skip_name("in")) return fail(std::string("expected 'in' in for loop, got ") + describe(cur()));
  Result<ExprPtr> iter = parse_tuple(false);
  if (!iter) return iter.error();
  stmt->iter = std::move(*iter);
  if (skip_name("if")) {
    Result<ExprPtr> filter = parse_expression();
    if (!filter) return filter.error();
    stmt->filter = std::move(*filter);
  }
  if (is_name("recursive")) return fail("recursive for loops are not supported");
  if (auto r = expect_block_end(); !r) return r.error();
  ++loop_depth_;
  Result<std::string> end = parse_body(stmt->body, {"endfor", "else"}, "for", line);
  --loop_depth_;
  if (!end) return end.error();
  if (*end == "else") {
    if (auto r = expect_block_end(); !r) return r.error();
    Result<std::string> e2 = parse_body(stmt->otherwise, {"endfor"}, "for", line);
    if (!e2) return e2.error();
  }
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<Target> Parser::parse_target(bool allow_attr, bool allow_tuple) {
  Target target;
  if (allow_attr && cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == ".") {
    target.kind = Target::Kind::Attr;
    target.name = cur().text;
    advance();
    advance();
    Result<std::string> attr = expect_name();
    if (!attr) return attr.error();
    target.attr = std::move(*attr);
    return target;
  }
  // A name, a parenthesized tuple of targets, or names separated by commas.
  const auto one = [&]() -> Result<Target> {
    if (skip_op("(")) {
      DepthGuard guard(depth_);
      if (auto d = check_depth(); !d) return d.error();
      Result<Target> inner = parse_target(false, true);
      if (!inner) return inner;
      if (auto r = expect_op(")"); !r) return r.error();
      return inner;
    }
    Result<std::string> name = expect_name();
    if (!name) return name.error();
    if (*name == "true" || *name == "false" || *name == "none" || *name == "True" ||
        *name == "False" || *name == "None") {
      return fail(std::string("cannot assign to '") + *name + "'");
    }
    Target t;
    t.name = std::move(*name);
    return t;
  };
  Result<Target> first = one();
  if (!first || !allow_tuple || !is_op(",")) return first;
  target.kind = Target::Kind::Tuple;
  target.items.push_back(std::move(*first));
  while (skip_op(",")) {
    if (is_name("in") || is_op("=") || is_op(")")) break;
    Result<Target> next = one();
    if (!next) return next;
    target.items.push_back(std::move(*next));
  }
  return target;
}

Result<std::vector<std::unique_ptr<FilterExpr>>> Parser::parse_filter_chain() {
  std::vector<std::unique_ptr<FilterExpr>> filters;
  do {
    // The first filter of a {% filter %} block has no '|' before it.
    Result<std::unique_ptr<FilterExpr>> f = parse_filter(nullptr, is_op("|"));
    if (!f) return f.error();
    filters.push_back(std::move(*f));
  } while (is_op("|"));
  return filters;
}

Result<StmtPtr> Parser::parse_set(int line) {
  Result<Target> target = parse_target(true, true);
  if (!target) return target.error();
  if (skip_op("=")) {
    Result<ExprPtr> value = parse_tuple(true);
    if (!value) return value.error();
    if (auto r = expect_block_end(); !r) return r.error();
    return StmtPtr(std::make_unique<SetStmt>(line, std::move(*target), std::move(*value)));
  }
  auto stmt = std::make_unique<SetBlockStmt>(line);
  stmt->target = std::move(*target);
  if (is_op("|")) {
    Result<std::vector<std::unique_ptr<FilterExpr>>> filters = parse_filter_chain();
    if (!filters) return filters.error();
    stmt->filters = std::move(*filters);
  }
  if (auto r = expect_block_end(); !r) return r.error();
  Result<std::string> end = parse_body(stmt->body, {"endset"}, "set", line);
  if (!end) return end.error();
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<void> Parser::parse_params(std::vector<Param>& params) {
  if (auto r = expect_op("("); !r) return r;
  while (!is_op(")")) {
    if (!params.empty()) {
      if (auto r = expect_op(","); !r) return r;
    }
    Result<std::string> name = expect_name();
    if (!name) return name.error();
    Param p{std::move(*name), nullptr};
    if (skip_op("=")) {
      Result<ExprPtr> e = parse_expression();
      if (!e) return e.error();
      p.fallback = std::move(*e);
    } else if (!params.empty() && params.back().fallback) {
      return fail(std::string("parameter '") + p.name + "' without a default follows one with a default");
    }
    params.push_back(std::move(p));
  }
  advance();  // )
  return {};
}

Result<StmtPtr> Parser::parse_macro(int line) {
  auto stmt = std::make_unique<MacroStmt>(line);
  Result<std::string> name = expect_name();
  if (!name) return name.error();
  stmt->name = std::move(*name);
  if (auto r = parse_params(stmt->params); !r) return r.error();
  if (auto r = expect_block_end(); !r) return r.error();
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;  // a loop around the definition is not around the body
  Result<std::string> end = parse_body(stmt->body, {"endmacro"}, "macro", line);
  loop_depth_ = saved_loops;
  if (!end) return end.error();
  if (cur().kind == TokenKind::Name && cur().text == stmt->name) advance();  // {% endmacro name %}
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<StmtPtr> Parser::parse_call_block(int line) {
  auto stmt = std::make_unique<CallBlockStmt>(line);
  stmt->caller.line = line;
  stmt->caller.name = "caller";
  if (is_op("(")) {
    if (auto r = parse_params(stmt->caller.params); !r) return r.error();
  }
  Result<ExprPtr> call = parse_expression();
  if (!call) return call.error();
  if ((*call)->kind != ExprKind::Call) return Error{std::string("line ") + std::to_string(line) + ": {% call %} expects a macro call"};
  stmt->call.reset(static_cast<CallExpr*>(call->release()));
  if (auto r = expect_block_end(); !r) return r.error();
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  Result<std::string> end = parse_body(stmt->caller.body, {"endcall"}, "call", line);
  loop_depth_ = saved_loops;
  if (!end) return end.error();
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<StmtPtr> Parser::parse_filter_block(int line) {
  auto stmt = std::make_unique<FilterBlockStmt>(line);
  Result<std::vector<std::unique_ptr<FilterExpr>>> filters = parse_filter_chain();
  if (!filters) return filters.error();
  stmt->filters = std::move(*filters);
  if (auto r = expect_block_end(); !r) return r.error();
  Result<std::string> end = parse_body(stmt->body, {"endfilter"}, "filter", line);
  if (!end) return end.error();
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<StmtPtr> Parser::parse_with(int line, bool generation) {
  auto stmt = std::make_unique<WithStmt>(line);
  while (!generation && cur().kind != TokenKind::BlockEnd) {
    if (!stmt->assignments.empty()) {
      if (auto r = expect_op(","); !r) return r.error();
    }
    Result<Target> target = parse_target(false, false);
    if (!target) return target.error();
    if (auto r = expect_op("="); !r) return r.error();
    Result<ExprPtr> value = parse_expression();
    if (!value) return value.error();
    stmt->assignments.emplace_back(std::move(*target), std::move(*value));
  }
  if (auto r = expect_block_end(); !r) return r.error();
  const char* end_tag = generation ? "endgeneration" : "endwith";
  Result<std::string> end = parse_body(stmt->body, {end_tag}, generation ? "generation" : "with", line);
  if (!end) return end.error();
  if (auto r = expect_block_end(); !r) return r.error();
  return StmtPtr(std::move(stmt));
}

Result<std::shared_ptr<const ParsedTemplate>> parse(std::string_view source) {
  Result<std::vector<Token>> tokens = tokenize(source);
  if (!tokens) return tokens.error();
  Parser parser(std::move(*tokens));
  Result<Body> body = parser.parse_template();
  if (!body) return body.error();
  auto t = std::make_shared<ParsedTemplate>();
  t->body = std::move(*body);
  return std::shared_ptr<const ParsedTemplate>(std::move(t));
}

}  // namespace quip::chat::jinja
