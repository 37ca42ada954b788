// Python methods of str, list, tuple and dict that templates call.
#include <algorithm>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_string.h"

namespace quip::chat::jinja {
namespace {

// A method: the object it is bound to, the evaluator and the call's arguments.
using Method = Result<Value> (*)(Evaluator&, const Value&, CallArgs&);

std::optional<std::string> opt_str(const Args& a, size_t i) {
  if (!a.has(i) || a[i].is_none()) return std::nullopt;
  return to_str(a[i]);
}

Result<int64_t> int_or(const Args& a, size_t i, int64_t fallback, std::string_view what) {
  if (!a.has(i) || a[i].is_none()) return fallback;
  return to_int_arg(a[i], what);
}

Value str_list(std::vector<std::string> parts) {
  ValueList out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

// ---- str ----

template <StripSide kSide>
Result<Value> s_strip(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("strip", call, {"chars"}, 0);
  if (!a) return a.error();
  const std::optional<std::string> chars = opt_str(*a, 0);
  return Value::string(std::string(str_strip(self.str(), chars, kSide)));
}

template <std::string (*kFn)(std::string_view)>
Result<Value> s_map(Evaluator& ev, const Value& self, CallArgs& call) {
  if (!call.positional.empty() || !call.keyword.empty()) return Error{"this method takes no arguments"};
  return make_string(ev, kFn(self.str()));
}

template <bool (*kFn)(std::string_view)>
Result<Value> s_is(Evaluator&, const Value& self, CallArgs& call) {
  if (!call.positional.empty() || !call.keyword.empty()) return Error{"this method takes no arguments"};
  return Value::boolean(kFn(self.str()));
}

std::string upper_fn(std::string_view s) { return str_upper(s); }
std::string lower_fn(std::string_view s) { return str_lower(s); }
std::string title_fn(std::string_view s) { return str_title(s); }
std::string capitalize_fn(std::string_view s) { return str_capitalize(s); }
std::string swapcase_fn(std::string_view s) { return str_swapcase(s); }

// startswith/endswith(prefix or tuple of prefixes, start, end).
template <bool kEnd>
Result<Value> s_affix(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind(kEnd ? "endswith" : "startswith", call, {"prefix", "start", "end"}, 1);
  if (!a) return a.error();
  std::string_view s = self.str();
  std::string sliced;
  if (a->has(1) || a->has(2)) {
    std::optional<int64_t> b, e;
    for (size_t k = 1; k <= 2; ++k) {
      if (!a->has(k) || (*a)[k].is_none()) continue;
      Result<int64_t> n = to_int_arg((*a)[k], k == 1 ? "start" : "end");
      if (!n) return n.error();
      (k == 1 ? b : e) = *n;
    }
    sliced = utf8_slice(s, b, e, 1);
    s = sliced;
  }
  const auto test = [&](const Value& p) -> Result<bool> {
    if (!p.is_string()) return Error{std::string("startswith/endswith arguments must be str or a tuple of str, not ") + p.type_name()};
    return kEnd ? s.ends_with(p.str()) : s.starts_with(p.str());
  };
  const Value& arg = (*a)[0];
  if (arg.is_list_like()) {
    for (const Value& p : arg.items()) {
      Result<bool> r = test(p);
      if (!r) return r.error();
      if (*r) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  Result<bool> r = test(arg);
  if (!r) return r.error();
  return Value::boolean(*r);
}

template <bool kRight>
Result<Value> s_split(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind(kRight ? "rsplit" : "split", call, {"sep", "maxsplit"}, 0);
  if (!a) return a.error();
  const std::optional<std::string> sep = opt_str(*a, 0);
  if (sep && sep->empty()) return Error{"empty separator"};
  Result<int64_t> maxsplit = int_or(*a, 1, -1, "maxsplit");
  if (!maxsplit) return maxsplit.error();
  if (auto r = ev.charge(self.str().size() / 16); !r) return r.error();
  // Bound the number of pieces before making them.
  const std::string& s = self.str();
  int64_t pieces = sep ? str_count(s, *sep) + 1 : static_cast<int64_t>(std::count_if(s.begin(), s.end(), [](char c) {
                                                     return c == ' ' || (c >= '\t' && c <= '\r');
                                                   })) + 1;
  if (*maxsplit >= 0) pieces = std::min(pieces, *maxsplit + 1);
  if (auto r = ev.check_list(static_cast<size_t>(pieces)); !r) return r.error();
  return str_list(str_split(s, sep, *maxsplit, kRight));
}

Result<Value> s_splitlines(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("splitlines", call, {"keepends"}, 0);
  if (!a) return a.error();
  const std::string& s = self.str();
  if (auto r = ev.check_list(static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
                               return c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e);
                             })) + 1);
      !r) {
    return r.error();
  }
  return str_list(str_splitlines(self.str(), (*a)[0].truthy()));
}

Result<Value> s_replace(Evaluator& ev, const Value& self, CallArgs& call) {
  CallArgs inner = call;
  inner.positional.insert(inner.positional.begin(), self);
  return find_filter("replace")(ev, inner);
}

template <bool kRight, bool kIndex>
Result<Value> s_find(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind(kIndex ? "index" : "find", call, {"sub"}, 1);
  if (!a) return a.error();
  Result<std::string> sub = to_str_arg((*a)[0], "find() argument");
  if (!sub) return sub.error();
  const int64_t pos = str_find(self.str(), *sub, kRight);
  if (kIndex && pos < 0) return Error{"substring not found"};
  return Value::integer(pos);
}

Result<Value> s_count(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("count", call, {"sub"}, 1);
  if (!a) return a.error();
  Result<std::string> sub = to_str_arg((*a)[0], "count() argument");
  if (!sub) return sub.error();
  return Value::integer(str_count(self.str(), *sub));
}

Result<Value> s_join(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("join", call, {"iterable"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& item = (*items)[i];
    if (!item.is_string()) {
      return Error{std::string("sequence item ") + std::to_string(i) + ": expected str instance, " + item.type_name() + " found"};
    }
    if (i > 0) out += self.str();
    out += item.str();
    if (out.size() > ev.limits().max_output_bytes) return ev.check_string(out.size()).error();
  }
  return make_string(ev, std::move(out));
}

Result<Value> s_format(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<std::string> s = brace_format(self.str(), call);
  if (!s) return s.error();
  return make_string(ev, std::move(*s));
}

// center, ljust, rjust(width, fillchar=' ').
template <int kAlign>  // -1 left (ljust), 0 center, 1 right (rjust)
Result<Value> s_pad(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("pad", call, {"width", "fillchar"}, 1);
  if (!a) return a.error();
  Result<int64_t> width = to_int_arg((*a)[0], "width");
  if (!width) return width.error();
  const std::string fill = a->has(1) ? to_str((*a)[1]) : " ";
  if (utf8_length(fill) != 1) return Error{"The fill character must be exactly one character long"};
  const auto len = static_cast<int64_t>(utf8_length(self.str()));
  if (*width <= len) return self;
  if (static_cast<uint64_t>(*width) * fill.size() > ev.limits().max_output_bytes) return ev.check_string(SIZE_MAX).error();
  const int64_t margin = *width - len;
  const int64_t left = kAlign < 0 ? 0 : (kAlign > 0 ? margin : margin / 2 + (margin & *width & 1));
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self.str();
  for (int64_t i = left; i < margin; ++i) out += fill;
  return make_string(ev, std::move(out));
}

Result<Value> s_zfill(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("zfill", call, {"width"}, 1);
  if (!a) return a.error();
  Result<int64_t> width = to_int_arg((*a)[0], "width");
  if (!width) return width.error();
  const std::string& s = self.str();
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (*width <= len) return self;
  if (static_cast<uint64_t>(*width) > ev.limits().max_output_bytes) return ev.check_string(SIZE_MAX).error();
  const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  return make_string(ev, s.substr(0, sign) + std::string(static_cast<size_t>(*width - len), '0') + s.substr(sign));
}

template <bool kRight>
Result<Value> s_partition(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("partition", call, {"sep"}, 1);
  if (!a) return a.error();
  Result<std::string> sep = to_str_arg((*a)[0], "separator");
  if (!sep) return sep.error();
  if (sep->empty()) return Error{"empty separator"};
  const std::string& s = self.str();
  const size_t pos = kRight ? s.rfind(*sep) : s.find(*sep);
  if (pos == std::string::npos) {
    return kRight ? Value::tuple({Value::string(""), Value::string(""), self})
                  : Value::tuple({self, Value::string(""), Value::string("")});
  }
  return Value::tuple({Value::string(s.substr(0, pos)), Value::string(*sep), Value::string(s.substr(pos + sep->size()))});
}

template <bool kSuffix>
Result<Value> s_remove_affix(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("removeprefix", call, {"affix"}, 1);
  if (!a) return a.error();
  Result<std::string> affix = to_str_arg((*a)[0], "argument");
  if (!affix) return affix.error();
  std::string_view s = self.str();
  if (kSuffix && s.ends_with(*affix)) s.remove_suffix(affix->size());
  if (!kSuffix && s.starts_with(*affix)) s.remove_prefix(affix->size());
  return Value::string(std::string(s));
}

// ---- list and tuple ----

Result<Value> l_append(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("append", call, {"object"}, 1);
  if (!a) return a.error();
  if (auto r = ev.check_list(self.items().size() + 1); !r) return r.error();
  if (auto r = ev.check_insert(self, (*a)[0]); !r) return r.error();
  self.items().push_back((*a)[0]);
  return Value::none();
}

Result<Value> l_extend(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("extend", call, {"iterable"}, 1);
  if (!a) return a.error();
  Result<ValueList> items = iterate(ev, (*a)[0]);
  if (!items) return items.error();
  if (auto r = ev.check_list(self.items().size() + items->size()); !r) return r.error();
  for (const Value& v : *items) {
    if (auto r = ev.check_insert(self, v); !r) return r.error();
  }
  self.items().insert(self.items().end(), items->begin(), items->end());
  return Value::none();
}

Result<Value> l_insert(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("insert", call, {"index", "object"}, 2);
  if (!a) return a.error();
  Result<int64_t> i = to_int_arg((*a)[0], "index");
  if (!i) return i.error();
  if (auto r = ev.check_list(self.items().size() + 1); !r) return r.error();
  if (auto r = ev.check_insert(self, (*a)[1]); !r) return r.error();
  const auto n = static_cast<int64_t>(self.items().size());
  int64_t pos = *i < 0 ? std::max<int64_t>(*i + n, 0) : std::min(*i, n);
  self.items().insert(self.items().begin() + pos, (*a)[1]);
  return Value::none();
}

Result<Value> l_pop(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("pop", call, {"index"}, 0);
  if (!a) return a.error();
  Result<int64_t> i = int_or(*a, 0, -1, "index");
  if (!i) return i.error();
  ValueList& items = self.items();
  if (items.empty()) return Error{"pop from empty list"};
  const auto n = static_cast<int64_t>(items.size());
  const int64_t pos = *i < 0 ? *i + n : *i;
  if (pos < 0 || pos >= n) return Error{"pop index out of range"};
  Value v = std::move(items[static_cast<size_t>(pos)]);
  items.erase(items.begin() + pos);
  return v;
}

Result<Value> l_remove(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("remove", call, {"value"}, 1);
  if (!a) return a.error();
  ValueList& items = self.items();
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (equals(*it, (*a)[0])) {
      items.erase(it);
      return Value::none();
    }
  }
  return Error{"list.remove(x): x not in list"};
}

Result<Value> l_index(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("index", call, {"value"}, 1);
  if (!a) return a.error();
  const ValueList& items = self.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], (*a)[0])) return Value::integer(static_cast<int64_t>(i));
  }
  return Error{to_repr((*a)[0]) + " is not in list"};
}

