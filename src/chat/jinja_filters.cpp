// jinja2's built-in filters, plus Hugging Face's tojson. Each takes the
// filtered value as its first positional argument.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_json.h"
#include "chat/jinja_string.h"
#include "tokenizer/unicode.h"

namespace quip::chat::jinja {

Result<Value> make_string(Evaluator& ev, std::string s) {
  if (auto r = ev.check_string(s.size()); !r) return r.error();
  if (auto r = ev.charge(s.size() / 64); !r) return r.error();
  return Value::string(std::move(s));
}

Result<Value> attr_path(Evaluator& ev, const Value& item, const Value& attribute) {
  // jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
  if (!attribute.is_string()) return ev.get_item(item, attribute, 0);
  Value v = item;
  std::string_view path = attribute.str();
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    Value key = Value::string(std::string(part));
    if (!part.empty() && part.size() < 18 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      key = Value::integer(std::atoll(std::string(part).c_str()));
    }
    Result<Value> next = ev.get_item(v, key, 0);
    if (!next) return next;
    v = std::move(*next);
    if (dot == std::string_view::npos) return v;
    path.remove_prefix(dot + 1);
  }
}

namespace {

// Sort keys lower-cased unless case_sensitive, as jinja2's ignore_case.
Value fold_case(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  return Value::string(str_lower(v.str()));
}

// Sorts `items` by `key` (already extracted), stably; Python's TypeError
// for values it cannot order.
Result<void> sort_by(Evaluator& ev, ValueList& items, ValueList keys, bool reverse) {
  if (auto r = ev.charge(items.size() * 4); !r) return r;
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::string failure;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Result<int> c = compare(keys[a], keys[b]);
    if (!c) {
      failure = c.error().message;
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  if (!failure.empty()) return Error{failure};
  ValueList sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  items = std::move(sorted);
  return {};
}

Result<Value> f_default(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("default", call, {"value", "default_value", "boolean"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  const bool use_default = v.is_undefined() || ((*a)[2].truthy() && !v.truthy());
  if (!use_default) return v;
  return a->has(1) ? (*a)[1] : Value::string("");
}

Result<Value> f_length(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("length", call, {"value"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  switch (v.kind()) {
    case Value::Kind::Undefined: return Value::integer(0);
    case Value::Kind::String: return Value::integer(static_cast<int64_t>(utf8_length(v.str())));
    case Value::Kind::List:
    case Value::Kind::Tuple: return Value::integer(static_cast<int64_t>(v.items().size()));
    case Value::Kind::Dict: return Value::integer(static_cast<int64_t>(v.dict_ref().size()));
    default: return Error{std::string("object of type '") + v.type_name() + "' has no len()"};
  }
}

Result<Value> f_join(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("join", call, {"value", "d", "attribute"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  const std::string sep = a->has(1) ? to_str((*a)[1]) : "";
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    if (i > 0) out += sep;
    Value item = (*items)[i];
    if (a->has(2)) {
      Result<Value> v = attr_path(ev, item, (*a)[2]);
      if (!v) return v;
      item = std::move(*v);
    }
    if (!append_str(out, item, ev.limits().max_output_bytes)) return ev.check_string(SIZE_MAX).error();
  }
  return make_string(ev, std::move(out));
}

// Filters of one string argument.
template <std::string (*kFn)(std::string_view)>
Result<Value> string_filter(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("filter", call, {"value"}, 1);
  if (!a) return a.error();
  return make_string(ev, kFn(to_str((*a)[0])));
}

std::string upper_fn(std::string_view s) { return str_upper(s); }
std::string lower_fn(std::string_view s) { return str_lower(s); }
std::string title_fn(std::string_view s) { return jinja_title(s); }
std::string capitalize_fn(std::string_view s) { return str_capitalize(s); }
std::string escape_fn(std::string_view s) { return html_escape(s); }
std::string identity_fn(std::string_view s) { return std::string(s); }

Result<Value> f_trim(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("trim", call, {"value", "chars"}, 1);
  if (!a) return a.error();
  const std::string s = to_str((*a)[0]);
  std::optional<std::string> chars;
  if (a->has(1) && !(*a)[1].is_none()) chars = to_str((*a)[1]);
  return make_string(ev, std::string(str_strip(s, chars, StripSide::Both)));
}

Result<Value> f_replace(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("replace", call, {"s", "old", "new", "count"}, 3);
  if (!a) return a.error();
  int64_t count = -1;
  if (a->has(3) && !(*a)[3].is_none()) {
    Result<int64_t> c = to_int_arg((*a)[3], "replace() count");
    if (!c) return c.error();
    count = *c;
  }
  const std::string s = to_str((*a)[0]), from = to_str((*a)[1]), to = to_str((*a)[2]);
  if (from.empty() && !s.empty() && to.size() > ev.limits().max_output_bytes / (s.size() + 1)) {
    return ev.check_string(SIZE_MAX).error();
  }
  if (!from.empty() && to.size() > from.size() &&
      (to.size() - from.size()) * static_cast<size_t>(str_count(s, from)) + s.size() > ev.limits().max_output_bytes) {
    return ev.check_string(SIZE_MAX).error();
  }
  return make_string(ev, str_replace(s, from, to, count));
}

Result<Value> f_first(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("first", call, {"seq"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  if (items->empty()) return Value::undefined("No first item, sequence was empty.");
  return (*items)[0];
}

Result<Value> f_last(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("last", call, {"seq"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  if (items->empty()) return Value::undefined("No last item, sequence was empty.");
  return items->back();
}

Result<Value> f_list(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("list", call, {"value"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  return Value::list(std::move(*items));
}

Result<Value> f_string(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("string", call, {"value"}, 1);
  if (!a) return a.error();
  std::string s;
  if (!append_str(s, (*a)[0], ev.limits().max_output_bytes)) return ev.check_string(SIZE_MAX).error();
  return make_string(ev, std::move(s));
}

Result<Value> f_pprint(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("pprint", call, {"value"}, 1);
  if (!a) return a.error();
  std::string s;
  if (!append_repr(s, (*a)[0], ev.limits().max_output_bytes)) return ev.check_string(SIZE_MAX).error();
  return make_string(ev, std::move(s));
}

// Python's int(str): optional sign, digits with single underscores between.
std::optional<int64_t> parse_int(std::string_view s, int base) {
  s = str_strip(s, std::nullopt, StripSide::Both);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] | 32) == 'x') s.remove_prefix(2);
  if (base == 8 && s.size() > 2 && s[0] == '0' && (s[1] | 32) == 'o') s.remove_prefix(2);
  if (base == 2 && s.size() > 2 && s[0] == '0' && (s[1] | 32) == 'b') s.remove_prefix(2);
  if (s.empty() || s.front() == '_' || s.back() == '_') return std::nullopt;
  __int128 v = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = static_cast<char>(s[i] | 32);
    if (s[i] == '_') {
      if (s[i - 1] == '_') return std::nullopt;
      continue;
    }
    const int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99);
    if (d >= base) return std::nullopt;
    v = v * base + d;
    if (v > static_cast<__int128>(INT64_MAX) + 1) return std::nullopt;
  }
  if (neg) v = -v;
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(v);
}

// Python's float(str), including "inf" and "nan".
std::optional<double> parse_float(std::string_view s) {
  std::string t;
  for (char c : str_strip(s, std::nullopt, StripSide::Both)) {
    if (c != '_') t += c;
  }
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  if ((t.find('x') != std::string::npos || t.find('X') != std::string::npos)) return std::nullopt;  // no hex floats
  return d;
}

Result<Value> f_int(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("int", call, {"value", "default", "base"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  const Value fallback = a->has(1) ? (*a)[1] : Value::integer(0);
  int64_t base = 10;
  if (a->has(2)) {
    Result<int64_t> b = to_int_arg((*a)[2], "int() base");
    if (!b) return b.error();
    base = *b;
    if (base < 2 || base > 36) return Error{"int() base must be >= 2 and <= 36"};
  }
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) {
    const double f = v.as_float();
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(f));
  }
  if (v.is_string()) {
    if (std::optional<int64_t> i = parse_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
    // jinja2 then tries float(value) and truncates.
    if (std::optional<double> f = parse_float(v.str()); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(*f));
    }
  }
  return fallback;
}

Result<Value> f_float(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("float", call, {"value", "default"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  const Value fallback = a->has(1) ? (*a)[1] : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string()) {
    if (std::optional<double> f = parse_float(v.str())) return Value::number(*f);
  }
  return fallback;
}

Result<Value> f_abs(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("abs", call, {"x"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) return Error{"integer result too large"};
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return Error{std::string("bad operand type for abs(): '") + v.type_name() + "'"};
}

Result<Value> f_round(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("round", call, {"value", "precision", "method"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  int64_t precision = 0;
  if (a->has(1)) {
    Result<int64_t> p = to_int_arg((*a)[1], "round() precision");
    if (!p) return p.error();
    precision = std::clamp<int64_t>(*p, -400, 400);
  }
  const std::string method = a->has(2) ? to_str((*a)[2]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    return Error{"method must be common, ceil or floor"};
  }
  if (!v.is_number()) return Error{std::string("round() needs a number, not ") + v.type_name()};
  if (method == "common") {
    // Python's round(x, n): an int stays an int; a float is rounded half to
    // even on its exact binary value, which is what printf does.
    if (!v.is_float()) {
      if (precision >= 0) return Value::integer(v.as_int());
      const double scale = std::pow(10.0, static_cast<double>(-precision));
      return Value::integer(static_cast<int64_t>(std::nearbyint(static_cast<double>(v.as_int()) / scale) * scale));
    }
    const double f = v.as_float();
    if (!std::isfinite(f)) return v;
    if (precision >= 0) {
      char buf[1024];  // 309 integer digits + 340 decimals at most
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(precision, 340)), f);
      return Value::number(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::number(std::nearbyint(f / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_float() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Result<Value> f_items(Evaluator&, CallArgs& call) {
  Result<Args> a = Args::bind("items", call, {"value"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  if (v.is_undefined()) return Value::list();
  if (!v.is_mapping()) return Error{std::string("can only get item pairs from a mapping, not ") + v.type_name()};
  ValueList out;
  for (const auto& [k, val] : v.dict_ref().items()) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

Result<Value> f_dictsort(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("dictsort", call, {"value", "case_sensitive", "by", "reverse"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  if (!v.is_mapping()) return Error{std::string("dictsort needs a mapping, not ") + v.type_name()};
  const std::string by = a->has(2) ? to_str((*a)[2]) : "key";
  if (by != "key" && by != "value") return Error{"You can only sort by either \"key\" or \"value\""};
  ValueList items, keys;
  for (const auto& [k, val] : v.dict_ref().items()) {
    items.push_back(Value::tuple({k, val}));
    keys.push_back(fold_case(by == "key" ? k : val, (*a)[1].truthy()));
  }
  if (auto r = sort_by(ev, items, std::move(keys), (*a)[3].truthy()); !r) return r.error();
  return Value::list(std::move(items));
}

Result<Value> f_sort(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("sort", call, {"value", "reverse", "case_sensitive", "attribute"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  ValueList keys;
  for (const Value& item : *items) {
    Value key = item;
    if (a->has(3) && !(*a)[3].is_none()) {
      Result<Value> k = attr_path(ev, item, (*a)[3]);
      if (!k) return k;
      key = std::move(*k);
    }
    keys.push_back(fold_case(key, (*a)[2].truthy()));
  }
  if (auto r = sort_by(ev, *items, std::move(keys), (*a)[1].truthy()); !r) return r.error();
  return Value::list(std::move(*items));
}

Result<Value> f_unique(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("unique", call, {"value", "case_sensitive", "attribute"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  if (auto r = ev.charge(items->size() * items->size() / 16); !r) return r.error();
  ValueList out, seen;
  for (const Value& item : *items) {
    Value key = item;
    if (a->has(2) && !(*a)[2].is_none()) {
      Result<Value> k = attr_path(ev, item, (*a)[2]);
      if (!k) return k;
      key = std::move(*k);
    }
    key = fold_case(key, (*a)[1].truthy());
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_reverse(Evaluator& ev, CallArgs& call) {
  Result<Args> a = Args::bind("reverse", call, {"value"}, 1);
  if (!a) return a.error();
  const Value& v = (*a)[0];
  if (v.is_string()) {
    std::vector<std::string_view> chars = utf8_chars(v.str());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return make_string(ev, std::move(out));
  }
  Result<ValueList> items = iterate(ev, v);
  if (!items) return items.error();
  std::reverse(items->begin(), items->end());
  return Value::list(std::move(*items));
}

}  // namespace

// In jinja_filters_seq.cpp.
Result<Value> filter_map(Evaluator& ev, CallArgs& call);
Result<Value> filter_select(Evaluator& ev, CallArgs& call, bool select, bool by_attribute);
Result<Value> filter_sum(Evaluator& ev, CallArgs& call);
Result<Value> filter_min_max(Evaluator& ev, CallArgs& call, bool max);
Result<Value> filter_indent(Evaluator& ev, CallArgs& call);
Result<Value> filter_tojson(Evaluator& ev, CallArgs& call);
Result<Value> filter_batch(Evaluator& ev, CallArgs& call);
Result<Value> filter_wordcount(Evaluator& ev, CallArgs& call);
Result<Value> filter_center(Evaluator& ev, CallArgs& call);
Result<Value> filter_truncate(Evaluator& ev, CallArgs& call);
Result<Value> filter_format(Evaluator& ev, CallArgs& call);
Result<Value> filter_attr(Evaluator& ev, CallArgs& call);
Result<Value> filter_striptags(Evaluator& ev, CallArgs& call);

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> filters{
      {"default", f_default},
      {"d", f_default},
      {"length", f_length},
      {"count", f_length},
      {"join", f_join},
      {"upper", string_filter<upper_fn>},
      {"lower", string_filter<lower_fn>},
      {"title", string_filter<title_fn>},
      {"capitalize", string_filter<capitalize_fn>},
      {"e", string_filter<escape_fn>},
      {"escape", string_filter<escape_fn>},
      {"forceescape", string_filter<escape_fn>},
      {"safe", string_filter<identity_fn>},
      {"trim", f_trim},
      {"replace", f_replace},
      {"first", f_first},
      {"last", f_last},
      {"list", f_list},
      {"string", f_string},
      {"pprint", f_pprint},
      {"int", f_int},
      {"float", f_float},
      {"abs", f_abs},
      {"round", f_round},
      {"items", f_items},
      {"dictsort", f_dictsort},
      {"sort", f_sort},
      {"unique", f_unique},
      {"reverse", f_reverse},
      {"map", filter_map},
      {"select", [](Evaluator& ev, CallArgs& c) { return filter_select(ev, c, true, false); }},
      {"reject", [](Evaluator& ev, CallArgs& c) { return filter_select(ev, c, false, false); }},
      {"selectattr", [](Evaluator& ev, CallArgs& c) { return filter_select(ev, c, true, true); }},
      {"rejectattr", [](Evaluator& ev, CallArgs& c) { return filter_select(ev, c, false, true); }},
      {"sum", filter_sum},
      {"min", [](Evaluator& ev, CallArgs& c) { return filter_min_max(ev, c, false); }},
      {"max", [](Evaluator& ev, CallArgs& c) { return filter_min_max(ev, c, true); }},
      {"indent", filter_indent},
      {"tojson", filter_tojson},
      {"batch", filter_batch},
      {"wordcount", filter_wordcount},
      {"center", filter_center},
      {"truncate", filter_truncate},
      {"format", filter_format},
      {"attr", filter_attr},
      {"striptags", filter_striptags},
  };
  const auto it = filters.find(name);
  return it == filters.end() ? nullptr : it->second;
}

}  // namespace quip::chat::jinja
