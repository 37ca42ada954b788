// Argument binding, conversions, the global functions and the tests.
#include "chat/jinja_builtins.h"

#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "chat/jinja_ops.h"
#include "chat/jinja_string.h"

namespace quip::chat::jinja {

Result<Args> Args::bind(std::string_view fn, const CallArgs& call,
                        std::initializer_list<std::string_view> names, size_t required) {
  Args a;
  a.values_.resize(names.size());
  a.given_.assign(names.size(), false);
  const std::string f(fn);
  if (call.positional.size() > names.size()) {
    return Error{f + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
                 std::to_string(call.positional.size()) + " given)"};
  }
  for (size_t i = 0; i < call.positional.size(); ++i) {
    a.values_[i] = call.positional[i];
    a.given_[i] = true;
  }
  for (const auto& [key, v] : call.keyword) {
    size_t i = 0;
    for (std::string_view n : names) {
      if (n == key) break;
      ++i;
    }
    if (i == names.size()) return Error{f + "() got an unexpected keyword argument '" + key + "'"};
    if (a.given_[i]) return Error{f + "() got multiple values for argument '" + key + "'"};
    a.values_[i] = v;
    a.given_[i] = true;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!a.given_[i]) {
      return Error{f + "() missing required argument '" + std::string(names.begin()[i]) + "'"};
    }
  }
  return a;
}

Result<int64_t> to_int_arg(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  return Error{std::string(what) + " must be an integer, not " + v.type_name()};
}

Result<std::string> to_str_arg(const Value& v, std::string_view what) {
  if (v.is_string()) return v.str();
  return Error{std::string(what) + " must be a string, not " + v.type_name()};
}

Result<ValueList> iterate(Evaluator& ev, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return ValueList{};
    case Value::Kind::List:
    case Value::Kind::Tuple:
      if (auto r = ev.charge(v.items().size() / 16); !r) return r.error();
      return v.items();
    case Value::Kind::Dict: {
      if (auto r = ev.charge(v.dict_ref().size() / 16); !r) return r.error();
      ValueList keys;
      keys.reserve(v.dict_ref().size());
      for (const auto& [k, val] : v.dict_ref().items()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      // One Value per character: a long string is refused before it is
      // expanded into a list many times its size.
      if (auto r = ev.check_list(utf8_length(v.str())); !r) return r.error();
      if (auto r = ev.charge(v.str().size() / 4); !r) return r.error();
      ValueList chars;
      for (std::string_view c : utf8_chars(v.str())) chars.push_back(Value::string(std::string(c)));
      return chars;
    }
    default: return Error{quoted(v.type_name()) + " object is not iterable"};
  }
}

