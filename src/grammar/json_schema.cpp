#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "base/text.h"
#include "grammar/gbnf_text.h"
#include "grammar/json_builtins.h"
#include "grammar/json_schema_parts.h"
#include "grammar/regex_gbnf.h"

namespace quip::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Schemas nested deeper than this (through subschemas and $refs) are an
// error: conversion recurses once per level.
constexpr int kMaxDepth = 128;
// A bound on what compile_gbnf copies for repetitions (it refuses 2^22).
constexpr uint64_t kMaxCost = uint64_t{1} << 20;
// Property lists longer than this share their tails through rules, so the
// grammar grows linearly with the number of optional properties.
constexpr size_t kInlineProperties = 8;

const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description", "$schema",    "$comment", "examples",    "default",
    "readOnly", "writeOnly",   "deprecated", "$defs",    "definitions", "$id"};

const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern",
                                                            "format"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum",
                                                            "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string, std::less<>> kObjectKeywords = {"properties", "required",
                                                            "additionalProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items", "prefixItems", "minItems",
                                                           "maxItems", "uniqueItems"};

const char* const kTypes[] = {"null", "boolean", "object", "array", "string", "number", "integer"};

bool has_any(const Json& s, const std::set<std::string, std::less<>>& keywords) {
  for (const auto& [key, value] : s.items()) {
    if (keywords.count(key)) return true;
  }
  return false;
}

class Converter {
 public:
  explicit Converter(const Json& root) : root_(root) {}

  Result<std::string> run() {
    const size_t root = reserve("root", "");
    refs_[""] = root;
    if (Result<void> r = fill(root, root_); !r) return r.error();
    if (Result<void> r = check_left_cycles(); !r) return r.error();
    if (cost_ > kMaxCost) return Error{"the schema's grammar would be too large (repetitions)"};
    std::string out;
    for (const RuleDef& rule : rules_) out += rule.name + " ::= " + rule.body + "\n";
    out += builtin_rules(builtins_);
    return out;
  }

 private:
  struct RuleDef {
    std::string name, body, pointer;
    std::vector<size_t> left;  // rules that can come first in this one
  };

  static Error at(const std::string& what, const std::string& ptr) {
    return Error{what + " at " + where(ptr)};
  }

  std::string use(const std::string& builtin) {
    builtins_.insert(builtin);
    return builtin;
  }

  size_t reserve(const std::string& hint, const std::string& ptr) {
    std::string base = rule_name(hint);
    std::string name = base;
    for (int k = 2; names_.count(name) || is_builtin_rule(name); ++k) {
      name = base + "-" + std::to_string(k);
    }
    names_.insert(name);
    rules_.push_back(RuleDef{name, "", ptr, {}});
    return rules_.size() - 1;
  }

  Result<void> fill(size_t index, const Json& schema) {
    if (++depth_ > kMaxDepth) {
      return at("schema nested deeper than " + std::to_string(kMaxDepth) + " levels",
                rules_[index].pointer);
    }
    const size_t saved = current_;
    current_ = index;
    // Copies: converting adds rules, which moves rules_.
    const std::string ptr = rules_[index].pointer, name = rules_[index].name;
    Result<std::string> body = convert(schema, ptr, name);
    current_ = saved;
    --depth_;
    if (!body) return body.error();
    rules_[index].body = std::move(*body);
    return {};
  }

  // A rule for a subschema; `left` when it comes first in the current rule.
  Result<std::string> sub(const Json& schema, const std::string& ptr, const std::string& hint,
                          bool left) {
    const size_t index = reserve(hint, ptr);
    if (Result<void> r = fill(index, schema); !r) return r.error();
    if (left) rules_[current_].left.push_back(index);
    return rules_[index].name;
  }

