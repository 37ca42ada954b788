// Filters over sequences (map, select, sum, min/max, batch) and the text
// layout ones (indent, center, truncate, wordcount, format, tojson).
#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_json.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_string.h"
#include "tokenizer/unicode.h"

namespace quip::chat::jinja {

Result<Value> filter_map(Evaluator& ev, CallArgs& call) {
  if (call.positional.empty()) return Error{"map() needs a value"};
  // jinja2 skips a false value (none, "", []) instead of iterating it.
  if (!call.positional[0].truthy()) return Value::list();
  Result<ValueList> items = iterate(ev, call.positional[0]);
  if (!items) return items.error();
  ValueList out;
  out.reserve(items->size());
  if (call.positional.size() == 1) {
    // map(attribute='x', default=...)
    Value attribute, fallback = Value::none();
    bool has_attribute = false;
    for (const auto& [k, v] : call.keyword) {
      if (k == "attribute") {
        attribute = v;
        has_attribute = true;
      } else if (k == "default") {
        fallback = v;
      } else {
        return Error{std::string("map() got an unexpected keyword argument '") + k + "'"};
      }
    }
    if (!has_attribute) return Error{"map() needs a filter name or attribute="};
    for (const Value& item : *items) {
      Result<Value> v = attr_path(ev, item, attribute);
      if (!v) return v;
      out.push_back(v->is_undefined() && !fallback.is_none() ? fallback : std::move(*v));
    }
    return Value::list(std::move(out));
  }
  Result<std::string> name = to_str_arg(call.positional[1], "map() filter name");
  if (!name) return name.error();
  for (const Value& item : *items) {
    CallArgs inner;
    inner.line = call.line;
    inner.positional.push_back(item);
    inner.positional.insert(inner.positional.end(), call.positional.begin() + 2, call.positional.end());
    inner.keyword = call.keyword;
    Result<Value> v = ev.apply_filter(*name, inner);
    if (!v) return v;
    out.push_back(std::move(*v));
  }
  return Value::list(std::move(out));
}

Result<Value> filter_select(Evaluator& ev, CallArgs& call, bool select, bool by_attribute) {
  if (call.positional.empty()) return Error{"select() needs a value"};
  if (!call.positional[0].truthy()) return Value::list();  // as in map
  Result<ValueList> items = iterate(ev, call.positional[0]);
  if (!items) return items.error();
  size_t next = 1;
  Value attribute;
  if (by_attribute) {
    if (call.positional.size() < 2) return Error{"Missing parameter for attribute name"};
    attribute = call.positional[next++];
  }
  std::string test;
  if (call.positional.size() > next) {
    Result<std::string> t = to_str_arg(call.positional[next++], "test name");
    if (!t) return t.error();
    test = std::move(*t);
  }
  ValueList out;
  for (const Value& item : *items) {
    Value probe = item;
    if (by_attribute) {
      Result<Value> v = attr_path(ev, item, attribute);
      if (!v) return v;
      probe = std::move(*v);
    }
    bool ok = probe.truthy();
    if (!test.empty()) {
      CallArgs args;
      args.line = call.line;
      args.positional.assign(call.positional.begin() + static_cast<std::ptrdiff_t>(next), call.positional.end());
      args.keyword = call.keyword;
      Result<bool> r = ev.apply_test(test, probe, args);
      if (!r) return r.error();
      ok = *r;
    }
    if (ok == select) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> filter_sum(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("sum", call, {"iterable", "attribute", "start"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  Value total = a->has(2) ? (*a)[2] : Value::integer(0);
  for (const Value& item : *items) {
    Value v = item;
    if (a->has(1) && !(*a)[1].is_none()) {
      Result<Value> x = attr_path(ev, item, (*a)[1]);
      if (!x) return x;
      v = std::move(*x);
    }
    Result<Value> s = binary_op(ev, BinaryOp::Add, total, v);
    if (!s) return s;
    total = std::move(*s);
  }
  return total;
}

Result<Value> filter_min_max(Evaluator& ev, CallArgs& call, bool max) {
  Result<Args> a = Args::bind(max ? "max" : "min", call, {"value", "case_sensitive", "attribute"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  if (items->empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < items->size(); ++i) {
    Value key = (*items)[i];
    if (a->has(2) && !(*a)[2].is_none()) {
      Result<Value> k = attr_path(ev, key, (*a)[2]);
      if (!k) return k;
      key = std::move(*k);
    }
    if (!(*a)[1].truthy() && key.is_string()) key = Value::string(str_lower(key.str()));
    if (i > 0) {
      Result<int> c = compare(key, best_key);
      if (!c) return c.error();
      if (!(max ? *c > 0 : *c < 0)) continue;
    }
    best = i;
    best_key = std::move(key);
  }
  return (*items)[best];
}

Result<Value> filter_indent(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("indent", call, {"s", "width", "first", "blank"}, 1);
  if (!a) return a.error();
  std::string indention = "    ";
  if (a->has(1)) {
    if ((*a)[1].is_string()) {
      indention = (*a)[1].str();
    } else {
      Result<int64_t> w = to_int_arg((*a)[1], "indent() width");
      if (!w) return w.error();
      if (*w > 1024) return Error{"indent() width larger than 1024"};
      indention.assign(static_cast<size_t>(std::max<int64_t>(*w, 0)), ' ');
    }
  }
  // jinja2 appends a newline to the value itself (s += "\n"), which only a
  // string allows; then a trailing newline survives splitlines().
  const Value& text = (*a)[0];
  if (text.is_undefined()) return Error{text.undefined_reason()};
  if (!text.is_string()) return Error{"indent needs a string, not " + text.type_name()};
  const std::vector<std::string> lines = str_splitlines(text.str() + "\n", false);
  if (lines.size() * indention.size() > ev.limits().max_output_bytes) return ev.check_string(SIZE_MAX).error();
  std::string out;
  if ((*a)[3].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += std::string("\n") + indention;
      out += lines[i];
    }
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) {
        out += "\n";
        if (!lines[i].empty()) out += indention;
      }
      out += lines[i];
    }
  }
  if ((*a)[2].truthy()) out = indention + out;
  return make_string(ev, std::move(out));
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), unlike jinja2's HTML-safe one.
Result<Value> filter_tojson(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("tojson", call, {"x", "ensure_ascii", "indent", "separators", "sort_keys"}, 1);
  if (!a) return a.error();
  JsonOptions o;
  o.ensure_ascii = (*a)[1].truthy();
  o.sort_keys = (*a)[4].truthy();
  const Value& indent = (*a)[2];
  if (indent.is_string()) {
    o.indent = indent.str();
  } else if (indent.is_int()) {
    if (indent.as_int() > 1024) return Error{"tojson indent larger than 1024"};
    o.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent.as_int(), 0)), ' ');
  } else if (!indent.is_none() && !indent.is_undefined()) {
    return Error{std::string("tojson indent must be an integer or a string, not ") + indent.type_name()};
  }
  const Value& sep = (*a)[3];
  if (sep.is_list_like()) {
    if (sep.items().size() != 2 || !sep.items()[0].is_string() || !sep.items()[1].is_string()) {
      return Error{"tojson separators must be two strings"};
    }
    o.item_separator = sep.items()[0].str();
    o.key_separator = sep.items()[1].str();
  } else if (!sep.is_none() && !sep.is_undefined()) {
    return Error{"tojson separators must be a (item, key) pair"};
  }
  Result<std::string> s = to_json((*a)[0], o, ev.limits().max_output_bytes);
  if (!s) return s.error();
  return make_string(ev, std::move(*s));
}

Result<Value> filter_batch(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("batch", call, {"value", "linecount", "fill_with"}, 2);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  Result<int64_t> n = to_int_arg((*a)[1], "batch() linecount");
  if (!n) return n.error();
  if (*n <= 0) return Error{"batch() linecount must be positive"};
  if (auto r = ev.check_list(items->size() + static_cast<size_t>(std::min<int64_t>(*n, INT32_MAX))); !r) {
    return r.error();
  }
  ValueList out, row;
  for (const Value& item : *items) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == *n) out.push_back(Value::list(std::exchange(row, {})));
  }
  if (!row.empty()) {
    if (a->has(2)) {
      while (static_cast<int64_t>(row.size()) < *n) row.push_back((*a)[2]);
    }
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

Result<Value> filter_wordcount(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("wordcount", call, {"s"}, 1);
  if (!a) return a.error();
  // Runs of word characters (\w: letters, digits, underscore).
  const std::string s = to_str((*a)[0]);
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const tokenizer::Utf8Char c = tokenizer::utf8_decode(s, i);
    const bool w = c.cp == '_' || (c.cp >= '0' && c.cp <= '9') || is_alpha(c.cp);
    if (w && !in_word) ++words;
    in_word = w;
    i += c.len;
  }
  return Value::integer(words);
}

