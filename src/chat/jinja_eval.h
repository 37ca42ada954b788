// Renders a parsed template: statements write text, expressions compute
// Values, with jinja2's scoping (each for-loop iteration and macro call gets
// its own scope; `set` inside them does not leak out, which is what
// namespace() is for) and undefined semantics (a missing name prints as ""
// but fails when used as a number, called, or looked into).
//
// One Evaluator renders once, on one thread. Errors name the template line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace quip::chat::jinja {

// Bounds on one render, so that a broken or hostile template fails with a
// clear error instead of hanging, exhausting memory or the stack.
struct Limits {
  // The rendered text, and any one string or JSON text made while rendering.
  size_t max_output_bytes = size_t{16} << 20;
  // Loop iterations in one render (all loops together), and the length of
  // any one list a call makes (range(), [x] * n).
  int64_t max_iterations = 1'000'000;
  // Macro calls inside macro calls (runaway recursion).
  int max_call_depth = 100;
  // Evaluation steps (one per expression and statement, more for loop
  // iterations and for long strings and lists); bounds the time of one
  // render to about a second.
  uint64_t max_work = 20'000'000;
};

struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
 public:
  Evaluator(const Limits& limits, ScopePtr root) : limits_(limits), root_(std::move(root)) {}

  Result<std::string> render(const Body& body);

  // ---- for built-in functions (jinja_builtins.h) ----
  // Calls a macro or built-in. Errors of built-ins get the call's line.
  Result<Value> call(const Value& fn, CallArgs& args);
  // Applies a filter by name; args.positional[0] is its input.
  Result<Value> apply_filter(std::string_view name, CallArgs& args);
  Result<bool> apply_test(std::string_view name, const Value& value, CallArgs& args);
  // Counts work; fails once the render has done more than Limits::max_work.
  Result<void> charge(uint64_t units);
  // Fails when a string of `bytes` or a list of `items` would exceed the limits.
  Result<void> check_string(size_t bytes) const;
  Result<void> check_list(size_t items) const;
  // Before putting `v` into `container` (append, ns.x = v): refuses cycles.
  Result<void> check_insert(const Value& container, const Value& v);
  const Limits& limits() const { return limits_; }
  // obj.attr and obj[key] as jinja2 resolves them (attribute or item first,
  // then the other); a missing one is undefined, but looking into an
  // undefined value fails.
  Result<Value> get_attr(const Value& object, const std::string& attr, int line);
  Result<Value> get_item(const Value& object, const Value& key, int line);

 private:
  enum class Flow { Normal, Break, Continue };

  Error fail(int line, const std::string& message) const;
  Result<Flow> exec(const Body& body, const ScopePtr& scope, std::string& out);
  Result<Flow> exec_stmt(const Stmt& stmt, const ScopePtr& scope, std::string& out);
  Result<Flow> exec_for(const ForStmt& stmt, const ScopePtr& scope, std::string& out);
  Result<void> assign(const Target& target, const Value& value, const ScopePtr& scope, int line);
  Result<Value> apply_filters(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value input,
                              const ScopePtr& scope);
  Result<void> append(std::string& out, const Value& v, int line);
  Result<Value> call_macro(const Callable& macro, CallArgs& args, const Value* caller);

  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_name(const NameExpr& e, const ScopePtr& scope);
  Result<Value> eval_slice(const Value& object, const SliceExpr& s, const ScopePtr& scope);
  Result<Value> eval_call(const CallExpr& e, const ScopePtr& scope);
  Result<Value> eval_filter(const FilterExpr& e, Value input, const ScopePtr& scope);
  Result<Value> eval_test(const TestExpr& e, const ScopePtr& scope);
  Result<Value> eval_compare(const CompareExpr& e, const ScopePtr& scope);
  Result<Value> eval_binary(const BinaryExpr& e, const ScopePtr& scope);
  Result<Value> eval_unary(const UnaryExpr& e, const ScopePtr& scope);
  Result<CallArgs> eval_args(const Arguments& a, const ScopePtr& scope, int line);

  // Recursion guard for exec/eval: each nested level of statements,
  // expressions and macro calls uses stack.
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };

  Limits limits_;
  ScopePtr root_;
  uint64_t work_ = 0;
  int64_t iterations_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
};

}  // namespace quip::chat::jinja