Result<Value> l_count(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("count", call, {"value"}, 1);
  if (!a) return a.error();
  const ValueList& items = self.items();
  return Value::integer(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, (*a)[0]); }));
}

Result<Value> l_reverse(Evaluator&, const Value& self, CallArgs&) {
  std::reverse(self.items().begin(), self.items().end());
  return Value::none();
}

Result<Value> l_copy(Evaluator&, const Value& self, CallArgs&) { return Value::list(self.items()); }

Result<Value> l_clear(Evaluator&, const Value& self, CallArgs&) {
  self.items().clear();
  return Value::none();
}

// ---- dict ----

Result<Value> d_items(Evaluator&, const Value& self, CallArgs&) {
  ValueList out;
  for (const auto& [k, v] : self.dict_ref().items()) out.push_back(Value::tuple({k, v}));
  return Value::list(std::move(out));
}

Result<Value> d_keys(Evaluator& ev, const Value& self, CallArgs&) {
  Result<ValueList> keys = iterate(ev, self);
  if (!keys) return keys.error();
  return Value::list(std::move(*keys));
}

Result<Value> d_values(Evaluator&, const Value& self, CallArgs&) {
  ValueList out;
  for (const auto& [k, v] : self.dict_ref().items()) out.push_back(v);
  return Value::list(std::move(out));
}

