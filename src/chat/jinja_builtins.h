// jinja2's built-in filters, tests and globals, and the Python methods of
// str, list and dict that templates call (message.content.strip(),
// tools.items(), ns.ids.append(x)). Each follows the Python behaviour,
// including its defaults (|sort and |dictsort ignore case, |round gives a
// float, |indent leaves the first line alone).
//
// Errors carry no line: the evaluator adds the line of the call.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_value.h"

namespace quip::chat::jinja {

// args.positional[0] is the filtered value.
using FilterFn = Result<Value> (*)(Evaluator&, CallArgs&);
using TestFn = Result<bool> (*)(Evaluator&, const Value&, CallArgs&);

// nullptr when there is no such filter or test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// The method `name` of a str, list, tuple or dict, bound to `object`; nullopt
// when it has none of that name.
std::optional<Value> find_method(const Value& object, std::string_view name);

// range, namespace, dict, cycler, joiner; nullptr for other names.
const Value* find_global(std::string_view name);

// Arguments bound to parameter names as Python binds them.
class Args {
 public:
  // Fails for missing required parameters (the first `required` names),
  // too many positional arguments, and unknown or repeated keywords.
  static Result<Args> bind(std::string_view fn, const CallArgs& call,
                           std::initializer_list<std::string_view> names, size_t required);

  bool has(size_t i) const { return given_[i]; }
  // The argument, or undefined when not given.
  const Value& operator[](size_t i) const { return values_[i]; }

 private:
  std::vector<Value> values_;
  std::vector<bool> given_;
};

// Conversions for arguments, with Python's error messages.
Result<int64_t> to_int_arg(const Value& v, std::string_view what);
Result<std::string> to_str_arg(const Value& v, std::string_view what);
// The items a for loop visits: list items, dict keys, string characters;
// undefined gives none. Fails for other types ("'int' object is not iterable")
// and for strings with more characters than a list may have.
Result<ValueList> iterate(Evaluator& ev, const Value& v);

// jinja2's attribute getter (map, sort, selectattr): "a.b.0" looks up a,
// then b, then item 0.
Result<Value> attr_path(Evaluator& ev, const Value& item, const Value& attribute);
// A new string value, checked against the limits and charged as work.
Result<Value> make_string(Evaluator& ev, std::string s);

// Python's printf-style formatting: "%s and %d" % (a, b).
Result<std::string> percent_format(std::string_view format, const Value& args);
// Python's str.format: "{} and {name}".format(a, name=b).
Result<std::string> brace_format(std::string_view format, const CallArgs& args);

}  // namespace quip::chat::jinja
