#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>

#include "chat/jinja_string.h"
#include "tokenizer/unicode.h"

namespace quip::chat::jinja {
namespace {

// Python's json module gives up (RecursionError) near this depth too.
constexpr int kMaxJsonDepth = 500;

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& o, size_t max_bytes) : o_(o), max_(max_bytes) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  Result<std::string> run(const Value& v) {
    if (auto r = value(v, 0); !r) return r.error();
    return std::move(out_);
  }

 private:
  Result<void> value(const Value& v, int depth) {
    if (depth > kMaxJsonDepth) return Error{std::string("tojson: nesting deeper than ") + std::to_string(kMaxJsonDepth)};
    if (out_.size() > max_) return Error{std::string("tojson: output larger than ") + std::to_string(max_) + " bytes"};
    switch (v.kind()) {
      case Value::Kind::None: out_ += "null"; return {};
      case Value::Kind::Bool: out_ += v.as_bool() ? "true" : "false"; return {};
      case Value::Kind::Int: out_ += std::to_string(v.as_int()); return {};
      case Value::Kind::Float: number(v.as_float()); return {};
      case Value::Kind::String: string(v.str()); return {};
      case Value::Kind::List:
      case Value::Kind::Tuple: return list(v.items(), depth);
      case Value::Kind::Dict: return object(v.dict_ref(), depth);
      default:
        return Error{std::string("Object of type ") + v.type_name() + " is not JSON serializable"};
    }
  }

  void number(double f) {
    if (std::isnan(f)) {
      out_ += "NaN";
    } else if (std::isinf(f)) {
      out_ += f < 0 ? "-Infinity" : "Infinity";
    } else {
      out_ += float_repr(f);
    }
  }

  void string(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto u4 = [&](uint32_t cp) {
      out_ += "\\u";
      for (int k = 3; k >= 0; --k) out_ += kHex[(cp >> (4 * k)) & 15];
    };
    out_ += '"';
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80 && o_.ensure_ascii) {
        const tokenizer::Utf8Char ch = tokenizer::utf8_decode(s, i);
        uint32_t cp = ch.cp == tokenizer::kInvalidCodepoint ? 0xFFFD : ch.cp;
        if (cp >= 0x10000) {
          cp -= 0x10000;
          u4(0xD800 + (cp >> 10));
          u4(0xDC00 + (cp & 0x3FF));
        } else {
          u4(cp);
        }
        i += ch.len;
        continue;
      }
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        case '\b': out_ += "\\b"; break;
        case '\f': out_ += "\\f"; break;
        default:
          if (c < 0x20) {
            u4(c);
          } else {
            out_ += static_cast<char>(c);
          }
      }
      ++i;
    }
    out_ += '"';
  }

  void newline(int depth) {
    if (!o_.indent) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += *o_.indent;
  }

  Result<void> list(const ValueList& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return {};
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += item_sep_;
      newline(depth + 1);
      if (auto r = value(items[i], depth + 1); !r) return r;
    }
    newline(depth);
    out_ += ']';
    return {};
  }

  // Python converts keys that are not strings: True -> "true", 1 -> "1".
  Result<std::string> key_text(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String: return k.str();
      case Value::Kind::None: return std::string("null");
      case Value::Kind::Bool: return std::string(k.as_bool() ? "true" : "false");
      case Value::Kind::Int: return std::to_string(k.as_int());
      case Value::Kind::Float: {
        JsonWriter w(o_, max_);
        w.number(k.as_float());
        return std::move(w.out_);
      }
      default:
        return Error{std::string("keys must be str, int, float, bool or None, not ") + k.type_name()};
    }
  }

  Result<void> object(const Dict& d, int depth) {
    if (d.size() == 0) {
      out_ += "{}";
      return {};
    }
    std::vector<const Dict::Item*> items;
    for (const Dict::Item& item : d.items()) items.push_back(&item);
    if (o_.sort_keys) {
      std::string failure;
      std::stable_sort(items.begin(), items.end(), [&](const Dict::Item* a, const Dict::Item* b) {
        const Result<int> c = compare(a->first, b->first);
        if (!c) failure = c.error().message;
        return c && *c < 0;
      });
      if (!failure.empty()) return Error{failure};
    }
    out_ += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += item_sep_;
      newline(depth + 1);
      Result<std::string> key = key_text(items[i]->first);
      if (!key) return key.error();
      string(*key);
      out_ += key_sep_;
      if (auto r = value(items[i]->second, depth + 1); !r) return r;
    }
    newline(depth);
    out_ += '}';
    return {};
  }

  const JsonOptions& o_;
  size_t max_;
  std::string item_sep_, key_sep_;
  std::string out_;
};

}  // namespace

Result<std::string> to_json(const Value& v, const JsonOptions& options, size_t max_bytes) {
  Result<std::string> r = JsonWriter(options, max_bytes).run(v);
  if (r && r->size() > max_bytes) {
    return Error{std::string("tojson: output larger than ") + std::to_string(max_bytes) + " bytes"};
  }
  return r;
}

}  // namespace quip::chat::jinja