  Result<std::string> ref(const std::string& target, const std::string& ptr, bool left) {
    Result<std::string> pointer = ref_pointer(target);
    if (!pointer) return at(pointer.error().message, ptr);
    Result<const Json*> schema = resolve_pointer(root_, *pointer);
    if (!schema) return at("'$ref' '" + printable(target) + "' " + schema.error().message, ptr);
    size_t index;
    if (auto it = refs_.find(*pointer); it != refs_.end()) {
      index = it->second;
    } else {
      const size_t slash = pointer->rfind('/');
      index = reserve(pointer->substr(slash + 1), *pointer);
      refs_[*pointer] = index;
      if (Result<void> r = fill(index, **schema); !r) return r.error();
    }
    if (left) rules_[current_].left.push_back(index);
    return rules_[index].name;
  }

  Result<std::string> convert(const Json& s, const std::string& ptr, const std::string& name) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return use("value");
      return at("the schema 'false' accepts nothing", ptr);
    }
    if (!s.is_object()) {
      return at(std::string("a schema must be an object or a boolean, not ") + s.type_name(), ptr);
    }
    if (Result<void> r = check_keywords(s, ptr, ptr.empty()); !r) return r.error();

    // Keywords that replace the schema's own type handling.
    for (const char* k : {"$ref", "anyOf", "oneOf", "allOf"}) {
      if (!s.contains(k)) continue;
      for (const auto& [key, value] : s.items()) {
        if (key != k && !kAnnotations.count(key)) {
          return at("unsupported keyword '" + printable(key) + "' beside '" + k + "'", ptr);
        }
      }
      if (std::string_view(k) == "$ref") return ref(s[k].get<std::string>(), ptr, true);
      const Json& list = s[k];
      if (std::string_view(k) == "allOf" && list.size() != 1) {
        return at("unsupported keyword 'allOf' with more than one schema", ptr);
      }
      // oneOf is joined like anyOf: exclusivity is not enforced (header).
      std::string out;
      for (size_t i = 0; i < list.size(); ++i) {
        Result<std::string> alt = sub(list[i], ptr + "/" + k + "/" + std::to_string(i),
                                      name + "-" + std::to_string(i), true);
        if (!alt) return alt;
        out += (i ? " | " : "") + *alt;
      }
      return out;
    }

    Result<std::set<std::string>> types = allowed_types(s, ptr);
    if (!types) return types.error();
    if (s.contains("enum") || s.contains("const")) return enum_values(s, *types, ptr);

    bool specific = false;
    for (const auto& [key, value] : s.items()) {
      specific = specific || kStringKeywords.count(key) || kNumberKeywords.count(key) ||
                 kObjectKeywords.count(key) || kArrayKeywords.count(key);
    }
    if (types->size() == 7 && !specific) return use("value");

    std::vector<std::string> branches;
    for (const char* t : kTypes) {
      if (!types->count(t)) continue;
      const std::string_view type = t;
      Result<std::string> b = std::string();
      if (type == "null" || type == "boolean") {
        b = use(t);
      } else if (type == "object") {
        b = has_any(s, kObjectKeywords) ? object(s, ptr, name) : use("object");
      } else if (type == "array") {
        b = has_any(s, kArrayKeywords) ? array(s, ptr, name) : use("array");
      } else if (type == "string") {
        b = string(s, ptr);
      } else if (type == "number") {
        b = number(s, ptr);
      } else if (!types->count("number")) {
        b = integer(s, ptr);
      } else {
        continue;  // "number" covers the integers
      }
      if (!b) return b;
      branches.push_back(std::move(*b));
    }
    std::string out;
    for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | " : "") + branches[i];
    return out;
  }

  Result<std::string> enum_values(const Json& s, const std::set<std::string>& types,
                                  const std::string& ptr) {
    for (const auto& [key, value] : s.items()) {
      if (key != "enum" && key != "const" && key != "type" && !kAnnotations.count(key)) {
        const char* beside = s.contains("enum") ? "enum" : "const";
        return at("unsupported keyword '" + printable(key) + "' beside '" + beside + "'", ptr);
      }
    }
    std::vector<Json> values;
    if (s.contains("enum")) {
      for (const Json& v : s["enum"]) {
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
      }
    } else {
      values.push_back(s["const"]);
    }
    std::set<std::string> alts;
    std::string out;
    for (const Json& v : values) {
      if (!has_type(v, types)) continue;
      bool uses_ws = false;
      Result<std::string> lit = json_literal(v, 0, uses_ws);
      if (!lit) return at(lit.error().message, ptr);
      if (uses_ws) use("ws");
      if (alts.insert(*lit).second) out += (out.empty() ? "" : " | ") + *lit;
    }
    if (out.empty()) {
      return at(s.contains("enum") ? "no value of 'enum' is allowed by the other keywords"
                                   : "the value of 'const' is not allowed by 'type'",
                ptr);
    }
    return out;
  }

  Result<std::string> string(const Json& s, const std::string& ptr) {
    const bool pattern = s.contains("pattern"), format = s.contains("format");
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    const std::string quote = R"("\"")";
    if (pattern && (format || lengths)) {
      return at(std::string("unsupported keyword '") + (format ? "format" : "minLength/maxLength") +
                    "' beside 'pattern'",
                ptr);
    }
    if (format && lengths) {
      return at("unsupported keyword 'minLength/maxLength' beside 'format'", ptr);
    }
    if (format) {
      const std::string f = s["format"].get<std::string>();
      const std::string_view rule = format_rule(f);
      if (rule.empty()) return at("unsupported format '" + printable(f) + "'", ptr);
      return quote + " " + use(std::string(rule)) + " " + quote;
    }
    if (pattern) {
      const std::string p = s["pattern"].get<std::string>();
      Result<std::string> body = regex_to_gbnf(p, "char", cost_);
      if (!body)
        return at("unsupported pattern '" + printable(p) + "': " + body.error().message, ptr);
      use("char");
      return quote + (body->empty() ? "" : " " + *body) + " " + quote;
    }
    if (!lengths) return use("string");
    const uint64_t min = s.contains("minLength") ? count_value(s["minLength"]) : 0;
    std::optional<uint64_t> max;
    if (s.contains("maxLength")) max = count_value(s["maxLength"]);
    if (max && *max < min) return at("'minLength' is greater than 'maxLength'", ptr);
    Result<std::string> chars = gbnf_repeat(use("char"), min, max, cost_);
    if (!chars) return at(chars.error().message + " ('minLength'/'maxLength')", ptr);
    return quote + (chars->empty() ? "" : " " + *chars) + " " + quote;
  }

  Result<std::string> number(const Json& s, const std::string& ptr) {
    for (const auto& [key, value] : s.items()) {
      if (kNumberKeywords.count(key)) {
        return at("unsupported keyword '" + printable(key) +
                      "' for numbers (bounds work for integers only)",
                  ptr);
      }
    }
    return use("number");
  }

  Result<std::string> integer(const Json& s, const std::string& ptr) {
    std::optional<int64_t> lo, hi;
    auto raise = [](std::optional<int64_t>& b, int64_t v, bool up) {
      if (!b || (up ? v > *b : v < *b)) b = v;
    };
    if (s.contains("minimum")) raise(lo, integer_bound(s["minimum"], true, false), true);
    if (s.contains("exclusiveMinimum")) {
      raise(lo, integer_bound(s["exclusiveMinimum"], true, true), true);
    }
    if (s.contains("maximum")) raise(hi, integer_bound(s["maximum"], false, false), false);
    if (s.contains("exclusiveMaximum")) {
      raise(hi, integer_bound(s["exclusiveMaximum"], false, true), false);
    }
    if (!lo && !hi) return use("integer");
    const int64_t l = std::max(lo.value_or(-kMaxInteger), -kMaxInteger);
    const int64_t h = std::min(hi.value_or(kMaxInteger), kMaxInteger);
    if (l > h) {
      return at("the integer bounds leave no integer of at most 16 digits", ptr);
    }
    return integer_range(lo, hi);
  }

  // A rule of the given body, made by the converter (not a subschema).
  std::string make_rule(const std::string& hint, const std::string& ptr, std::string body) {
    const size_t index = reserve(hint, ptr);
    rules_[index].body = std::move(body);
    return rules_[index].name;
  }

  Result<std::string> object(const Json& s, const std::string& ptr, const std::string& name);
  Result<std::string> array(const Json& s, const std::string& ptr, const std::string& name);
  Result<std::string> extra_key(const std::vector<std::string>& names, const std::string& name);
  Result<void> check_left_cycles() const;

  const Json& root_;
  std::vector<RuleDef> rules_;
  std::set<std::string> names_;
  std::map<std::string, size_t> refs_;  // resolved $ref pointer -> rule
  std::set<std::string> builtins_;      // built-in rules used
  size_t current_ = 0;                  // the rule whose body is being built
  int depth_ = 0;
  uint64_t cost_ = 0;
};

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return b.empty() ? a : a + " " + b;
}