namespace {

Value native(std::string name, NativeFn fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->native = std::move(fn);
  return Value::callable(std::move(c));
}

Result<Value> g_range(Evaluator& ev, CallArgs& call) {
  if (!call.keyword.empty()) return Error{"range() takes no keyword arguments"};
  if (call.positional.empty() || call.positional.size() > 3) {
    return Error{std::string("range() expects 1 to 3 arguments, got ") + std::to_string(call.positional.size())};
  }
  int64_t b[3] = {0, 0, 1};
  for (size_t i = 0; i < call.positional.size(); ++i) {
    Result<int64_t> n = to_int_arg(call.positional[i], "range() argument");
    if (!n) return n.error();
    b[call.positional.size() == 1 ? 1 : i] = *n;
  }
  const int64_t start = b[0], stop = b[1], step = b[2];
  if (step == 0) return Error{"range() arg 3 must not be zero"};
  // The length in 128 bits: stop - start may overflow int64.
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 abs_step = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  const __int128 n = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  if (n > ev.limits().max_iterations) {
    return Error{std::string("range() of ") + std::to_string(static_cast<long long>(n > INT64_MAX ? INT64_MAX : n)) +
                 " items is more than the limit of " + std::to_string(ev.limits().max_iterations)};
  }
  if (auto r = ev.charge(static_cast<uint64_t>(n) / 16); !r) return r.error();
  ValueList items;
  items.reserve(static_cast<size_t>(n));
  for (__int128 i = 0; i < n; ++i) items.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
  return Value::list(std::move(items));
}

// dict(mapping or pairs, **kwargs), also namespace(...).
Result<Value> make_mapping(Evaluator& ev, CallArgs& call, Value out, std::string_view fn) {
  if (call.positional.size() > 1) return Error{std::string(fn) + "() takes at most 1 positional argument"};
  if (!call.positional.empty()) {
    const Value& src = call.positional[0];
    if (src.is_mapping()) {
      for (const auto& [k, v] : src.dict_ref().items()) out.dict_ref().set(k, v);
    } else {
      Result<ValueList> pairs = iterate(ev, src);
      if (!pairs) return pairs.error();
      for (const Value& p : *pairs) {
        Result<ValueList> kv = iterate(ev, p);
        if (!kv || kv->size() != 2) return Error{std::string(fn) + "() needs a mapping or a list of pairs"};
        out.dict_ref().set((*kv)[0], (*kv)[1]);
      }
    }
  }
  for (const auto& [k, v] : call.keyword) out.dict_ref().set(k, v);
  return out;
}

// joiner(sep): a function that returns "" the first time, then sep.
Result<Value> g_joiner(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("joiner", call, {"sep"}, 0);
  if (!a) return a.error();
  const std::string sep = a->has(0) ? to_str((*a)[0]) : ", ";
  auto used = std::make_shared<bool>(false);
  return native("joiner", [sep, used](Evaluator&, CallArgs&) -> Result<Value> {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  });
}

}  // namespace

const Value* find_global(std::string_view name) {
  static const std::unordered_map<std::string_view, Value> globals{
      {"range", native("range", g_range)},
      {"dict", native("dict", [](Evaluator& ev, CallArgs& c) { return make_mapping(ev, c, Value::dict(), "dict"); })},
      {"namespace", native("namespace", [](Evaluator& ev, CallArgs& c) {
         return make_mapping(ev, c, Value::namespace_object(), "namespace");
       })},
      {"joiner", native("joiner", g_joiner)},
  };
  const auto it = globals.find(name);
  return it == globals.end() ? nullptr : &it->second;
}

// ---- tests ----

