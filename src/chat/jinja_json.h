// Python's json.dumps for template values, as the |tojson filter Hugging Face
// installs calls it (ensure_ascii=False by default, keys in insertion order).
// The output must match Python byte for byte: models were trained on it.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "chat/jinja_value.h"

namespace quip::chat::jinja {

struct JsonOptions {
  std::optional<std::string> indent;  // json.dumps(indent=...): nullopt = one line
  bool ensure_ascii = false;          // escape non-ASCII characters as \uXXXX
  bool sort_keys = false;
  // json.dumps(separators=...); nullopt = Python's default for the indent
  // (", " and ": " on one line, "," and ": " when indenting).
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
};

// Fails for values JSON cannot hold (undefined, callables, namespaces, keys
// that are containers), for nesting deeper than Python's recursion allows,
// and when the text would exceed max_bytes.
Result<std::string> to_json(const Value& v, const JsonOptions& options, size_t max_bytes);

}  // namespace quip::chat::jinja
