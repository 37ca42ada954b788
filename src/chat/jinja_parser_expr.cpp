// Expressions, with jinja2's precedence from loosest to tightest:
//   x if c else y;  or;  and;  not;  == != < <= > >= in, not in;  + -;  ~;
//   * / // %;  **;  unary - +;  then postfix . [] () and the filters | and
//   tests `is`, which bind to the unary operand (-x|abs is (-x)|abs).
#include "chat/jinja_parser_internal.h"

namespace quip::chat::jinja {

Result<void> Parser::check_depth() const {
  if (depth_ > kMaxParseDepth) {
    return fail(std::string("nesting deeper than ") + std::to_string(kMaxParseDepth) + " levels");
  }
  return {};
}

// Operator, attribute and filter chains (a + b + ..., x.a.b..., x|f|g...)
// are parsed in loops but build trees as deep as they are long, which the
// evaluator and the destructors walk recursively.
constexpr int kMaxChain = 500;

#define QUIP_DEPTH_GUARD()                      \
  DepthGuard depth_guard_(depth_);              \
  if (auto d = check_depth(); !d) return d.error()

bool Parser::tuple_end() const {
  return cur().kind == TokenKind::VarEnd || cur().kind == TokenKind::BlockEnd || is_op(")");
}

Result<ExprPtr> Parser::parse_tuple(bool with_cond, bool explicit_parens) {
  const int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) {
      if (auto r = expect_op(","); !r) return r.error();
    }
    if (tuple_end()) break;
    Result<ExprPtr> e = parse_expression(with_cond);
    if (!e) return e.error();
    items.push_back(std::move(*e));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) return fail(std::string("expected an expression, got ") + describe(cur()));
  }
  auto t = std::make_unique<ListExpr>(line, ExprKind::Tuple);
  t->items = std::move(items);
  return ExprPtr(std::move(t));
}

Result<ExprPtr> Parser::parse_expression(bool with_cond) { return with_cond ? parse_cond() : parse_or(); }

Result<ExprPtr> Parser::parse_cond() {
  QUIP_DEPTH_GUARD();
  Result<ExprPtr> expr = parse_or();
  if (!expr) return expr;
  ExprPtr node = std::move(*expr);
  for (int chain = 0; is_name("if"); ++chain) {
    if (chain > kMaxChain) return fail("expression too long (more than " + std::to_string(kMaxChain) + " operators in a row)");
    auto c = std::make_unique<CondExpr>(cur().line);
    advance();
    Result<ExprPtr> test = parse_or();
    if (!test) return test;
    c->test = std::move(*test);
    c->then = std::move(node);
    if (skip_name("else")) {
      Result<ExprPtr> other = parse_cond();
      if (!other) return other;
      c->otherwise = std::move(*other);
    }
    node = std::move(c);
  }
  return node;
}

Result<ExprPtr> Parser::parse_or() {
  return binary_level(&Parser::parse_and, {{"or", BinaryOp::Or}}, Operators::Keywords);
}

Result<ExprPtr> Parser::parse_and() {
  return binary_level(&Parser::parse_not, {{"and", BinaryOp::And}}, Operators::Keywords);
}

Result<ExprPtr> Parser::parse_not() {
  if (is_name("not")) {
    QUIP_DEPTH_GUARD();
    const int line = cur().line;
    advance();
    Result<ExprPtr> e = parse_not();
    if (!e) return e;
    return ExprPtr(std::make_unique<UnaryExpr>(line, UnaryOp::Not, std::move(*e)));
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  const int line = cur().line;
  Result<ExprPtr> first = parse_math1();
  if (!first) return first;
  std::unique_ptr<CompareExpr> cmp;
  while (true) {
    CompareOp op;
    if (is_op("==")) {
      op = CompareOp::Eq;
    } else if (is_op("!=")) {
      op = CompareOp::Ne;
    } else if (is_op("<")) {
      op = CompareOp::Lt;
    } else if (is_op("<=")) {
      op = CompareOp::Le;
    } else if (is_op(">")) {
      op = CompareOp::Gt;
    } else if (is_op(">=")) {
      op = CompareOp::Ge;
    } else if (is_name("in")) {
      op = CompareOp::In;
    } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
      op = CompareOp::NotIn;
      advance();
    } else {
      break;
    }
    advance();
    Result<ExprPtr> operand = parse_math1();
    if (!operand) return operand;
    if (!cmp) cmp = std::make_unique<CompareExpr>(line, std::move(*first));
    cmp->rest.emplace_back(op, std::move(*operand));
  }
  if (!cmp) return first;
  return ExprPtr(std::move(cmp));
}

