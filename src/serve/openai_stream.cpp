#include "serve/openai_stream.h"

#include <nlohmann/json.hpp>

#include "base/text.h"

namespace quip::serve {

namespace {

using nlohmann::json;

// A count from the server: a non-negative integer, else 0 (counts are
// reported, never acted on, so a strange one costs the report only).
size_t count_at(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  const auto v = it->get<int64_t>();
  return v > 0 ? static_cast<size_t>(v) : 0;
}

// The text of a delta's field: a string, or nothing (null or absent).
Result<std::string> text_at(const json& delta, const char* key) {
  const auto it = delta.find(key);
  if (it == delta.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Error{std::string("a chunk's delta.") + key + " is not a string"};
  return it->get<std::string>();
}

std::string message_of(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    if (auto m = error.find("message"); m != error.end() && m->is_string()) {
      return m->get<std::string>();
    }
  }
  return error.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Result<ChatChunk> parse_chat_chunk(std::string_view data) {
  ChatChunk chunk;
  if (data == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  const json j = json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    return Error{"a stream event is not JSON: '" + printable(data, 80) + "'"};
  }
  if (!j.is_object())
    return Error{"a stream event is not a JSON object: '" + printable(data, 80) + "'"};
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    return Error{"the server reported: " + printable(message_of(*e), 200)};
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    ChatUsage usage;
    usage.prompt_tokens = count_at(*u, "prompt_tokens");
    usage.completion_tokens = count_at(*u, "completion_tokens");
    if (auto d = u->find("prompt_tokens_details"); d != u->end()) {
      usage.cached_tokens = count_at(*d, "cached_tokens");
    }
    chunk.usage = usage;
  }
  const auto choices = j.find("choices");
  if (choices == j.end() || choices->is_null()) return chunk;  // the usage chunk has []
  if (!choices->is_array()) return Error{"a chunk's choices is not a list"};
  if (choices->empty()) return chunk;
  // One completion is asked for (n = 1): the first choice is the answer.
  const json& choice = choices->front();
  if (!choice.is_object()) return Error{"a chunk's choice is not an object"};
  if (auto d = choice.find("delta"); d != choice.end() && !d->is_null()) {
    if (!d->is_object()) return Error{"a chunk's delta is not an object"};
    auto content = text_at(*d, "content");
    if (!content) return content.error();
    chunk.content = std::move(*content);
    // DeepSeek's and llama-server's name, then vLLM's newer one.
    auto reasoning = text_at(*d, "reasoning_content");
    if (!reasoning) return reasoning.error();
    if (reasoning->empty()) reasoning = text_at(*d, "reasoning");
    if (!reasoning) return reasoning.error();
    chunk.reasoning = std::move(*reasoning);
  }
  if (auto f = choice.find("finish_reason"); f != choice.end() && !f->is_null()) {
    if (!f->is_string()) return Error{"a chunk's finish_reason is not a string"};
    chunk.finish_reason = f->get<std::string>();
  }
  return chunk;
}

std::string error_message(std::string_view body, size_t max_bytes) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
      return printable(message_of(*e), max_bytes);
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) {
      return printable(m->get<std::string>(), max_bytes);
    }
  }
  // Trimmed of the line breaks around a plain-text or HTML body.
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const size_t last = body.find_last_not_of(" \t\r\n");
  return printable(body.substr(first, last - first + 1), max_bytes);
}

}  // namespace quip::serve
