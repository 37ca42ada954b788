// The values a Jinja template computes with, modelled on the Python objects
// jinja2 uses, because chat templates are written against (and tested with)
// Python: ints and floats stay apart (1 / 1.0), printing follows str() and
// repr() (True, None, ['a', 'b']), and lists, dicts and namespaces are shared
// by reference, so `ns.items.append(x)` is seen through every name for them.
//
// A Value is cheap to copy (at most one reference count). Not thread safe:
// values belong to one render.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.h"

namespace quip::chat::jinja {

class Value;
class Dict;
class Evaluator;
struct Callable;
struct MacroStmt;
struct Scope;

using ValueList = std::vector<Value>;

class Value {
 public:
  enum class Kind : uint8_t {
    Undefined,  // a missing name, attribute or item; prints as ""
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,      // a List that prints as (a, b) and cannot grow
    Dict,
    Namespace,  // namespace(): a Dict whose attributes `set` may assign
    Callable,   // macro, built-in function or bound method
  };

  Value() = default;  // undefined, with no name to report

  // An undefined value; `why` is what an error reports when it is used
  // ("'tools' is undefined").
  static Value undefined(std::string why);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items = {});
  static Value tuple(ValueList items);
  static Value dict();
  static Value namespace_object();
  static Value callable(std::shared_ptr<Callable> c);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_int() const { return kind_ == Kind::Int; }       // bool excluded
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_list_like() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  // PRECONDITIONS: the matching kind (as_int also accepts Bool, as_float any number).
  bool as_bool() const { return bits_ != 0; }
  int64_t as_int() const { return bits_; }
  double as_float() const;
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  // Containers are shared and mutable (Python semantics), so a const Value
  // still gives access to them.
  ValueList& items() const { return *const_cast<ValueList*>(static_cast<const ValueList*>(ptr_.get())); }
  Dict& dict_ref() const { return *const_cast<Dict*>(static_cast<const Dict*>(ptr_.get())); }
  const Callable& fn() const { return *static_cast<const Callable*>(ptr_.get()); }
  // Why this value is undefined (see undefined()).
  std::string undefined_reason() const;

  // Python truthiness: empty strings and containers, 0, None and undefined are false.
  bool truthy() const;

  // Python's type name, for error messages ("str", "int", "dict", ...).
  std::string type_name() const;

  // Identity of the shared container (is `sameas`): same list/dict object.
  const void* identity() const;

 private:
  // One plain member per representation instead of a std::variant: GCC 12
  // reports false maybe-uninitialized warnings for variants moved by
  // std::swap and std::sort.
  Kind kind_ = Kind::Undefined;
  int64_t bits_ = 0;           // Bool and Int; Float as its bit pattern
  std::shared_ptr<const void> ptr_;  // String, containers, Callable, Undefined's reason (a string)
};

// An insertion-ordered dictionary (Python 3.7+ dict order, which tojson and
// |items keep). String keys of large dicts are indexed; other keys are found
// by scanning (templates use them rarely).
class Dict {
 public:
  using Item = std::pair<Value, Value>;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or replaces, keeping the first insertion's position.
  void set(const Value& key, Value value);
  void set(std::string_view key, Value value) { set(Value::string(std::string(key)), std::move(value)); }
  bool erase(const Value& key);
  void clear();

  size_t size() const { return items_.size(); }
  const std::vector<Item>& items() const { return items_; }

 private:
  // The index of `key` in items_, or items_.size().
  size_t position(std::string_view key) const;
  size_t position(const Value& key) const;
  void reindex();

  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> string_index_;
};

// Arguments of a call: positional, then keyword (name=value) in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  int line = 0;  // where the call is, for errors
};

// A built-in: receives the evaluator (for callbacks such as map('upper')).
// Errors carry no line; the evaluator adds the call's line.
using NativeFn = std::function<Result<Value>(Evaluator&, CallArgs&)>;

struct Callable {
  std::string name;
  NativeFn native;                   // built-ins and bound methods
  const MacroStmt* macro = nullptr;  // macros: the definition (owned by the parsed template)
  // Macros: the scope they were defined in. Weak, because that scope holds the
  // macro, and a cycle of shared_ptrs would never be freed.
  std::weak_ptr<Scope> closure;
  // Bound methods: the object (list, dict, str) they act on; looked at when
  // refusing cycles (see reaches()).
  Value bound_self;
};

// Python's str(v): what {{ v }} prints. Undefined prints as "".
// Appends to `out`; returns false (with `out` cut short) once `out` would grow
// past max_bytes, which nested or shared lists can make huge, or for values
// nested more than 200 levels deep.
// A container that contains itself prints as [...] / {...}, as in Python.
[[nodiscard]] bool append_str(std::string& out, const Value& v, size_t max_bytes);
// Python's repr(v): strings quoted, containers as Python writes them.
[[nodiscard]] bool append_repr(std::string& out, const Value& v, size_t max_bytes);
// The same without a limit that matters, for short values (tests, messages).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
// Python's repr(float): shortest round-trip digits, "1.0", "1e-05", "inf".
std::string float_repr(double f);

// 'text' in single quotes, as Python's messages quote names. (Built by
// appending: GCC 12 warns with -Wrestrict about "'" + std::string.)
std::string quoted(std::string_view text);

// Python ==: 1 == 1.0 == True, containers element by element.
bool equals(const Value& a, const Value& b);
// Python <, as -1/0/1, or an error for types Python cannot order ("str" < "int").
Result<int> compare(const Value& a, const Value& b);

// JSON values become Value trees. Objects keep the order the JSON library
// holds them in: nlohmann::json sorts keys, ordered_json keeps insertion order
// (which tojson then reproduces, as Python would). Integers beyond int64
// become floats.
// Fails for nesting deeper than 512 levels.
Result<Value> from_json(const nlohmann::json& j);
Result<Value> from_json(const nlohmann::ordered_json& j);

// Whether `target` (a list or dict) is `from` or inside it: inserting `from`
// into `target` would make a cycle, which reference counting never frees, so
// the methods that insert refuse to. `visits` counts the containers looked at
// (the caller charges them as work).
bool reaches(const Value& from, const void* target, size_t& visits);

// Python's slice.indices(): s[start:stop:step] over a sequence of `length`
// selects `count` positions start, start + step, ... Unset bounds are
// nullopt. PRECONDITIONS: step != 0.
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};
SliceRange slice_range(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                       int64_t step);

}  // namespace quip::chat::jinja