Result<Value> d_get(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("get", call, {"key", "default"}, 1);
  if (!a) return a.error();
  if (const Value* v = self.dict_ref().find((*a)[0])) return *v;
  return a->has(1) ? (*a)[1] : Value::none();
}

Result<Value> d_pop(Evaluator&, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("pop", call, {"key", "default"}, 1);
  if (!a) return a.error();
  if (const Value* v = self.dict_ref().find((*a)[0])) {
    Value out = *v;
    self.dict_ref().erase((*a)[0]);
    return out;
  }
  if (a->has(1)) return (*a)[1];
  return Error{std::string("KeyError: ") + to_repr((*a)[0])};
}

Result<Value> d_setdefault(Evaluator& ev, const Value& self, CallArgs& call) {
  Result<Args> a = Args::bind("setdefault", call, {"key", "default"}, 1);
  if (!a) return a.error();
  if (const Value* v = self.dict_ref().find((*a)[0])) return *v;
  const Value v = a->has(1) ? (*a)[1] : Value::none();
  if (auto r = ev.check_insert(self, v); !r) return r.error();
  if (auto r = ev.check_insert(self, (*a)[0]); !r) return r.error();  // a tuple key may hold self
  self.dict_ref().set((*a)[0], v);
  return v;
}

Result<Value> d_update(Evaluator& ev, const Value& self, CallArgs& call) {
  if (call.positional.size() > 1) return Error{"update expected at most 1 argument"};
  std::vector<std::pair<Value, Value>> entries;
  if (!call.positional.empty()) {
    const Value& other = call.positional[0];
    if (!other.is_mapping()) return Error{std::string("update() needs a mapping, not ") + other.type_name()};
    for (const auto& [k, v] : other.dict_ref().items()) entries.emplace_back(k, v);
  }
  for (const auto& [k, v] : call.keyword) entries.emplace_back(Value::string(k), v);
  for (const auto& [k, v] : entries) {
    if (auto r = ev.check_insert(self, v); !r) return r.error();
    if (auto r = ev.check_insert(self, k); !r) return r.error();
  }
  for (auto& [k, v] : entries) self.dict_ref().set(k, std::move(v));
  return Value::none();
}

