#include "grammar/json_schema_parts.h"

#include <cmath>
#include <map>

#include "base/text.h"
#include "grammar/gbnf_text.h"

namespace quip::grammar {
namespace {

// What each keyword's value must be (JSON Schema 2020-12's meta-schemas).
enum class Kind {
  kAny,
  kString,
  kBool,
  kNumber,
  kCount,
  kSchema,
  kSchemas,
  kSchemaMap,
  kStrings,
  kArray,
  kType
};

const std::map<std::string, Kind, std::less<>>& keyword_kinds() {
  static const std::map<std::string, Kind, std::less<>> kinds = {
      {"title", Kind::kString},
      {"description", Kind::kString},
      {"$schema", Kind::kString},
      {"$id", Kind::kString},
      {"$comment", Kind::kString},
      {"examples", Kind::kAny},
      {"default", Kind::kAny},
      {"readOnly", Kind::kBool},
      {"writeOnly", Kind::kBool},
      {"deprecated", Kind::kBool},
      {"$defs", Kind::kSchemaMap},
      {"definitions", Kind::kSchemaMap},
      {"$ref", Kind::kString},
      {"type", Kind::kType},
      {"enum", Kind::kArray},
      {"const", Kind::kAny},
      {"anyOf", Kind::kSchemas},
      {"oneOf", Kind::kSchemas},
      {"allOf", Kind::kSchemas},
      {"properties", Kind::kSchemaMap},
      {"required", Kind::kStrings},
      {"additionalProperties", Kind::kSchema},
      {"items", Kind::kSchema},
      {"prefixItems", Kind::kSchemas},
      {"minItems", Kind::kCount},
      {"maxItems", Kind::kCount},
      {"uniqueItems", Kind::kBool},
      {"minLength", Kind::kCount},
      {"maxLength", Kind::kCount},
      {"pattern", Kind::kString},
      {"format", Kind::kString},
      {"minimum", Kind::kNumber},
      {"maximum", Kind::kNumber},
      {"exclusiveMinimum", Kind::kNumber},
      {"exclusiveMaximum", Kind::kNumber},
  };
  return kinds;
}

bool is_schema(const Json& v) {
  return v.is_object() || v.is_boolean();
}

bool is_count(const Json& v) {
  if (v.is_number_unsigned()) return true;
  if (v.is_number_integer()) return v.get<int64_t>() >= 0;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return d >= 0 && std::floor(d) == d && d < 1e18;
  }
  return false;
}

const char* kind_text(Kind k) {
  switch (k) {
    case Kind::kAny: return "any value";
    case Kind::kString: return "a string";
    case Kind::kBool: return "a boolean";
    case Kind::kNumber: return "a number";
    case Kind::kCount: return "a non-negative integer";
    case Kind::kSchema: return "a schema (an object or a boolean)";
    case Kind::kSchemas: return "a non-empty array of schemas";
    case Kind::kSchemaMap: return "an object of schemas";
    case Kind::kStrings: return "an array of strings";
    case Kind::kArray: return "an array";
    case Kind::kType: return "a type name or a non-empty array of them";
  }
  return "";
}

bool has_kind(const Json& v, Kind k) {
  switch (k) {
    case Kind::kAny: return true;
    case Kind::kString: return v.is_string();
    case Kind::kBool: return v.is_boolean();
    case Kind::kNumber: return v.is_number();
    case Kind::kCount: return is_count(v);
    case Kind::kSchema: return is_schema(v);
    case Kind::kSchemas:
      return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), is_schema);
    case Kind::kSchemaMap:
      return v.is_object() &&
             std::all_of(v.begin(), v.end(), [](const Json& e) { return is_schema(e); });
    case Kind::kStrings:
      return v.is_array() &&
             std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); });
    case Kind::kArray: return v.is_array();
    case Kind::kType:
      return v.is_string() ||
             (v.is_array() && !v.empty() &&
              std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); }));
  }
  return false;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string where(const std::string& ptr) {
  return ptr.empty() ? "the root" : ptr;
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string rule_name(std::string_view hint) {
  std::string out;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "schema" : out;
}

Result<void> check_keywords(const Json& s, const std::string& ptr, bool at_root) {
  const auto& kinds = keyword_kinds();
  for (const auto& [key, value] : s.items()) {
    const auto it = kinds.find(key);
    if (it == kinds.end())
      return Error{"unsupported keyword '" + printable(key) + "' at " + where(ptr)};
    if (!has_kind(value, it->second)) {
      return Error{"keyword '" + printable(key) + "' at " + where(ptr) + " must be " +
                   kind_text(it->second)};
    }
    if (key == "$id" && !at_root) {
      return Error{"keyword '$id' at " + where(ptr) +
                   " is only supported at the root (it would change what '#' refers to)"};
    }
  }
  return {};
}

Result<std::set<std::string>> allowed_types(const Json& s, const std::string& ptr) {
  static const std::set<std::string> kAll = {"null",   "boolean", "object", "array",
                                             "string", "number",  "integer"};
  if (!s.contains("type")) return kAll;
  std::set<std::string> out;
  const Json& t = s["type"];
  for (const Json& name : t.is_array() ? t : Json::array({t})) {
    const std::string n = name.get<std::string>();
    if (!kAll.count(n)) return Error{"unknown type '" + printable(n) + "' at " + where(ptr)};
    if (!out.insert(n).second)
      return Error{"type '" + printable(n) + "' listed twice at " + where(ptr)};
  }
  return out;
}

bool has_type(const Json& v, const std::set<std::string>& types) {
  if (v.is_null()) return types.count("null");
  if (v.is_boolean()) return types.count("boolean");
  if (v.is_object()) return types.count("object");
  if (v.is_array()) return types.count("array");
  if (v.is_string()) return types.count("string");
  if (types.count("number")) return true;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return types.count("integer") && std::isfinite(d) && std::floor(d) == d;
  }
  return types.count("integer");
}

