// Expressions: names, attribute and item access, calls, filters, tests,
// operators and literals.
#include "chat/jinja_builtins.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_string.h"

namespace quip::chat::jinja {
namespace {

constexpr int kMaxEvalDepth = 600;  // as in jinja_eval.cpp

// What jinja2 calls an object in "'dict object' has no attribute 'x'".
std::string object_name(const Value& v) { return quoted(v.type_name() + " object"); }

}  // namespace

Result<Value> Evaluator::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(depth_);
  if (depth_ > kMaxEvalDepth) return fail(e.line, "expression nesting too deep");
  if (auto r = charge(1); !r) return fail(e.line, r.error().message);
  switch (e.kind) {
    case ExprKind::Literal: return static_cast<const LiteralExpr&>(e).value;
    case ExprKind::Name: return eval_name(static_cast<const NameExpr&>(e), scope);
    case ExprKind::GetAttr: {
      const auto& g = static_cast<const GetAttrExpr&>(e);
      Result<Value> obj = eval(*g.object, scope);
      if (!obj) return obj;
      return get_attr(*obj, g.attr, e.line);
    }
    case ExprKind::GetItem: {
      const auto& g = static_cast<const GetItemExpr&>(e);
      Result<Value> obj = eval(*g.object, scope);
      if (!obj) return obj;
      if (g.index->kind == ExprKind::Slice) return eval_slice(*obj, static_cast<const SliceExpr&>(*g.index), scope);
      Result<Value> key = eval(*g.index, scope);
      if (!key) return key;
      return get_item(*obj, *key, e.line);
    }
    case ExprKind::Slice: return fail(e.line, "a slice is only valid inside []");
    case ExprKind::Call: return eval_call(static_cast<const CallExpr&>(e), scope);
    case ExprKind::Filter: {
      const auto& f = static_cast<const FilterExpr&>(e);
      Result<Value> input = eval(*f.input, scope);
      if (!input) return input;
      return eval_filter(f, std::move(*input), scope);
    }
    case ExprKind::Test: return eval_test(static_cast<const TestExpr&>(e), scope);
    case ExprKind::Unary: return eval_unary(static_cast<const UnaryExpr&>(e), scope);
    case ExprKind::Binary: return eval_binary(static_cast<const BinaryExpr&>(e), scope);
    case ExprKind::Compare: return eval_compare(static_cast<const CompareExpr&>(e), scope);
    case ExprKind::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      Result<Value> test = eval(*c.test, scope);
      if (!test) return test;
      if (test->truthy()) return eval(*c.then, scope);
      if (c.otherwise) return eval(*c.otherwise, scope);
      return Value::undefined(std::string("the inline if-expression on line ") + std::to_string(e.line) +
                              " evaluated to false and has no else");
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      const auto& l = static_cast<const ListExpr&>(e);
      ValueList items;
      items.reserve(l.items.size());
      for (const ExprPtr& item : l.items) {
        Result<Value> v = eval(*item, scope);
        if (!v) return v;
        items.push_back(std::move(*v));
      }
      return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
      Value d = Value::dict();
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Result<Value> key = eval(*k, scope);
        if (!key) return key;
        if (key->kind() == Value::Kind::List || key->is_mapping()) {
          return fail(e.line, "unhashable type: " + quoted(key->type_name()));
        }
        Result<Value> val = eval(*v, scope);
        if (!val) return val;
        d.dict_ref().set(*key, std::move(*val));
      }
      return d;
    }
  }
  return fail(e.line, "unknown expression");
}

Result<Value> Evaluator::eval_name(const NameExpr& e, const ScopePtr& scope) {
  for (const Scope* s = scope.get(); s != nullptr; s = s->parent.get()) {
    const auto it = s->vars.find(e.name);
    if (it != s->vars.end()) return it->second;
  }
  if (const Value* g = find_global(e.name)) return *g;
  return Value::undefined(quoted(e.name) + " is undefined");
}