Result<Value> filter_center(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("center", call, {"value", "width"}, 1);
  if (!a) return a.error();
  const std::string s = to_str((*a)[0]);
  int64_t width = 80;
  if (a->has(1)) {
    Result<int64_t> w = to_int_arg((*a)[1], "center() width");
    if (!w) return w.error();
    width = *w;
  }
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value::string(s);
  if (static_cast<uint64_t>(width) > ev.limits().max_output_bytes) return ev.check_string(SIZE_MAX).error();
  // CPython's str.center puts the odd space on the left when width is odd.
  const int64_t margin = width - len;
  const int64_t left = margin / 2 + (margin & width & 1);
  return make_string(ev, std::string(static_cast<size_t>(left), ' ') + s +
                             std::string(static_cast<size_t>(margin - left), ' '));
}

Result<Value> filter_truncate(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("truncate", call, {"s", "length", "killwords", "end", "leeway"}, 1);
  if (!a) return a.error();
  // jinja2 takes len() and slices of the value itself: only strings work
  // (undefined has length 0 and comes back as it is).
  const Value& value = (*a)[0];
  if (value.is_undefined()) return value;
  int64_t length = 255, leeway = 5;
  if (a->has(1)) {
    Result<int64_t> l = to_int_arg((*a)[1], "truncate() length");
    if (!l) return l.error();
    length = *l;
  }
  if (a->has(4) && !(*a)[4].is_none()) {
    Result<int64_t> l = to_int_arg((*a)[4], "truncate() leeway");
    if (!l) return l.error();
    leeway = *l;
  }
  if (!value.is_string()) {
    // A list short enough comes back whole; a longer one cannot be cut as text.
    const bool sized = value.is_list_like() || value.kind() == Value::Kind::Dict;
    const auto n = static_cast<int64_t>(value.is_list_like() ? value.items().size()
                                                              : (sized ? value.dict_ref().size() : 0));
    if (sized && n <= length + leeway) return value;
    return Error{"truncate needs a string, not " + value.type_name()};
  }
  const std::string& s = value.str();
  const std::string end = a->has(3) ? to_str((*a)[3]) : "...";
  const auto end_len = static_cast<int64_t>(utf8_length(end));
  if (length < end_len) return Error{std::string("expected length >= ") + std::to_string(end_len) + ", got " + std::to_string(length)};
  if (leeway < 0) return Error{"expected leeway >= 0"};
  const std::vector<std::string_view> chars = utf8_chars(s);
  if (static_cast<int64_t>(chars.size()) <= length + leeway) return Value::string(s);
  std::string head;
  for (int64_t i = 0; i < length - end_len; ++i) head += chars[static_cast<size_t>(i)];
  if (!(*a)[2].truthy()) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return make_string(ev, head + end);
}

