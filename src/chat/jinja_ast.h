// The parsed form of a Jinja template: expression and statement nodes, owned
// by the template and immutable after parsing (one parsed template may be
// rendered by several threads at once).
//
// Nodes are plain structs told apart by `kind`; the evaluator switches on it
// and static_casts, which keeps each node no larger than its own fields.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace quip::chat::jinja {

enum class ExprKind : uint8_t {
  Literal,
  Name,
  GetAttr,
  GetItem,
  Slice,  // only as the index of a GetItem
  Call,
  Filter,
  Test,
  Unary,
  Binary,
  Compare,
  Cond,
  List,
  Tuple,
  Dict,
};

struct Expr {
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct LiteralExpr : Expr {
  LiteralExpr(int l, Value v) : Expr(ExprKind::Literal, l), value(std::move(v)) {}
  Value value;  // None, bool, int, float or str: never a container, so sharing it is safe
};

struct NameExpr : Expr {
  NameExpr(int l, std::string n) : Expr(ExprKind::Name, l), name(std::move(n)) {}
  std::string name;
};

struct GetAttrExpr : Expr {
  GetAttrExpr(int l, ExprPtr o, std::string a)
      : Expr(ExprKind::GetAttr, l), object(std::move(o)), attr(std::move(a)) {}
  ExprPtr object;
  std::string attr;
};

struct GetItemExpr : Expr {
  GetItemExpr(int l, ExprPtr o, ExprPtr i)
      : Expr(ExprKind::GetItem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;  // may be a SliceExpr
};

struct SliceExpr : Expr {
  explicit SliceExpr(int l) : Expr(ExprKind::Slice, l) {}
  ExprPtr start, stop, step;  // each may be null
};

// Arguments as written at a call, filter or test.
struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star;       // *args, may be null
  ExprPtr star_star;  // **kwargs, may be null
};

struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(ExprKind::Call, l), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

struct FilterExpr : Expr {
  FilterExpr(int l, ExprPtr in, std::string n)
      : Expr(ExprKind::Filter, l), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;  // null in {% filter %} and {% set x | f %}: the rendered body
  std::string name;
  Arguments args;
};

struct TestExpr : Expr {
  TestExpr(int l, ExprPtr in, std::string n)
      : Expr(ExprKind::Test, l), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;
  std::string name;
  Arguments args;
  bool negated = false;  // `is not`
};

enum class UnaryOp : uint8_t { Not, Neg, Pos };

struct UnaryExpr : Expr {
  UnaryExpr(int l, UnaryOp o, ExprPtr e) : Expr(ExprKind::Unary, l), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };

struct BinaryExpr : Expr {
  BinaryExpr(int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::Binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

// a < b <= c: each operator applies to its neighbours, as in Python.
struct CompareExpr : Expr {
  CompareExpr(int l, ExprPtr f) : Expr(ExprKind::Compare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

struct CondExpr : Expr {
  explicit CondExpr(int l) : Expr(ExprKind::Cond, l) {}
  ExprPtr test, then, otherwise;  // otherwise may be null: the result is then undefined
};

struct ListExpr : Expr {
  ListExpr(int l, ExprKind k) : Expr(k, l) {}  // List or Tuple
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::Dict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

// ---- statements ----

enum class StmtKind : uint8_t {
  Text,
  Output,
  If,
  For,
  Set,
  SetBlock,
  Macro,
  CallBlock,
  FilterBlock,
  With,  // also {% generation %}: a body in its own scope
  Do,
  Break,
  Continue,
};

struct Stmt {
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Where `set` and `for` store values: a name, a namespace attribute
// (ns.count), or a tuple of targets (k, v).
struct Target {
  enum class Kind : uint8_t { Name, Attr, Tuple } kind = Kind::Name;
  std::string name;
  std::string attr;            // Attr
  std::vector<Target> items;   // Tuple
};

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::Text, l), text(std::move(t)) {}
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(int l, ExprPtr e) : Stmt(StmtKind::Output, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body otherwise;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`, may be null
  Body body;
  Body otherwise;  // {% else %}: when nothing was iterated
};

struct SetStmt : Stmt {
  SetStmt(int l, Target t, ExprPtr v) : Stmt(StmtKind::Set, l), target(std::move(t)), value(std::move(v)) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
  Target target;
  std::vector<std::unique_ptr<FilterExpr>> filters;  // applied in order to the rendered body
  Body body;
};

struct Param {
  std::string name;
  ExprPtr fallback;  // the default value, may be null
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
  std::string name;
  std::vector<Param> params;
  Body body;
};

struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
  std::unique_ptr<CallExpr> call;
  MacroStmt caller{0};  // the body, callable as caller(params) inside the macro
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
};

struct WithStmt : Stmt {
  explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct DoStmt : Stmt {
  DoStmt(int l, ExprPtr e) : Stmt(StmtKind::Do, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(int l, StmtKind k) : Stmt(k, l) {}  // Break or Continue
};

}  // namespace quip::chat::jinja