Result<ExprPtr> Parser::binary_level(Result<ExprPtr> (Parser::*next)(),
                                     std::initializer_list<std::pair<std::string_view, BinaryOp>> ops,
                                     Operators kind) {
  Result<ExprPtr> left = (this->*next)();
  if (!left) return left;
  ExprPtr node = std::move(*left);
  for (int chain = 0;; ++chain) {
    if (chain > kMaxChain) return fail("expression too long (more than " + std::to_string(kMaxChain) + " operators in a row)");
    const BinaryOp* op = nullptr;
    for (const auto& entry : ops) {
      if (kind == Operators::Keywords ? is_name(entry.first) : is_op(entry.first)) op = &entry.second;
    }
    if (op == nullptr) return node;
    const int line = cur().line;
    advance();
    Result<ExprPtr> right = (this->*next)();
    if (!right) return right;
    node = std::make_unique<BinaryExpr>(line, *op, std::move(node), std::move(*right));
  }
}

Result<ExprPtr> Parser::parse_math1() {
  return binary_level(&Parser::parse_concat,
                      {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}});
}

Result<ExprPtr> Parser::parse_concat() {
  return binary_level(&Parser::parse_math2,
                      {{"~", BinaryOp::Concat}});
}

Result<ExprPtr> Parser::parse_math2() {
  return binary_level(&Parser::parse_pow,
                      {{"*", BinaryOp::Mul},
                       {"/", BinaryOp::Div},
                       {"//", BinaryOp::FloorDiv},
                       {"%", BinaryOp::Mod}});
}

Result<ExprPtr> Parser::parse_pow() {
  // jinja2 makes ** left-associative: 2 ** 3 ** 2 == 64.
  return binary_level(&Parser::parse_unary_filtered,
                      {{"**", BinaryOp::Pow}});
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  QUIP_DEPTH_GUARD();
  const int line = cur().line;
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const UnaryOp op = is_op("-") ? UnaryOp::Neg : UnaryOp::Pos;
    advance();
    Result<ExprPtr> operand = parse_unary(false);
    if (!operand) return operand;
    node = std::make_unique<UnaryExpr>(line, op, std::move(*operand));
  } else {
    Result<ExprPtr> primary = parse_primary();
    if (!primary) return primary;
    node = std::move(*primary);
  }
  Result<ExprPtr> post = parse_postfix(std::move(node));
  if (!post || !with_filter) return post;
  return parse_filter_expr(std::move(*post));
}

Result<ExprPtr> Parser::parse_primary() {
  QUIP_DEPTH_GUARD();
  const Token& t = cur();
  const int line = t.line;
  switch (t.kind) {
    case TokenKind::Name: {
      ExprPtr node;
      if (t.text == "true" || t.text == "True") {
        node = std::make_unique<LiteralExpr>(line, Value::boolean(true));
      } else if (t.text == "false" || t.text == "False") {
        node = std::make_unique<LiteralExpr>(line, Value::boolean(false));
      } else if (t.text == "none" || t.text == "None") {
        node = std::make_unique<LiteralExpr>(line, Value::none());
      } else {
        node = std::make_unique<NameExpr>(line, t.text);
      }
      advance();
      return node;
    }
    case TokenKind::String: {
      // Adjacent literals concatenate: "a" "b" is "ab".
      std::string s;
      while (cur().kind == TokenKind::String) {
        s += cur().text;
        advance();
      }
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value::string(std::move(s))));
    }
    case TokenKind::Integer: {
      const int64_t v = t.integer;
      advance();
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value::integer(v)));
    }
    case TokenKind::Float: {
      const double v = t.number;
      advance();
      return ExprPtr(std::make_unique<LiteralExpr>(line, Value::number(v)));
    }
    case TokenKind::Operator:
      if (t.text == "(") {
        advance();
        Result<ExprPtr> inner = parse_tuple(true, true);
        if (!inner) return inner;
        if (auto r = expect_op(")"); !r) return r.error();
        return inner;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      break;
    default: break;
  }
  return unexpected();
}