// Properties come in a fixed order (json_schema.h); required ones must
// appear, optional ones may be skipped, and additional ones follow. Commas
// go between whatever is written: after the first property written, each
// later one is `"," ws kv`, so the grammar is the choice of the first
// property written followed by the tail after it.
Result<std::string> Converter::object(const Json& s, const std::string& ptr,
                                      const std::string& name) {
  bool extras = true;
  std::string extra_value;
  if (s.contains("additionalProperties")) {
    const Json& a = s["additionalProperties"];
    if (a.is_boolean()) {
      extras = a.get<bool>();
    } else {
      Result<std::string> r = sub(a, ptr + "/additionalProperties", name + "-additional", false);
      if (!r) return r;
      extra_value = *r;
    }
  }
  if (extras && extra_value.empty()) extra_value = use("value");

  std::set<std::string> required_names;
  if (s.contains("required")) {
    for (const Json& r : s["required"]) required_names.insert(r.get<std::string>());
  }
  std::vector<std::string> names, values;
  std::vector<bool> required;
  std::vector<std::string> forbidden;  // properties whose schema is false
  if (s.contains("properties")) {
    for (const auto& [key, value] : s["properties"].items()) {
      if (value.is_boolean() && !value.get<bool>()) {
        if (required_names.count(key)) {
          return at("required property '" + printable(key) + "' has the schema 'false'", ptr);
        }
        forbidden.push_back(key);
        continue;
      }
      Result<std::string> r =
          sub(value, ptr + "/properties/" + pointer_token(key), name + "-" + key, false);
      if (!r) return r;
      names.push_back(key);
      values.push_back(*r);
      required.push_back(required_names.count(key) > 0);
    }
  }
  // Required names that `properties` does not describe take the additional schema.
  if (s.contains("required")) {
    for (const Json& r : s["required"]) {
      const std::string key = r.get<std::string>();
      if (std::find(names.begin(), names.end(), key) != names.end()) continue;
      if (std::find(forbidden.begin(), forbidden.end(), key) != forbidden.end()) continue;
      if (!extras) {
        return at("required property '" + printable(key) +
                      "' is forbidden by 'additionalProperties': false",
                  ptr);
      }
      names.push_back(key);
      values.push_back(extra_value);
      required.push_back(true);
    }
  }

  const size_t n = names.size();
  const std::string ws = use("ws");
  std::string extra_kv;
  if (extras) {
    // Additional names must differ from the described ones and from those
    // whose schema is false.
    std::vector<std::string> taken = names;
    taken.insert(taken.end(), forbidden.begin(), forbidden.end());
    Result<std::string> key =
        taken.empty() ? Result<std::string>(use("string")) : extra_key(taken, name);
    if (!key) return key;
    extra_kv = *key + R"( ":" )" + ws + " " + extra_value;
  }
  std::vector<std::string> kv(n);
  for (size_t i = 0; i < n; ++i) {
    kv[i] = gbnf_literal(Json(names[i]).dump() + ":") + " " + ws + " " + values[i];
  }
  // tail[i]: what may follow once something is written, from property i on;
  // shared through rules when long, so that the grammar stays linear.
  const bool shared = n > kInlineProperties;
  std::vector<std::string> tail(n + 1);
  if (extras) tail[n] = R"(( "," ws )" + extra_kv + " )*";
  if (shared && !tail[n].empty()) tail[n] = make_rule(name + "-tail", ptr, tail[n]);
  for (size_t i = n; i-- > 1;) {
    std::string piece = R"("," ws )" + kv[i];
    if (!required[i]) piece = "( " + piece + " )?";
    tail[i] = join(piece, tail[i + 1]);
    if (shared) tail[i] = make_rule(name + "-tail", ptr, tail[i]);
  }
  std::vector<std::string> firsts;
  bool any_required = false;
  for (size_t j = 0; j < n && !any_required; ++j) {
    firsts.push_back(join(kv[j], tail[j + 1]));
    any_required = required[j];
  }
  if (!any_required && extras) firsts.push_back(join(extra_kv, tail[n]));
  if (firsts.empty()) return std::string(R"("{" ws "}")");
  std::string inner;
  for (size_t i = 0; i < firsts.size(); ++i) inner += (i ? " | " : "") + firsts[i];
  if (firsts.size() > 1) inner = "( " + inner + " )";
  if (any_required) return R"("{" ws )" + inner + R"( ws "}")";
  return R"("{" ws ( )" + inner + R"( ws )? "}")";
}

