// libFuzzer target: parsing and rendering any bytes as a chat template
// returns a result or an error, never crashes, hangs or leaks; a template
// that parses renders a fixed small conversation (with tools) within tight
// limits, so each input costs milliseconds.
//
// Seeds: the shared model templates (scripts/fuzz.sh ... jinja).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const nlohmann::ordered_json m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi \u00fc\ud83e\udd99"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"role": "user", "content": [{"type": "text", "text": "and?"}]}
  ])");
  return m;
}

const nlohmann::ordered_json& tools() {
  static const nlohmann::ordered_json t = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "f", "description": "d",
     "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}
  ])");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  quip::Result<quip::chat::ChatTemplate> t = quip::chat::ChatTemplate::parse(source);
  if (!t) {
    if (t.error().message.empty()) std::abort();
    return 0;
  }
  quip::chat::RenderOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.now = 1767323045;
  options.extra_ordered["tools"] = tools();
  // Small limits: the fuzzer looks for crashes, not for long renders.
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_iterations = 10'000;
  options.limits.max_work = 200'000;
  for (bool agp : {true, false}) {
    options.add_generation_prompt = agp;
    const quip::Result<std::string> out = t->render(messages(), options);
    if (out.ok() && out->size() > options.limits.max_output_bytes) std::abort();
    if (!out.ok() && out.error().message.empty()) std::abort();
  }
  return 0;
}