Result<Value> filter_format(Evaluator& ev, CallArgs& call) {
  if (call.positional.empty()) return Error{"format() needs a value"};
  if (call.positional.size() > 1 && !call.keyword.empty()) {
    return Error{"can't handle positional and keyword arguments at the same time"};
  }
  Value args;
  if (!call.keyword.empty()) {
    args = Value::dict();
    for (const auto& [k, v] : call.keyword) args.dict_ref().set(k, v);
  } else {
    args = Value::tuple(ValueList(call.positional.begin() + 1, call.positional.end()));
  }
  Result<std::string> s = percent_format(to_str(call.positional[0]), args);
  if (!s) return s.error();
  return make_string(ev, std::move(*s));
}

Result<Value> filter_attr(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("attr", call, {"obj", "name"}, 2);
  if (!a) return a.error();
  Result<std::string> name = to_str_arg((*a)[1], "attr() name");
  if (!name) return name.error();
  // Python's getattr only: a dict's keys are not its attributes (a
  // namespace's are).
  const Value& obj = (*a)[0];
  if (obj.is_undefined()) return Error{obj.undefined_reason()};
  if (obj.kind() == Value::Kind::Namespace) return ev.get_attr(obj, *name, 0);
  if (std::optional<Value> m = find_method(obj, *name)) return *m;
  std::string why = "'";
  why += obj.type_name();
  why += " object' has no attribute '" + *name + "'";
  return Value::undefined(std::move(why));
}

Result<Value> filter_striptags(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("striptags", call, {"value"}, 1);
  if (!a) return a.error();
  const std::string s = to_str((*a)[0]);
  std::string text;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      const size_t e = s.find("-->", i + 4);
      i = e == std::string::npos ? s.size() : e + 3;
    } else if (s[i] == '<' && s.find('>', i) != std::string::npos) {
      i = s.find('>', i) + 1;
    } else {
      text += s[i++];
    }
  }
  text = str_replace(text, "&lt;", "<", -1);
  text = str_replace(text, "&gt;", ">", -1);
  text = str_replace(text, "&quot;", "\"", -1);
  text = str_replace(text, "&#39;", "'", -1);
  text = str_replace(text, "&amp;", "&", -1);
  std::string out;
  for (const std::string& w : str_split(text, std::nullopt, -1, false)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return make_string(ev, std::move(out));
}

}  // namespace quip::chat::jinja
