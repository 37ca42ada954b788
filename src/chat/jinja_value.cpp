#include "chat/jinja_value.h"

#include <charconv>
#include <algorithm>
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "chat/jinja_string.h"

namespace quip::chat::jinja {

Value Value::undefined(std::string why) {
  Value v;
  v.ptr_ = std::make_shared<const std::string>(std::move(why));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bits_ = b ? 1 : 0;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.bits_ = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.bits_ = std::bit_cast<int64_t>(f);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

namespace {

// Releasing a deeply nested list (a template can build [[[...]]] in a loop)
// would recurse once per level and could overflow the stack. Containers are
// deleted through this queue instead: a release during another release only
// queues, and the outermost one drains the queue in a loop.
void release(void* p, void (*destroy)(void*)) {
  thread_local std::vector<std::pair<void*, void (*)(void*)>> pending;
  thread_local bool draining = false;
  pending.emplace_back(p, destroy);
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    const auto [q, d] = pending.back();
    pending.pop_back();
    d(q);
  }
  draining = false;
}

template <class T>
struct QueuedDelete {
  void operator()(T* p) const {
    release(p, [](void* q) { delete static_cast<T*>(q); });
  }
};

// `new` paired with the queued deleter (make_shared cannot take a deleter).
template <class T, class... Args>
std::shared_ptr<T> make_container(Args&&... args) {
  return std::shared_ptr<T>(new T(std::forward<Args>(args)...), QueuedDelete<T>{});
}

}  // namespace

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  v.ptr_ = make_container<ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict() {
  Value v;
  v.kind_ = Kind::Dict;
  v.ptr_ = make_container<Dict>();
  return v;
}

Value Value::namespace_object() {
  Value v = dict();
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::callable(std::shared_ptr<Callable> c) {
  Value v;
  v.kind_ = Kind::Callable;
  v.ptr_ = std::move(c);
  return v;
}

double Value::as_float() const {
  if (kind_ == Kind::Float) return std::bit_cast<double>(bits_);
  return static_cast<double>(bits_);
}

std::string Value::undefined_reason() const {
  if (kind_ == Kind::Undefined && ptr_ && !static_cast<const std::string*>(ptr_.get())->empty()) {
    return *static_cast<const std::string*>(ptr_.get());
  }
  return "value is undefined";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool:
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0.0;
    case Kind::String: return !str().empty();
    case Kind::List:
    case Kind::Tuple: return !items().empty();
    case Kind::Dict: return dict_ref().size() != 0;
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "object";
}

std::string quoted(std::string_view text) {
  std::string s;
  s.reserve(text.size() + 2);
  s += '\'';
  s += text;
  s += '\'';
  return s;
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict:
    case Kind::Namespace:
    case Kind::Callable: return ptr_.get();
    default: return nullptr;
  }
}

// Most dicts in a render are small (a message's few keys, a loop object):
// those are scanned, and only larger ones get a hash index of their keys.
constexpr size_t kIndexThreshold = 12;

size_t Dict::position(std::string_view key) const {
  if (items_.size() <= kIndexThreshold) {
    for (size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].first.is_string() && items_[i].first.str() == key) return i;
    }
    return items_.size();
  }
  const auto it = string_index_.find(std::string(key));
  return it == string_index_.end() ? items_.size() : it->second;
}

size_t Dict::position(const Value& key) const {
  if (key.is_string()) return position(std::string_view(key.str()));
  for (size_t i = 0; i < items_.size(); ++i) {
    if (!items_[i].first.is_string() && equals(items_[i].first, key)) return i;
  }
  return items_.size();
}

void Dict::reindex() {
  string_index_.clear();
  if (items_.size() <= kIndexThreshold) return;
  for (size_t k = 0; k < items_.size(); ++k) {
    if (items_[k].first.is_string()) string_index_.emplace(items_[k].first.str(), k);
  }
}

const Value* Dict::find(std::string_view key) const {
  const size_t i = position(key);
  return i == items_.size() ? nullptr : &items_[i].second;
}

const Value* Dict::find(const Value& key) const {
  const size_t i = position(key);
  return i == items_.size() ? nullptr : &items_[i].second;
}