namespace {

Result<Value> one_arg(std::string_view test, CallArgs& call) {
  if (call.positional.size() != 1 || !call.keyword.empty()) {
    return Error{std::string("test '") + std::string(test) + "' takes one argument"};
  }
  return call.positional[0];
}

template <CompareOp kOp>
Result<bool> t_compare(Evaluator& ev, const Value& v, CallArgs& call) {
  Result<Value> other = one_arg("comparison", call);
  if (!other) return other.error();
  return compare_op(ev, kOp, v, *other);
}

Result<bool> t_divisibleby(Evaluator&, const Value& v, CallArgs& call) {
  Result<Value> n = one_arg("divisibleby", call);
  if (!n) return n.error();
  if (v.is_float() || n->is_float()) {
    if (!v.is_number() || !n->is_number() || n->as_float() == 0.0) return Error{"divisibleby needs non-zero numbers"};
    return std::fmod(v.as_float(), n->as_float()) == 0.0;
  }
  Result<int64_t> a = to_int_arg(v, "divisibleby value");
  Result<int64_t> b = to_int_arg(*n, "divisibleby argument");
  if (!a) return a.error();
  if (!b) return b.error();
  if (*b == 0) return Error{"integer division or modulo by zero"};
  return *b == -1 || *a % *b == 0;
}

Result<bool> parity(const Value& v, int64_t want) {
  if (v.is_float()) return std::fmod(std::fabs(v.as_float()), 2.0) == static_cast<double>(want);
  Result<int64_t> i = to_int_arg(v, "odd/even value");
  if (!i) return i.error();
  return (*i % 2 != 0 ? 1 : 0) == want;
}

Result<bool> t_sameas(Evaluator&, const Value& v, CallArgs& call) {
  Result<Value> other = one_arg("sameas", call);
  if (!other) return other.error();
  if (v.identity() != nullptr || other->identity() != nullptr) return v.identity() == other->identity();
  return v.kind() == other->kind() && equals(v, *other);
}

Result<bool> t_in(Evaluator&, const Value& v, CallArgs& call) {
  Result<Value> seq = one_arg("in", call);
  if (!seq) return seq.error();
  return contains(*seq, v);
}

// A test of the value alone: extra arguments are an error, as in Python.
#define QUIP_TEST(expr)                                                           \
  [](Evaluator&, const Value& v, CallArgs& call) -> Result<bool> {               \
    if (!call.positional.empty() || !call.keyword.empty()) {                     \
      return Error{"this test takes no arguments"};                              \
    }                                                                            \
    (void)v;                                                                     \
    return (expr);                                                               \
  }

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> tests{
      {"defined", QUIP_TEST(!v.is_undefined())},
      {"undefined", QUIP_TEST(v.is_undefined())},
      {"none", QUIP_TEST(v.is_none())},
      {"boolean", QUIP_TEST(v.is_bool())},
      {"true", QUIP_TEST(v.is_bool() && v.as_bool())},
      {"false", QUIP_TEST(v.is_bool() && !v.as_bool())},
      {"integer", QUIP_TEST(v.is_int())},
      {"float", QUIP_TEST(v.is_float())},
      {"number", QUIP_TEST(v.is_number())},
      {"string", QUIP_TEST(v.is_string())},
      {"mapping", QUIP_TEST(v.kind() == Value::Kind::Dict)},
      // jinja2's Undefined iterates (as nothing) and has a length.
      {"iterable", QUIP_TEST(v.is_undefined() || v.is_string() || v.is_list_like() || v.kind() == Value::Kind::Dict)},
      {"sequence", QUIP_TEST(v.is_undefined() || v.is_string() || v.is_list_like() || v.kind() == Value::Kind::Dict)},
      {"callable", QUIP_TEST(v.is_callable())},
      // jinja2 tests str(value), whatever its type.
      {"lower", QUIP_TEST(str_islower(to_str(v)))},
      {"upper", QUIP_TEST(str_isupper(to_str(v)))},
      {"escaped", QUIP_TEST(false)},
      {"odd", QUIP_TEST(parity(v, 1))},
      {"even", QUIP_TEST(parity(v, 0))},
      {"divisibleby", t_divisibleby},
      {"sameas", t_sameas},
      {"in", t_in},
      {"eq", t_compare<CompareOp::Eq>},
      {"equalto", t_compare<CompareOp::Eq>},
      {"==", t_compare<CompareOp::Eq>},
      {"ne", t_compare<CompareOp::Ne>},
      {"!=", t_compare<CompareOp::Ne>},
      {"lt", t_compare<CompareOp::Lt>},
      {"lessthan", t_compare<CompareOp::Lt>},
      {"<", t_compare<CompareOp::Lt>},
      {"le", t_compare<CompareOp::Le>},
      {"<=", t_compare<CompareOp::Le>},
      {"gt", t_compare<CompareOp::Gt>},
      {"greaterthan", t_compare<CompareOp::Gt>},
      {">", t_compare<CompareOp::Gt>},
      {"ge", t_compare<CompareOp::Ge>},
      {">=", t_compare<CompareOp::Ge>},
      {"filter", QUIP_TEST(v.is_string() && find_filter(v.str()) != nullptr)},
      {"test", QUIP_TEST(v.is_string() && find_test(v.str()) != nullptr)},
  };
  const auto it = tests.find(name);
  return it == tests.end() ? nullptr : it->second;
}

}  // namespace quip::chat::jinja
