// Statements: text, output, control flow, assignment, macros.
#include "chat/jinja_eval.h"

#include "chat/jinja_builtins.h"

namespace quip::chat::jinja {
namespace {

// Python-level recursion guard for exec and eval. Python's own limit (1000
// frames, several per Jinja level) stops jinja2 at a similar depth.
constexpr int kMaxEvalDepth = 600;

std::string plural(int64_t n, std::string_view what) {
  return std::to_string(n) + " " + std::string(what) + (n == 1 ? "" : "s");
}

}  // namespace

Error Evaluator::fail(int line, const std::string& message) const {
  // Line 0: called for a built-in, whose caller adds the line.
  if (line <= 0) return Error{message};
  return Error{std::string("line ") + std::to_string(line) + ": " + message};
}

Result<void> Evaluator::charge(uint64_t units) {
  work_ += units;
  if (work_ > limits_.max_work) {
    return Error{std::string("the template ran too long (more than ") + std::to_string(limits_.max_work) +
                 " evaluation steps)"};
  }
  return {};
}

Result<void> Evaluator::check_string(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    return Error{std::string("string longer than ") + std::to_string(limits_.max_output_bytes) + " bytes"};
  }
  return {};
}

Result<void> Evaluator::check_list(size_t items) const {
  if (items > static_cast<size_t>(limits_.max_iterations)) {
    return Error{std::string("list longer than ") + plural(limits_.max_iterations, "item")};
  }
  return {};
}

Result<void> Evaluator::check_insert(const Value& container, const Value& v) {
  size_t visits = 0;
  const bool cycle = reaches(v, container.identity(), visits);
  if (auto r = charge(visits); !r) return r;
  if (cycle) return Error{std::string("cannot put a ") + container.type_name() + " inside itself"};
  return {};
}

Result<std::string> Evaluator::render(const Body& body) {
  std::string out;
  Result<Flow> r = exec(body, root_, out);
  if (!r) return r.error();
  return out;
}

Result<Evaluator::Flow> Evaluator::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    Result<Flow> r = exec_stmt(*s, scope, out);
    if (!r || *r != Flow::Normal) return r;
  }
  return Flow::Normal;
}