Result<std::string> json_literal(const Json& v, int depth, bool& uses_ws) {
  if (depth > 64) return Error{"a value nested deeper than 64 levels"};
  if (v.is_object() || v.is_array()) {
    const bool obj = v.is_object();
    if (v.empty()) {
      uses_ws = true;
      return std::string(obj ? R"("{" ws "}")" : R"("[" ws "]")");
    }
    std::string out = obj ? R"("{" ws)" : R"("[" ws)";
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) out += R"( "," ws)";
      first = false;
      if (obj) {
        out += ' ';
        out += gbnf_literal(Json(key).dump() + ":");
        out += " ws";
      }
      Result<std::string> inner = json_literal(item, depth + 1, uses_ws);
      if (!inner) return inner;
      out += ' ';
      out += *inner;
    }
    uses_ws = true;
    return out + (obj ? R"( ws "}")" : R"( ws "]")");
  }
  return gbnf_literal(v.dump());
}

uint64_t count_value(const Json& v) {
  if (v.is_number_float()) return static_cast<uint64_t>(v.get<double>());
  return v.get<uint64_t>();
}

int64_t integer_bound(const Json& v, bool lower, bool exclusive) {
  constexpr int64_t kClamp = 100'000'000'000'000'000;  // 1e17, beyond kMaxInteger
  if (v.is_number_unsigned() || v.is_number_integer()) {
    int64_t n = v.is_number_unsigned()
                    ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), kClamp))
                    : std::clamp<int64_t>(v.get<int64_t>(), -kClamp, kClamp);
    if (exclusive) n += lower ? 1 : -1;
    return n;
  }
  const double d = std::clamp(v.get<double>(), -1e17, 1e17);
  if (lower) return static_cast<int64_t>(exclusive ? std::floor(d) + 1 : std::ceil(d));
  return static_cast<int64_t>(exclusive ? std::ceil(d) - 1 : std::floor(d));
}

Result<std::string> ref_pointer(const std::string& ref) {
  if (ref.empty() || ref[0] != '#') {
    return Error{"external '$ref' '" + printable(ref) +
                 "' is not supported (only '#...' within the schema)"};
  }
  std::string out;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] != '%') {
      out += ref[i];
      continue;
    }
    const int hi = i + 2 < ref.size() ? hex_value(ref[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_value(ref[i + 2]) : -1;
    if (lo < 0) return Error{"'$ref' '" + printable(ref) + "' has a malformed %-escape"};
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (!out.empty() && out[0] != '/') {
    return Error{"'$ref' '" + printable(ref) + "' names an anchor; anchors are not supported"};
  }
  return out;
}

Result<const Json*> resolve_pointer(const Json& root, const std::string& pointer) {
  const Json* at = &root;
  size_t i = 0;
  while (i < pointer.size()) {
    const size_t end = pointer.find('/', i + 1);
    const std::string raw = pointer.substr(i + 1, end == std::string::npos ? end : end - i - 1);
    i = end == std::string::npos ? pointer.size() : end;
    std::string token;
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] != '~') {
        token += raw[k];
      } else if (k + 1 < raw.size() && (raw[k + 1] == '0' || raw[k + 1] == '1')) {
        token += raw[++k] == '0' ? '~' : '/';
      } else {
        return Error{"is not a valid JSON pointer"};
      }
    }
    if (at->is_object() && at->contains(token)) {
      at = &(*at)[token];
    } else if (at->is_array() && !token.empty() && token.size() < 10 &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               (token == "0" || token[0] != '0') && std::stoul(token) < at->size()) {
      at = &(*at)[std::stoul(token)];
    } else {
      return Error{"points to nothing"};
    }
  }
  return at;
}

}  // namespace quip::grammar