// The names of additional properties: any string but the described names,
// compared after decoding (a trie over characters; each node refuses to
// end where a described name ends).
Result<std::string> Converter::extra_key(const std::vector<std::string>& names,
                                         const std::string& name) {
  struct Node {
    std::map<uint32_t, size_t> next;
    bool end = false;
  };
  std::vector<Node> nodes(1);
  for (const std::string& key : names) {
    std::vector<uint32_t> code_points;
    if (!decode_utf8(key, code_points)) return Error{"a property name is not valid UTF-8"};
    size_t at_node = 0;
    for (uint32_t c : code_points) {
      auto it = nodes[at_node].next.find(c);
      if (it == nodes[at_node].next.end()) {
        nodes.emplace_back();
        it = nodes[at_node].next.emplace(c, nodes.size() - 1).first;
      }
      at_node = it->second;
    }
    nodes[at_node].end = true;
  }
  const std::string quote = R"("\"")", any = use("char");
  // Children come after their parents, so going backwards builds each
  // node's expression from its children's. Deep names are cut into rules
  // so that no expression nests more than kMaxNesting parentheses.
  constexpr int kMaxNesting = 16;
  std::vector<std::string> expr(nodes.size());
  std::vector<int> nesting(nodes.size(), 0);
  for (size_t i = nodes.size(); i-- > 0;) {
    std::string alts = nodes[i].end ? "" : quote;
    CharSet taken;
    int deepest = 0;
    for (const auto& [c, child] : nodes[i].next) {
      alts += (alts.empty() ? "" : " | ") + json_chars(CharSet::of(c, c)) + " " + expr[child];
      taken.add(c, c);
      deepest = std::max(deepest, nesting[child]);
    }
    alts += (alts.empty() ? "" : " | ") + json_chars(taken.complement()) + " " + any + "* " + quote;
    nesting[i] = deepest + 1;
    if (nesting[i] >= kMaxNesting && i != 0) {
      expr[i] = make_rule(name + "-key-part", "", alts);
      nesting[i] = 0;
    } else {
      expr[i] = "( " + alts + " )";
    }
  }
  return make_rule(name + "-key", "", quote + " " + expr[0]);
}

