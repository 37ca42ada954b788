#include "chat/jinja_ops.h"

#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_eval.h"

namespace quip::chat::jinja {
namespace {

Error type_error(std::string_view op, const Value& a, const Value& b) {
  return Error{std::string("unsupported operand type(s) for ") + std::string(op) + ": '" + a.type_name() + "' and '" +
               b.type_name() + "'"};
}

Error overflow() { return Error{"integer result too large (quip's integers are 64-bit)"}; }

// Python's floor division and modulo for ints: round toward -infinity.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

Result<Value> repeat(Evaluator& ev, const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value::string("") : (seq.kind() == Value::Kind::Tuple ? Value::tuple({}) : Value::list());
  if (seq.is_string()) {
    const size_t len = seq.str().size();
    if (len != 0 && static_cast<uint64_t>(n) > ev.limits().max_output_bytes / len) {
      return Error{std::string("string longer than ") + std::to_string(ev.limits().max_output_bytes) + " bytes"};
    }
    if (auto r = ev.charge(len * static_cast<size_t>(n) / 64); !r) return r.error();
    std::string out;
    out.reserve(len * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value::string(std::move(out));
  }
  const ValueList& items = seq.items();
  if (!items.empty() && static_cast<uint64_t>(n) > static_cast<uint64_t>(ev.limits().max_iterations) / items.size()) {
    return Error{std::string("list longer than ") + std::to_string(ev.limits().max_iterations) + " items"};
  }
  if (auto r = ev.charge(items.size() * static_cast<size_t>(n) / 16); !r) return r.error();
  ValueList out;
  out.reserve(items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Result<Value> arithmetic(BinaryOp op, const Value& a, const Value& b) {
  const bool floats = a.is_float() || b.is_float();
  switch (op) {
    case BinaryOp::Add:
      if (floats) return Value::number(a.as_float() + b.as_float());
      if (int64_t r; !__builtin_add_overflow(a.as_int(), b.as_int(), &r)) return Value::integer(r);
      return overflow();
    case BinaryOp::Sub:
      if (floats) return Value::number(a.as_float() - b.as_float());
      if (int64_t r; !__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) return Value::integer(r);
      return overflow();
    case BinaryOp::Mul:
      if (floats) return Value::number(a.as_float() * b.as_float());
      if (int64_t r; !__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) return Value::integer(r);
      return overflow();
    case BinaryOp::Div:
      if (b.as_float() == 0.0) return Error{"division by zero"};
      return Value::number(a.as_float() / b.as_float());
    case BinaryOp::FloorDiv:
      if (b.as_float() == 0.0) return Error{"integer division or modulo by zero"};
      if (floats) return Value::number(std::floor(a.as_float() / b.as_float()));
      if (a.as_int() == INT64_MIN && b.as_int() == -1) return overflow();
      return Value::integer(floor_div(a.as_int(), b.as_int()));
    case BinaryOp::Mod:
      if (b.as_float() == 0.0) return Error{"integer division or modulo by zero"};
      if (floats) {
        const double x = a.as_float(), y = b.as_float();
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::number(m);
      }
      if (b.as_int() == -1) return Value::integer(0);
      return Value::integer(floor_mod(a.as_int(), b.as_int()));
    case BinaryOp::Pow: {
      if (floats || b.as_int() < 0) {
        if (a.as_float() == 0.0 && b.as_float() < 0) return Error{"0.0 cannot be raised to a negative power"};
        return Value::number(std::pow(a.as_float(), b.as_float()));
      }
      int64_t base = a.as_int(), e = b.as_int(), r = 1;
      while (e > 0) {
        if ((e & 1) != 0 && __builtin_mul_overflow(r, base, &r)) return overflow();
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
      }
      return Value::integer(r);
    }
    default: break;
  }
  return Error{"bad operator"};
}

}  // namespace

Result<Value> unary_op(UnaryOp op, const Value& v) {
  if (v.is_undefined()) return Error{v.undefined_reason()};
  if (!v.is_number()) {
    return Error{std::string("bad operand type for unary ") + (op == UnaryOp::Neg ? "-" : "+") + ": '" +
                 v.type_name() + "'"};
  }
  if (op == UnaryOp::Pos) return v.is_bool() ? Value::integer(v.as_int()) : v;
  if (v.is_float()) return Value::number(-v.as_float());
  if (v.as_int() == INT64_MIN) return overflow();
  return Value::integer(-v.as_int());
}

Result<Value> binary_op(Evaluator& ev, BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::Concat) {
    // ~ converts both sides with str(); undefined becomes "".
    std::string s;
    if (!append_str(s, a, ev.limits().max_output_bytes) || !append_str(s, b, ev.limits().max_output_bytes)) {
      return Error{std::string("string longer than ") + std::to_string(ev.limits().max_output_bytes) + " bytes"};
    }
    if (auto r = ev.charge(s.size() / 64); !r) return r.error();
    return Value::string(std::move(s));
  }
  // Arithmetic on an undefined value is the undefined error ('x' is undefined).
  if (a.is_undefined()) return Error{a.undefined_reason()};
  if (b.is_undefined()) return Error{b.undefined_reason()};
  static constexpr const char* kOpText[] = {"+", "-", "*", "/", "//", "%", "**"};
  const char* op_text = kOpText[static_cast<int>(op)];
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == BinaryOp::Add) {
    if (a.is_string() && b.is_string()) {
      if (auto r = ev.check_string(a.str().size() + b.str().size()); !r) return r.error();
      if (auto r = ev.charge((a.str().size() + b.str().size()) / 64); !r) return r.error();
      return Value::string(a.str() + b.str());
    }
    if (a.is_list_like() && a.kind() == b.kind()) {
      if (auto r = ev.check_list(a.items().size() + b.items().size()); !r) return r.error();
      if (auto r = ev.charge((a.items().size() + b.items().size()) / 16); !r) return r.error();
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
  }
  if (op == BinaryOp::Mul) {
    if ((a.is_string() || a.is_list_like()) && (b.is_int() || b.is_bool())) return repeat(ev, a, b.as_int());
    if ((b.is_string() || b.is_list_like()) && (a.is_int() || a.is_bool())) return repeat(ev, b, a.as_int());
  }
  if (op == BinaryOp::Mod && a.is_string()) {
    Result<std::string> s = percent_format(a.str(), b);
    if (!s) return s.error();
    if (auto r = ev.check_string(s->size()); !r) return r.error();
    return Value::string(std::move(*s));
  }
  return type_error(op_text, a, b);
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;  // jinja2's Undefined iterates as empty
    case Value::Kind::String:
      if (!item.is_string()) {
        return Error{std::string("'in <string>' requires string as left operand, not ") + item.type_name()};
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      for (const Value& v : container.items()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      if (item.is_list_like() && item.kind() != Value::Kind::Tuple) return Error{"unhashable type: 'list'"};
      return container.dict_ref().find(item) != nullptr;
    default:
      return Error{std::string("argument of type '") + container.type_name() + "' is not iterable"};
  }
}

Result<bool> compare_op(Evaluator& ev, CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::Eq: return equals(a, b);
    case CompareOp::Ne: return !equals(a, b);
    case CompareOp::In:
    case CompareOp::NotIn: {
      if (b.is_list_like()) {
        if (auto r = ev.charge(b.items().size() / 16); !r) return r.error();
      } else if (b.is_string()) {
        if (auto r = ev.charge(b.str().size() / 64); !r) return r.error();
      }
      Result<bool> in = contains(b, a);
      if (!in) return in;
      return op == CompareOp::In ? *in : !*in;
    }
    default: break;
  }
  Result<int> c = compare(a, b);
  if (!c) {
    static constexpr const char* kText[] = {"==", "!=", "<", "<=", ">", ">="};
    return Error{quoted(kText[static_cast<int>(op)]) + " not supported between instances of '" +
                 a.type_name() + "' and '" + b.type_name() + "'"};
  }
  switch (op) {
    case CompareOp::Lt: return *c < 0;
    case CompareOp::Le: return *c <= 0;
    case CompareOp::Gt: return *c > 0;
    default: return *c >= 0;
  }
}

}  // namespace quip::chat::jinja