Result<ExprPtr> Parser::parse_list() {
  auto list = std::make_unique<ListExpr>(cur().line, ExprKind::List);
  advance();  // [
  while (!is_op("]")) {
    if (!list->items.empty()) {
      if (auto r = expect_op(","); !r) return r.error();
      if (is_op("]")) break;
    }
    Result<ExprPtr> e = parse_expression();
    if (!e) return e;
    list->items.push_back(std::move(*e));
  }
  advance();  // ]
  return ExprPtr(std::move(list));
}

Result<ExprPtr> Parser::parse_dict() {
  auto dict = std::make_unique<DictExpr>(cur().line);
  advance();  // {
  while (!is_op("}")) {
    if (!dict->items.empty()) {
      if (auto r = expect_op(","); !r) return r.error();
      if (is_op("}")) break;
    }
    Result<ExprPtr> key = parse_expression();
    if (!key) return key;
    if (auto r = expect_op(":"); !r) return r.error();
    Result<ExprPtr> value = parse_expression();
    if (!value) return value;
    dict->items.emplace_back(std::move(*key), std::move(*value));
  }
  advance();  // }
  return ExprPtr(std::move(dict));
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  for (int chain = 0;; ++chain) {
    if (chain > kMaxChain) return fail("expression too long (more than " + std::to_string(kMaxChain) + " lookups in a row)");
    if (is_op(".") || is_op("[")) {
      Result<ExprPtr> r = parse_subscript(std::move(node));
      if (!r) return r;
      node = std::move(*r);
    } else if (is_op("(")) {
      auto call = std::make_unique<CallExpr>(cur().line, std::move(node));
      if (auto r = parse_args(call->args); !r) return r.error();
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  for (int chain = 0;; ++chain) {
    if (chain > kMaxChain) return fail("expression too long (more than " + std::to_string(kMaxChain) + " filters in a row)");
    if (is_op("|")) {
      Result<std::unique_ptr<FilterExpr>> f = parse_filter(std::move(node), true);
      if (!f) return f.error();
      node = std::move(*f);
    } else if (is_name("is")) {
      Result<ExprPtr> t = parse_test(std::move(node));
      if (!t) return t;
      node = std::move(*t);
    } else if (is_op("(")) {
      auto call = std::make_unique<CallExpr>(cur().line, std::move(node));
      if (auto r = parse_args(call->args); !r) return r.error();
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  QUIP_DEPTH_GUARD();
  const int line = cur().line;
  if (skip_op(".")) {
    if (cur().kind == TokenKind::Name) {
      std::string attr = cur().text;
      advance();
      return ExprPtr(std::make_unique<GetAttrExpr>(line, std::move(node), std::move(attr)));
    }
    if (cur().kind == TokenKind::Integer) {
      auto index = std::make_unique<LiteralExpr>(line, Value::integer(cur().integer));
      advance();
      return ExprPtr(std::make_unique<GetItemExpr>(line, std::move(node), std::move(index)));
    }
    return fail(std::string("expected a name or number after '.', got ") + describe(cur()));
  }
  advance();  // [
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) {
      if (auto r = expect_op(","); !r) return r.error();
    }
    Result<ExprPtr> a = parse_subscribed();
    if (!a) return a;
    args.push_back(std::move(*a));
  }
  advance();  // ]
  if (args.empty()) return fail("expected a subscript inside []");
  ExprPtr index;
  if (args.size() == 1) {
    index = std::move(args[0]);
  } else {
    auto t = std::make_unique<ListExpr>(line, ExprKind::Tuple);
    t->items = std::move(args);
    index = std::move(t);
  }
  return ExprPtr(std::make_unique<GetItemExpr>(line, std::move(node), std::move(index)));
}

Result<ExprPtr> Parser::parse_subscribed() {
  const int line = cur().line;
  auto slice = std::make_unique<SliceExpr>(line);
  if (!is_op(":")) {
    Result<ExprPtr> e = parse_expression();
    if (!e) return e;
    if (!is_op(":")) return e;
    slice->start = std::move(*e);
  }
  advance();  // the first :
  const auto bound_ends = [&] { return is_op("]") || is_op(",") || is_op(":"); };
  if (!bound_ends()) {
    Result<ExprPtr> e = parse_expression();
    if (!e) return e;
    slice->stop = std::move(*e);
  }
  if (skip_op(":") && !is_op("]") && !is_op(",")) {
    Result<ExprPtr> e = parse_expression();
    if (!e) return e;
    slice->step = std::move(*e);
  }
  return ExprPtr(std::move(slice));
}

Result<void> Parser::parse_args(Arguments& args) {
  QUIP_DEPTH_GUARD();
  advance();  // (
  bool need_comma = false;
  while (!is_op(")")) {
    if (need_comma) {
      if (auto r = expect_op(","); !r) return r;
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) {
      const bool two = is_op("**");
      advance();
      Result<ExprPtr> e = parse_expression();
      if (!e) return e.error();
      (two ? args.star_star : args.star) = std::move(*e);
    } else if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
      std::string key = cur().text;
      advance();
      advance();
      Result<ExprPtr> e = parse_expression();
      if (!e) return e.error();
      args.keyword.emplace_back(std::move(key), std::move(*e));
    } else {
      if (!args.keyword.empty() || args.star || args.star_star) {
        return fail("positional argument after keyword argument");
      }
      Result<ExprPtr> e = parse_expression();
      if (!e) return e.error();
      args.positional.push_back(std::move(*e));
    }
    need_comma = true;
  }
  advance();  // )
  return {};
}

Result<std::unique_ptr<FilterExpr>> Parser::parse_filter(ExprPtr input, bool on_pipe) {
  QUIP_DEPTH_GUARD();
  if (on_pipe) advance();
  const int line = cur().line;
  Result<std::string> name = expect_name();
  if (!name) return name.error();
  std::string full = *name;
  while (skip_op(".")) {
    Result<std::string> more = expect_name();
    if (!more) return more.error();
    full += std::string(".") + *more;
  }
  auto f = std::make_unique<FilterExpr>(line, std::move(input), std::move(full));
  if (is_op("(")) {
    if (auto r = parse_args(f->args); !r) return r.error();
  }
  return f;
}

Result<ExprPtr> Parser::parse_test(ExprPtr input) {
  QUIP_DEPTH_GUARD();
  const int line = cur().line;
  advance();  // is
  const bool negated = skip_name("not");
  Result<std::string> name = expect_name();
  if (!name) return name.error();
  auto t = std::make_unique<TestExpr>(line, std::move(input), *name);
  t->negated = negated;
  if (is_op("(")) {
    if (auto r = parse_args(t->args); !r) return r.error();
  } else if ((cur().kind == TokenKind::Name || cur().kind == TokenKind::String ||
              cur().kind == TokenKind::Integer || cur().kind == TokenKind::Float || is_op("[") ||
              is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    // One argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
    if (is_name("is")) return fail("tests cannot be chained with 'is'");
    Result<ExprPtr> arg = parse_primary();
    if (!arg) return arg;
    Result<ExprPtr> post = parse_postfix(std::move(*arg));
    if (!post) return post;
    t->args.positional.push_back(std::move(*post));
  }
  return ExprPtr(std::move(t));
}

}  // namespace quip::chat::jinja