Result<Value> d_copy(Evaluator&, const Value& self, CallArgs&) {
  Value out = Value::dict();
  for (const auto& [k, v] : self.dict_ref().items()) out.dict_ref().set(k, v);
  return out;
}

Result<Value> d_clear(Evaluator&, const Value& self, CallArgs&) {
  self.dict_ref().clear();
  return Value::none();
}

const std::unordered_map<std::string_view, Method>& str_methods() {
  static const std::unordered_map<std::string_view, Method> m{
      {"strip", s_strip<StripSide::Both>},
      {"lstrip", s_strip<StripSide::Left>},
      {"rstrip", s_strip<StripSide::Right>},
      {"upper", s_map<upper_fn>},
      {"lower", s_map<lower_fn>},
      {"title", s_map<title_fn>},
      {"capitalize", s_map<capitalize_fn>},
      {"swapcase", s_map<swapcase_fn>},
      {"startswith", s_affix<false>},
      {"endswith", s_affix<true>},
      {"split", s_split<false>},
      {"rsplit", s_split<true>},
      {"splitlines", s_splitlines},
      {"replace", s_replace},
      {"find", s_find<false, false>},
      {"rfind", s_find<true, false>},
      {"index", s_find<false, true>},
      {"rindex", s_find<true, true>},
      {"count", s_count},
      {"join", s_join},
      {"format", s_format},
      {"isdigit", s_is<str_isdigit>},
      {"isdecimal", s_is<str_isdigit>},
      {"isnumeric", s_is<str_isdigit>},
      {"isalpha", s_is<str_isalpha>},
      {"isalnum", s_is<str_isalnum>},
      {"isspace", s_is<str_isspace>},
      {"isupper", s_is<str_isupper>},
      {"islower", s_is<str_islower>},
      {"center", s_pad<0>},
      {"ljust", s_pad<-1>},
      {"rjust", s_pad<1>},
      {"zfill", s_zfill},
      {"partition", s_partition<false>},
      {"rpartition", s_partition<true>},
      {"removeprefix", s_remove_affix<false>},
      {"removesuffix", s_remove_affix<true>},
  };
  return m;
}

const std::unordered_map<std::string_view, Method>& list_methods() {
  static const std::unordered_map<std::string_view, Method> m{
      {"append", l_append}, {"extend", l_extend}, {"insert", l_insert}, {"pop", l_pop},
      {"remove", l_remove}, {"index", l_index},   {"count", l_count},   {"reverse", l_reverse},
      {"copy", l_copy},     {"clear", l_clear},
  };
  return m;
}

const std::unordered_map<std::string_view, Method>& dict_methods() {
  static const std::unordered_map<std::string_view, Method> m{
      {"items", d_items}, {"keys", d_keys},     {"values", d_values}, {"get", d_get},
      {"pop", d_pop},     {"setdefault", d_setdefault}, {"update", d_update},
      {"copy", d_copy},   {"clear", d_clear},
  };
  return m;
}

}  // namespace

std::optional<Value> find_method(const Value& object, std::string_view name) {
  const std::unordered_map<std::string_view, Method>* table = nullptr;
  switch (object.kind()) {
    case Value::Kind::String: table = &str_methods(); break;
    case Value::Kind::List: table = &list_methods(); break;
    case Value::Kind::Tuple:
      if (name != "index" && name != "count") return std::nullopt;
      table = &list_methods();
      break;
    case Value::Kind::Dict: table = &dict_methods(); break;
    default: return std::nullopt;
  }
  const auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  auto c = std::make_shared<Callable>();
  c->name = object.type_name() + "." + std::string(name);
  c->bound_self = object;
  c->native = [method = it->second, object](Evaluator& ev, CallArgs& args) { return method(ev, object, args); };
  return Value::callable(std::move(c));
}

}  // namespace quip::chat::jinja