Result<std::string> Converter::array(const Json& s, const std::string& ptr,
                                     const std::string& name) {
  if (s.contains("uniqueItems") && s["uniqueItems"].get<bool>()) {
    return at("unsupported keyword 'uniqueItems' (true)", ptr);
  }
  const uint64_t min = s.contains("minItems") ? count_value(s["minItems"]) : 0;
  std::optional<uint64_t> max;
  if (s.contains("maxItems")) max = count_value(s["maxItems"]);
  if (max && *max < min) return at("'minItems' is greater than 'maxItems'", ptr);
  constexpr size_t kMaxPrefix = 100;  // each nests one more group
  std::vector<std::string> prefix;
  if (s.contains("prefixItems")) {
    const Json& list = s["prefixItems"];
    if (list.size() > kMaxPrefix) {
      return at("'prefixItems' with more than " + std::to_string(kMaxPrefix) + " schemas", ptr);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      Result<std::string> r = sub(list[i], ptr + "/prefixItems/" + std::to_string(i),
                                  name + "-" + std::to_string(i), false);
      if (!r) return r;
      prefix.push_back(*r);
    }
  }
  bool more = true;  // whether items may follow the prefix
  std::string item;
  if (s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>()) {
    more = false;
  } else if (s.contains("items")) {
    Result<std::string> r = sub(s["items"], ptr + "/items", name + "-item", false);
    if (!r) return r;
    item = *r;
  } else {
    item = use("value");
  }
  const std::string ws = use("ws");
  const uint64_t k = prefix.size();
  if (!more && min > k) return at("'minItems' asks for more items than 'items': false allows", ptr);
  const std::string empty = R"("[" ws "]")";
  const uint64_t usable = max ? std::min(k, *max) : k;
  // After the prefix: ("," ws item){rest_min, rest_max}.
  std::string after;
  if (usable == k && more) {
    const std::optional<uint64_t> rest_max = max ? std::optional<uint64_t>(*max - k) : std::nullopt;
    Result<std::string> rest =
        gbnf_repeat(R"("," ws )" + item, min > k ? min - k : 0, rest_max, cost_);
    if (!rest) return at(rest.error().message + " ('minItems'/'maxItems')", ptr);
    after = *rest;
  }
  std::string first;
  if (k == 0) {
    if (!more || (max && *max == 0)) return empty;
    first = item;
    // The first item is the one without a comma: one fewer repetition.
    Result<std::string> rest =
        gbnf_repeat(R"("," ws )" + item, min > 0 ? min - 1 : 0,
                    max ? std::optional<uint64_t>(*max - 1) : std::nullopt, cost_);
    if (!rest) return at(rest.error().message + " ('minItems'/'maxItems')", ptr);
    after = *rest;
  } else {
    if (usable == 0) return empty;
    // Element j may be missing (the array ends before it) when j >= minItems.
    for (uint64_t j = usable; j-- > 1;) {
      const std::string piece = join(R"("," ws )" + prefix[j], after);
      after = j >= min ? "( " + piece + " )?" : piece;
    }
    first = prefix[0];
  }
  const std::string body = join(first, after);
  if (min == 0) return R"("[" ws ( )" + body + R"( ws )? "]")";
  return R"("[" ws )" + body + R"( ws "]")";
}

// A rule that reaches itself before matching any text (`$ref` cycles
// through anyOf, or a schema that is its own $ref) would loop a top-down
// matcher; compile_gbnf refuses it, so it is refused here with a place.
Result<void> Converter::check_left_cycles() const {
  const size_t n = rules_.size();
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < n; ++start) {
    if (color[start] != 0) continue;
    std::vector<std::pair<size_t, size_t>> stack{{start, 0}};
    color[start] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == rules_[r].left.size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      const size_t t = rules_[r].left[next++];
      if (color[t] == 1) {
        return at("a '$ref' cycle that matches no text before coming back (left recursion)",
                  rules_[t].pointer);
      }
      if (color[t] == 0) {
        color[t] = 1;
        stack.push_back({t, 0});
      }
    }
  }
  return {};
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  try {
    return Converter(schema).run();
  } catch (const nlohmann::json::exception& e) {
    // Only a string that is not UTF-8 (from a json built in code) gets here.
    return Error{std::string("the schema cannot be written as JSON: ") + e.what()};
  }
}

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) {
  try {
    return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()));
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("the schema cannot be written as JSON: ") + e.what()};
  }
}

}  // namespace quip::grammar