Result<void> Evaluator::append(std::string& out, const Value& v, int line) {
  const size_t before = out.size();
  if (!append_str(out, v, limits_.max_output_bytes)) {
    if (out.size() < limits_.max_output_bytes) return fail(line, "a value nested too deeply to print");
    return fail(line, std::string("output larger than ") + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  if (auto r = charge(1 + (out.size() - before) / 64); !r) return fail(line, r.error().message);
  return {};
}

Result<Evaluator::Flow> Evaluator::exec_stmt(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  DepthGuard guard(depth_);
  if (depth_ > kMaxEvalDepth) return fail(stmt.line, "template nesting too deep");
  if (auto r = charge(1); !r) return fail(stmt.line, r.error().message);
  switch (stmt.kind) {
    case StmtKind::Text: {
      const auto& s = static_cast<const TextStmt&>(stmt);
      if (out.size() + s.text.size() > limits_.max_output_bytes) {
        return fail(stmt.line, std::string("output larger than ") + std::to_string(limits_.max_output_bytes) + " bytes");
      }
      out += s.text;
      return Flow::Normal;
    }
    case StmtKind::Output: {
      Result<Value> v = eval(*static_cast<const OutputStmt&>(stmt).expr, scope);
      if (!v) return v.error();
      if (auto r = append(out, *v, stmt.line); !r) return r.error();
      return Flow::Normal;
    }
    case StmtKind::If: {
      const auto& s = static_cast<const IfStmt&>(stmt);
      for (const auto& [test, body] : s.branches) {
        Result<Value> t = eval(*test, scope);
        if (!t) return t.error();
        if (t->truthy()) return exec(body, scope, out);
      }
      return exec(s.otherwise, scope, out);
    }
    case StmtKind::For: return exec_for(static_cast<const ForStmt&>(stmt), scope, out);
    case StmtKind::Set: {
      const auto& s = static_cast<const SetStmt&>(stmt);
      Result<Value> v = eval(*s.value, scope);
      if (!v) return v.error();
      if (auto r = assign(s.target, *v, scope, stmt.line); !r) return r.error();
      return Flow::Normal;
    }
    case StmtKind::SetBlock: {
      const auto& s = static_cast<const SetBlockStmt&>(stmt);
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      std::string text;
      if (auto r = exec(s.body, inner, text); !r) return r.error();
      Result<Value> v = apply_filters(s.filters, Value::string(std::move(text)), scope);
      if (!v) return v.error();
      if (auto r = assign(s.target, *v, scope, stmt.line); !r) return r.error();
      return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
      const auto& s = static_cast<const FilterBlockStmt&>(stmt);
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      std::string text;
      if (auto r = exec(s.body, inner, text); !r) return r.error();
      Result<Value> v = apply_filters(s.filters, Value::string(std::move(text)), scope);
      if (!v) return v.error();
      if (auto r = append(out, *v, stmt.line); !r) return r.error();
      return Flow::Normal;
    }
    case StmtKind::Macro: {
      const auto& s = static_cast<const MacroStmt&>(stmt);
      auto c = std::make_shared<Callable>();
      c->name = s.name;
      c->macro = &s;
      c->closure = scope;
      scope->vars[s.name] = Value::callable(std::move(c));
      return Flow::Normal;
    }
    case StmtKind::CallBlock: {
      const auto& s = static_cast<const CallBlockStmt&>(stmt);
      Result<Value> callee = eval(*s.call->callee, scope);
      if (!callee) return callee.error();
      Result<CallArgs> args = eval_args(s.call->args, scope, stmt.line);
      if (!args) return args.error();
      if (!callee->is_callable() || callee->fn().macro == nullptr) {
        return fail(stmt.line, std::string("{% call %} needs a macro, got ") +
                                   (callee->is_undefined() ? callee->undefined_reason() : callee->type_name()));
      }
      auto c = std::make_shared<Callable>();
      c->name = "caller";
      c->macro = &s.caller;
      c->closure = scope;
      const Value caller = Value::callable(std::move(c));
      Result<Value> v = call_macro(callee->fn(), *args, &caller);
      if (!v) return v.error();
      if (auto r = append(out, *v, stmt.line); !r) return r.error();
      return Flow::Normal;
    }
    case StmtKind::With: {
      const auto& s = static_cast<const WithStmt&>(stmt);
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      // The values are computed in the outer scope, then bound together.
      std::vector<Value> values;
      for (const auto& [target, expr] : s.assignments) {
        Result<Value> v = eval(*expr, scope);
        if (!v) return v.error();
        values.push_back(std::move(*v));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        if (auto r = assign(s.assignments[i].first, values[i], inner, stmt.line); !r) return r.error();
      }
      return exec(s.body, inner, out);
    }
    case StmtKind::Do: {
      Result<Value> v = eval(*static_cast<const DoStmt&>(stmt).expr, scope);
      if (!v) return v.error();
      return Flow::Normal;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

Result<Value> Evaluator::apply_filters(const std::vector<std::unique_ptr<FilterExpr>>& filters,
                                       Value input, const ScopePtr& scope) {
  for (const auto& f : filters) {
    Result<Value> v = eval_filter(*f, std::move(input), scope);
    if (!v) return v;
    input = std::move(*v);
  }
  return input;
}

Result<void> Evaluator::assign(const Target& target, const Value& value, const ScopePtr& scope, int line) {
  switch (target.kind) {
    case Target::Kind::Name:
      scope->vars[target.name] = value;
      return {};
    case Target::Kind::Attr: {
      Result<Value> ns = eval_name(NameExpr(line, target.name), scope);
      if (!ns) return ns.error();
      if (ns->kind() != Value::Kind::Namespace) {
        return fail(line, std::string("cannot assign attribute '") + target.attr + "' on " +
                              (ns->is_undefined() ? ns->undefined_reason() : std::string("a ") + ns->type_name()) +
                              " (only on a namespace())");
      }
      if (auto r = check_insert(*ns, value); !r) return fail(line, r.error().message);
      ns->dict_ref().set(target.attr, value);
      return {};
    }
    case Target::Kind::Tuple: {
      Result<ValueList> items = iterate(*this, value);
      if (!items) return fail(line, std::string("cannot unpack: ") + items.error().message);
      if (items->size() != target.items.size()) {
        return fail(line, (items->size() > target.items.size() ? "too many" : "not enough") +
                              std::string(" values to unpack (expected ") +
                              std::to_string(target.items.size()) + ", got " +
                              std::to_string(items->size()) + ")");
      }
      for (size_t i = 0; i < items->size(); ++i) {
        if (auto r = assign(target.items[i], (*items)[i], scope, line); !r) return r;
      }
      return {};
    }
  }
  return {};
}

Result<Evaluator::Flow> Evaluator::exec_for(const ForStmt& stmt, const ScopePtr& scope, std::string& out) {
  Result<Value> iterable = eval(*stmt.iter, scope);
  if (!iterable) return iterable.error();
  Result<ValueList> all = iterate(*this, *iterable);
  if (!all) return fail(stmt.line, all.error().message);
  // `for x in xs if cond`: the condition sees x but not loop; loop.length
  // and loop.index count only the items that pass.
  ValueList items;
  if (stmt.filter) {
    for (Value& v : *all) {
      if (auto r = charge(1); !r) return fail(stmt.line, r.error().message);
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      if (auto r = assign(stmt.target, v, probe, stmt.line); !r) return r.error();
      Result<Value> keep = eval(*stmt.filter, probe);
      if (!keep) return keep.error();
      if (keep->truthy()) items.push_back(std::move(v));
    }
  } else {
    items = std::move(*all);
  }
  if (items.empty()) return exec(stmt.otherwise, scope, out);
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    // An iteration costs about as much as ten steps (a scope, the loop object).
    if (auto r = charge(10); !r) return fail(stmt.line, r.error().message);
    if (++iterations_ > limits_.max_iterations) {
      return fail(stmt.line, std::string("more than ") + plural(limits_.max_iterations, "loop iteration") + " in one render");
    }
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    const auto idx = static_cast<size_t>(i);
    if (auto r = assign(stmt.target, items[idx], inner, stmt.line); !r) return r.error();
    Value loop = Value::dict();
    Dict& d = loop.dict_ref();
    d.set("index", Value::integer(i + 1));
    d.set("index0", Value::integer(i));
    d.set("revindex", Value::integer(n - i));
    d.set("revindex0", Value::integer(n - i - 1));
    d.set("first", Value::boolean(i == 0));
    d.set("last", Value::boolean(i == n - 1));
    d.set("length", Value::integer(n));
    d.set("depth", Value::integer(1));
    d.set("depth0", Value::integer(0));
    d.set("previtem", i > 0 ? items[idx - 1] : Value::undefined("there is no previous item"));
    d.set("nextitem", i + 1 < n ? items[idx + 1] : Value::undefined("there is no next item"));
    auto cycle = std::make_shared<Callable>();
    cycle->name = "loop.cycle";
    cycle->native = [i](Evaluator&, CallArgs& a) -> Result<Value> {
      if (a.positional.empty()) return Error{"loop.cycle() needs at least one value"};
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    };
    d.set("cycle", Value::callable(std::move(cycle)));
    inner->vars["loop"] = std::move(loop);
    Result<Flow> r = exec(stmt.body, inner, out);
    if (!r) return r;
    if (*r == Flow::Break) break;
  }
  return Flow::Normal;
}

Result<Value> Evaluator::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) return fail(args.line, fn.undefined_reason());
  if (!fn.is_callable()) return fail(args.line, quoted(fn.type_name()) + " object is not callable");
  const Callable& c = fn.fn();
  if (c.macro != nullptr) return call_macro(c, args, nullptr);
  Result<Value> r = c.native(*this, args);
  if (!r) return fail(args.line, r.error().message);
  return r;
}

Result<Value> Evaluator::call_macro(const Callable& macro, CallArgs& args, const Value* caller) {
  const MacroStmt& m = *macro.macro;
  if (call_depth_ >= limits_.max_call_depth) {
    return fail(args.line, std::string("macro calls nested deeper than ") + std::to_string(limits_.max_call_depth) +
                               " (runaway recursion in '" + m.name + "'?)");
  }
  auto scope = std::make_shared<Scope>();
  scope->parent = macro.closure.lock();
  if (!scope->parent) scope->parent = root_;
  // Extra arguments go to varargs and kwargs, which jinja2 only allows when
  // the body uses them; accepting them always is the lenient superset.
  ValueList varargs;
  Value kwargs = Value::dict();
  std::vector<bool> bound(m.params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < m.params.size()) {
      scope->vars[m.params[i].name] = args.positional[i];
      bound[i] = true;
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  for (auto& [key, v] : args.keyword) {
    size_t k = 0;
    while (k < m.params.size() && m.params[k].name != key) ++k;
    if (k == m.params.size()) {
      kwargs.dict_ref().set(key, v);
    } else if (bound[k]) {
      return fail(args.line, std::string("macro '") + m.name + "' got multiple values for argument '" + key + "'");
    } else {
      scope->vars[key] = v;
      bound[k] = true;
    }
  }
  ++call_depth_;
  struct Restore {
    int& d;
    ~Restore() { --d; }
  } restore{call_depth_};
  // Defaults are evaluated at call time in the macro's scope, so they may
  // refer to earlier parameters.
  for (size_t k = 0; k < m.params.size(); ++k) {
    if (bound[k]) continue;
    if (m.params[k].fallback) {
      Result<Value> v = eval(*m.params[k].fallback, scope);
      if (!v) return v;
      scope->vars[m.params[k].name] = std::move(*v);
    } else {
      scope->vars[m.params[k].name] =
          Value::undefined(std::string("parameter '") + m.params[k].name + "' of macro '" + m.name + "' was not provided");
    }
  }
  scope->vars["varargs"] = Value::tuple(std::move(varargs));
  scope->vars["kwargs"] = std::move(kwargs);
  if (caller != nullptr) scope->vars["caller"] = *caller;
  std::string out;
  if (auto r = exec(m.body, scope, out); !r) return r.error();
  return Value::string(std::move(out));
}

}  // namespace quip::chat::jinja
