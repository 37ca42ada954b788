// libFuzzer target: any bytes parsed as JSON (parse failures are skipped)
// and converted as a JSON Schema. Conversion returns a grammar or a
// one-line error, never crashes or hangs; and a grammar it returns must
// compile: the converter must never write GBNF that compile_gbnf refuses.
//
// Seeds: the schemas of tests/data/json_schemas (scripts/fuzz.sh ... json_schema).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;  // larger schemas only make each run slower
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, false);
  if (schema.is_discarded()) return 0;
  const quip::Result<std::string> gbnf = quip::grammar::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) {
    const std::string& m = gbnf.error().message;
    if (m.empty() || m.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const auto compiled = quip::grammar::compile_gbnf(*gbnf);
  if (!compiled.ok()) {
    std::fprintf(stderr, "json_schema_fuzz: the grammar does not compile: %s\n%s\n",
                 compiled.error().message.c_str(), gbnf->c_str());
    std::abort();
  }
  return 0;
}