Result<Value> Evaluator::get_attr(const Value& object, const std::string& attr, int line) {
  // jinja2 tries the Python attribute first, then the item: d.items is the
  // method, d.content the key.
  if (object.is_undefined()) return fail(line, object.undefined_reason());
  if (object.kind() == Value::Kind::Namespace || object.kind() == Value::Kind::Dict) {
    if (object.kind() == Value::Kind::Dict) {
      if (std::optional<Value> m = find_method(object, attr)) return *m;
    }
    if (const Value* v = object.dict_ref().find(std::string_view(attr))) return *v;
    return Value::undefined(object_name(object) + " has no attribute '" + attr + "'");
  }
  if (std::optional<Value> m = find_method(object, attr)) return *m;
  return Value::undefined(object_name(object) + " has no attribute '" + attr + "'");
}

Result<Value> Evaluator::get_item(const Value& object, const Value& key, int line) {
  // jinja2 tries the item first, then (for a string key) the attribute.
  if (object.is_undefined()) return fail(line, object.undefined_reason());
  if (object.is_mapping()) {
    if (object.kind() == Value::Kind::Dict) {
      if (const Value* v = object.dict_ref().find(key)) return *v;
    }
    if (key.is_string()) return get_attr(object, key.str(), line);
    return Value::undefined(object_name(object) + " has no element " + to_repr(key));
  }
  if ((object.is_list_like() || object.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (object.is_string()) {
      if (auto r = charge(object.str().size() / 64); !r) return fail(line, r.error().message);
      const std::optional<std::string_view> c = utf8_at(object.str(), i);
      if (!c) return Value::undefined("string index out of range");
      return Value::string(std::string(*c));
    }
    const auto n = static_cast<int64_t>(object.items().size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined(object_name(object) + " has no element " + std::to_string(key.as_int()));
    return object.items()[static_cast<size_t>(i)];
  }
  if (key.is_string()) return get_attr(object, key.str(), line);
  return Value::undefined(object_name(object) + " has no element " + to_repr(key));
}

Result<Value> Evaluator::eval_slice(const Value& object, const SliceExpr& s, const ScopePtr& scope) {
  std::optional<int64_t> bounds[3];
  const ExprPtr* exprs[3] = {&s.start, &s.stop, &s.step};
  for (int k = 0; k < 3; ++k) {
    if (!*exprs[k]) continue;
    Result<Value> v = eval(**exprs[k], scope);
    if (!v) return v;
    if (v->is_none()) continue;
    if (!v->is_int() && !v->is_bool()) {
      return fail(s.line, std::string("slice indices must be integers or None, not ") + v->type_name());
    }
    bounds[k] = v->as_int();
  }
  const int64_t step = bounds[2].value_or(1);
  if (step == 0) return fail(s.line, "slice step cannot be zero");
  if (object.is_undefined()) return fail(s.line, object.undefined_reason());
  if (object.is_string()) {
    const std::string& str = object.str();
    if (auto r = charge(str.size() / 64); !r) return fail(s.line, r.error().message);
    return Value::string(utf8_slice(str, bounds[0], bounds[1], step));
  }
  if (object.is_list_like()) {
    const ValueList& items = object.items();
    if (auto r = charge(items.size() / 16); !r) return fail(s.line, r.error().message);
    const SliceRange r = slice_range(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step);
    ValueList out;
    out.reserve(static_cast<size_t>(r.count));
    for (int64_t n = 0; n < r.count; ++n) out.push_back(items[static_cast<size_t>(r.start + n * r.step)]);
    return object.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  return fail(s.line, quoted(object.type_name()) + " object is not subscriptable");
}

Result<CallArgs> Evaluator::eval_args(const Arguments& a, const ScopePtr& scope, int line) {
  CallArgs args;
  args.line = line;
  for (const ExprPtr& p : a.positional) {
    Result<Value> v = eval(*p, scope);
    if (!v) return v.error();
    args.positional.push_back(std::move(*v));
  }
  if (a.star) {
    Result<Value> v = eval(*a.star, scope);
    if (!v) return v.error();
    Result<ValueList> items = iterate(*this, *v);
    if (!items) return fail(line, items.error().message);
    for (Value& item : *items) args.positional.push_back(std::move(item));
  }
  for (const auto& [name, p] : a.keyword) {
    Result<Value> v = eval(*p, scope);
    if (!v) return v.error();
    args.keyword.emplace_back(name, std::move(*v));
  }
  if (a.star_star) {
    Result<Value> v = eval(*a.star_star, scope);
    if (!v) return v.error();
    if (v->kind() != Value::Kind::Dict) return fail(line, std::string("argument after ** must be a mapping, not ") + v->type_name());
    for (const auto& [k, item] : v->dict_ref().items()) {
      if (!k.is_string()) return fail(line, "keywords must be strings");
      args.keyword.emplace_back(k.str(), item);
    }
  }
  return args;
}

Result<Value> Evaluator::eval_call(const CallExpr& e, const ScopePtr& scope) {
  Result<Value> callee = eval(*e.callee, scope);
  if (!callee) return callee;
  Result<CallArgs> args = eval_args(e.args, scope, e.line);
  if (!args) return args.error();
  return call(*callee, *args);
}

Result<Value> Evaluator::apply_filter(std::string_view name, CallArgs& args) {
  const FilterFn f = find_filter(name);
  if (f == nullptr) return Error{std::string("no filter named '") + std::string(name) + "'"};
  return f(*this, args);
}

Result<bool> Evaluator::apply_test(std::string_view name, const Value& value, CallArgs& args) {
  const TestFn t = find_test(name);
  if (t == nullptr) return Error{std::string("no test named '") + std::string(name) + "'"};
  return t(*this, value, args);
}

Result<Value> Evaluator::eval_filter(const FilterExpr& e, Value input, const ScopePtr& scope) {
  // An unknown filter fails when reached, not at parse time: jinja2 also
  // accepts one inside an {% if %} branch that never runs.
  const FilterFn f = find_filter(e.name);
  if (f == nullptr) return fail(e.line, std::string("no filter named '") + e.name + "'");
  Result<CallArgs> args = eval_args(e.args, scope, e.line);
  if (!args) return args.error();
  args->positional.insert(args->positional.begin(), std::move(input));
  Result<Value> r = f(*this, *args);
  if (!r) return fail(e.line, r.error().message);
  return r;
}

Result<Value> Evaluator::eval_test(const TestExpr& e, const ScopePtr& scope) {
  const TestFn t = find_test(e.name);
  if (t == nullptr) return fail(e.line, std::string("no test named '") + e.name + "'");
  Result<Value> input = eval(*e.input, scope);
  if (!input) return input;
  Result<CallArgs> args = eval_args(e.args, scope, e.line);
  if (!args) return args.error();
  Result<bool> r = t(*this, *input, *args);
  if (!r) return fail(e.line, r.error().message);
  return Value::boolean(*r != e.negated);
}

Result<Value> Evaluator::eval_unary(const UnaryExpr& e, const ScopePtr& scope) {
  Result<Value> v = eval(*e.operand, scope);
  if (!v) return v;
  if (e.op == UnaryOp::Not) return Value::boolean(!v->truthy());
  Result<Value> r = unary_op(e.op, *v);
  if (!r) return fail(e.line, r.error().message);
  return r;
}

Result<Value> Evaluator::eval_binary(const BinaryExpr& e, const ScopePtr& scope) {
  Result<Value> left = eval(*e.left, scope);
  if (!left) return left;
  // and/or return an operand, as in Python, and skip the right side when
  // the left decides.
  if (e.op == BinaryOp::And && !left->truthy()) return left;
  if (e.op == BinaryOp::Or && left->truthy()) return left;
  Result<Value> right = eval(*e.right, scope);
  if (!right) return right;
  if (e.op == BinaryOp::And || e.op == BinaryOp::Or) return right;
  Result<Value> r = binary_op(*this, e.op, *left, *right);
  if (!r) return fail(e.line, r.error().message);
  return r;
}

Result<Value> Evaluator::eval_compare(const CompareExpr& e, const ScopePtr& scope) {
  Result<Value> left = eval(*e.first, scope);
  if (!left) return left;
  Value a = std::move(*left);
  for (const auto& [op, expr] : e.rest) {
    Result<Value> right = eval(*expr, scope);
    if (!right) return right;
    Result<bool> holds = compare_op(*this, op, a, *right);
    if (!holds) return fail(e.line, holds.error().message);
    if (!*holds) return Value::boolean(false);
    a = std::move(*right);
  }
  return Value::boolean(true);
}

}  // namespace quip::chat::jinja
