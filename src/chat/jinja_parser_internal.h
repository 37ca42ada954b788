// The recursive-descent parser shared by jinja_parser.cpp (statements) and
// jinja_parser_expr.cpp (expressions). Internal to the parser.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"

namespace quip::chat::jinja {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Body> parse_template();

 private:
  // ---- tokens ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t ahead = 1) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().kind == TokenKind::Operator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().kind == TokenKind::Name && cur().text == name; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  Result<void> expect_op(std::string_view op);
  Result<std::string> expect_name();
  Result<void> expect_block_end();
  Error fail(const std::string& message) const;
  Error unexpected() const;  // "unexpected 'x'"
  static std::string describe(const Token& t);

  // ---- statements (jinja_parser.cpp) ----
  // Statements up to a {% tag %} whose name is in `ends`; the {% and the name
  // are consumed and the name returned. `opened` names the block for errors.
  Result<std::string> parse_body(Body& body, std::initializer_list<std::string_view> ends,
                                 std::string_view opened, int opened_line);
  Result<StmtPtr> parse_statement();
  Result<StmtPtr> parse_if(int line);
  Result<StmtPtr> parse_for(int line);
  Result<StmtPtr> parse_set(int line);
  Result<StmtPtr> parse_macro(int line);
  Result<StmtPtr> parse_call_block(int line);
  Result<StmtPtr> parse_filter_block(int line);
  Result<StmtPtr> parse_with(int line, bool generation);
  Result<void> parse_params(std::vector<Param>& params);
  Result<Target> parse_target(bool allow_attr, bool allow_tuple);
  Result<std::vector<std::unique_ptr<FilterExpr>>> parse_filter_chain();

  // ---- expressions (jinja_parser_expr.cpp) ----
  // A comma-separated list becomes a tuple. `stop_name`: a keyword that ends
  // the tuple (`in` after a for target).
  Result<ExprPtr> parse_tuple(bool with_cond, bool explicit_parens = false);
  Result<ExprPtr> parse_expression(bool with_cond = true);
  Result<ExprPtr> parse_cond();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter = true);
  Result<ExprPtr> parse_unary_filtered() { return parse_unary(true); }
  // One left-associative level of binary operators over `next`: symbols
  // such as `+`, or keywords such as `and`.
  enum class Operators { Symbols, Keywords };
  Result<ExprPtr> binary_level(Result<ExprPtr> (Parser::*next)(),
                               std::initializer_list<std::pair<std::string_view, BinaryOp>> ops,
                               Operators kind = Operators::Symbols);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Result<ExprPtr> parse_subscribed();
  Result<ExprPtr> parse_list();
  Result<ExprPtr> parse_dict();
  Result<void> parse_args(Arguments& args);
  Result<std::unique_ptr<FilterExpr>> parse_filter(ExprPtr input, bool on_pipe);
  Result<ExprPtr> parse_test(ExprPtr input);
  bool tuple_end() const;

  // Depth guard: every recursive parse function holds one.
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };
  Result<void> check_depth() const;

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // break/continue are only valid inside a for loop
};

}  // namespace quip::chat::jinja