void Dict::set(const Value& key, Value value) {
  if (const size_t i = position(key); i != items_.size()) {
    items_[i].second = std::move(value);
    return;
  }
  items_.emplace_back(key, std::move(value));
  if (items_.size() == kIndexThreshold + 1) {
    reindex();
  } else if (items_.size() > kIndexThreshold && key.is_string()) {
    string_index_.emplace(key.str(), items_.size() - 1);
  }
}

bool Dict::erase(const Value& key) {
  const size_t i = position(key);
  if (i == items_.size()) return false;
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
  reindex();
  return true;
}

void Dict::clear() {
  items_.clear();
  string_index_.clear();
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, d.ddde±XX, then laid out
  // as Python's repr does: positional when -4 <= exponent < 16.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e_pos = sci.find('e');
  std::string_view mant = sci.substr(0, e_pos);
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  std::string sign;
  if (!mant.empty() && mant[0] == '-') {
    sign = "-";
    mant.remove_prefix(1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out = sign;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out += std::string("0.") + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += std::string(".") + digits.substr(1);
  out += exp < 0 ? "e-" : "e+";
  const int a = exp < 0 ? -exp : exp;
  if (a < 10) out += '0';
  out += std::to_string(a);
  return out;
}

namespace {

// Nesting deeper than this is not printed (the printer recurses per level;
// Python's repr gives up near 1000).
constexpr size_t kMaxPrintDepth = 200;

// Writes Python str()/repr() text with a size limit and cycle detection.
class Printer {
 public:
  Printer(std::string& out, size_t max_bytes) : out_(out), max_(max_bytes) {}

  bool str(const Value& v) {
    if (v.is_undefined()) return true;
    if (v.is_string()) return put(v.str());
    return repr(v);
  }

  bool repr(const Value& v) {
    switch (v.kind()) {
      case Value::Kind::Undefined: return put("Undefined");
      case Value::Kind::None: return put("None");
      case Value::Kind::Bool: return put(v.as_bool() ? "True" : "False");
      case Value::Kind::Int: return put(std::to_string(v.as_int()));
      case Value::Kind::Float: return put(float_repr(v.as_float()));
      case Value::Kind::String: return put(str_repr(v.str()));
      case Value::Kind::List: return seq(v, "[", "]");
      case Value::Kind::Tuple:
        if (v.items().size() == 1) return put("(") && repr(v.items()[0]) && put(",)");
        return seq(v, "(", ")");
      case Value::Kind::Dict: return mapping(v);
      case Value::Kind::Namespace: return put("<Namespace ") && mapping(v) && put(">");
      case Value::Kind::Callable: return put(std::string("<function ") + v.fn().name + ">");
    }
    return true;
  }

 private:
  bool put(std::string_view s) {
    if (out_.size() + s.size() > max_) {
      out_.append(s.substr(0, max_ - std::min(max_, out_.size())));
      return false;
    }
    out_ += s;
    return true;
  }

  // True when `v` is already being printed further up (a cycle).
  bool entered(const Value& v) {
    for (const void* p : open_) {
      if (p == v.identity()) return true;
    }
    return false;
  }

  bool seq(const Value& v, std::string_view open, std::string_view close) {
    if (entered(v)) return put(open) && put("...") && put(close);
    if (open_.size() >= kMaxPrintDepth) return false;
    open_.push_back(v.identity());
    bool ok = put(open);
    const ValueList& items = v.items();
    for (size_t i = 0; ok && i < items.size(); ++i) {
      if (i > 0) ok = put(", ");
      ok = ok && repr(items[i]);
    }
    open_.pop_back();
    return ok && put(close);
  }

  bool mapping(const Value& v) {
    if (entered(v)) return put("{...}");
    if (open_.size() >= kMaxPrintDepth) return false;
    open_.push_back(v.identity());
    bool ok = put("{");
    bool first = true;
    for (const auto& [k, val] : v.dict_ref().items()) {
      if (!ok) break;
      if (!first) ok = put(", ");
      first = false;
      ok = ok && repr(k) && put(": ") && repr(val);
    }
    open_.pop_back();
    return ok && put("}");
  }

  std::string& out_;
  size_t max_;
  std::vector<const void*> open_;
};

constexpr size_t kShortTextLimit = 1 << 20;

}  // namespace

bool append_str(std::string& out, const Value& v, size_t max_bytes) {
  return Printer(out, max_bytes).str(v);
}

bool append_repr(std::string& out, const Value& v, size_t max_bytes) {
  return Printer(out, max_bytes).repr(v);
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  (void)append_str(out, v, kShortTextLimit);
  return out;
}

std::string to_repr(const Value& v) {
  std::string out;
  (void)append_repr(out, v, kShortTextLimit);
  return out;
}

namespace {

// Comparisons stop descending past this depth (self-containing lists).
constexpr int kMaxCompareDepth = 200;

bool equals_at(const Value& a, const Value& b, int depth);

}  // namespace

namespace {

bool equals_at(const Value& a, const Value& b, int depth) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.str() == b.str();
    case K::List:
    case K::Tuple: {
      const ValueList &x = a.items(), &y = b.items();
      if (x.size() != y.size()) return false;
      if (&x == &y) return true;
      if (depth >= kMaxCompareDepth) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].identity() != nullptr && x[i].identity() == y[i].identity()) continue;
        if (!equals_at(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case K::Dict: {
      const Dict &x = a.dict_ref(), &y = b.dict_ref();
      if (x.size() != y.size()) return false;
      if (&x == &y) return true;
      if (depth >= kMaxCompareDepth) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.find(k);
        if (other == nullptr || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

namespace {

Result<int> compare_at(const Value& a, const Value& b, int depth) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : (y < x ? 1 : 0);
    }
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (y < x ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind() == b.kind() && a.is_list_like()) {
    const ValueList &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      if (depth >= kMaxCompareDepth) return Error{"lists nested too deeply to compare"};
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return Error{std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
               b.type_name() + "'"};
}

}  // namespace

Result<int> compare(const Value& a, const Value& b) { return compare_at(a, b, 0); }

namespace {

// Caller data nested deeper than this is refused (conversion recurses per level).
constexpr int kMaxJsonDepth = 512;

template <class Json>
Result<Value> from_json_impl(const Json& j, int depth) {
  if (depth > kMaxJsonDepth) return Error{"JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) {
        Result<Value> v = from_json_impl(e, depth + 1);
        if (!v) return v;
        items.push_back(std::move(*v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::dict();
      for (auto it = j.begin(); it != j.end(); ++it) {
        Result<Value> v = from_json_impl(*it, depth + 1);
        if (!v) return v;
        d.dict_ref().set(it.key(), std::move(*v));
      }
      return d;
    }
    default: return Value::none();  // binary and discarded values have no Python equivalent
  }
}

}  // namespace

Result<Value> from_json(const nlohmann::json& j) { return from_json_impl(j, 0); }
Result<Value> from_json(const nlohmann::ordered_json& j) { return from_json_impl(j, 0); }

bool reaches(const Value& from, const void* target, size_t& visits) {
  // Iterative, with a visited set: shared sub-lists are looked at once.
  std::vector<const Value*> todo;
  std::unordered_set<const void*> seen;
  // Containers, and callables for the object a bound method holds.
  const auto push = [&](const Value& e) {
    if (e.identity() != nullptr) todo.push_back(&e);
  };
  push(from);
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    const void* id = v->identity();
    if (id == target) return true;
    if (!seen.insert(id).second) continue;
    ++visits;
    if (v->is_callable()) {
      push(v->fn().bound_self);
    } else if (v->is_list_like()) {
      for (const Value& e : v->items()) push(e);
    } else {
      for (const auto& [k, e] : v->dict_ref().items()) push(e);
    }
  }
  return false;
}

SliceRange slice_range(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                       int64_t step) {
  const auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x = x < -length ? (step < 0 ? -1 : 0) : x + length;
    } else if (x >= length) {
      x = step < 0 ? length - 1 : length;
    }
    return x;
  };
  SliceRange r;
  r.step = step;
  r.start = clamp(start, step < 0 ? length - 1 : 0);
  const int64_t end = clamp(stop, step < 0 ? -1 : length);
  // In 128 bits: a step near INT64_MIN would overflow the arithmetic.
  const __int128 span = step > 0 ? static_cast<__int128>(end) - r.start : static_cast<__int128>(r.start) - end;
  const __int128 abs_step = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  r.count = span <= 0 ? 0 : static_cast<int64_t>((span + abs_step - 1) / abs_step);
  return r;
}

}  // namespace quip::chat::jinja
