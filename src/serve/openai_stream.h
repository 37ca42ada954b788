// What the events of an OpenAI chat-completions stream say (the API
// reference's "The chat completion chunk object"): pure functions over the
// text of each event's data, so that a server's every kind of chunk, broken
// ones included, is tested without a server.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace quip::serve {

// The "usage" object of the last chunk (stream_options.include_usage).
struct ChatUsage {
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens, when given
  size_t completion_tokens = 0;
};

// One event of the stream.
struct ChatChunk {
  bool done = false;                         // "data: [DONE]": the stream's end
  std::string content;                       // choices[0].delta.content
  std::string reasoning;                     // choices[0].delta.reasoning_content (or "reasoning")
  std::optional<std::string> finish_reason;  // "stop", "length", ...
  std::optional<ChatUsage> usage;
};

// Reads one event's data. Errors (one line, the server's text shortened
// and made printable): data that is not JSON or not a chunk object, and a
// chunk that reports an error ({"error": {"message": ...}}, which some
// servers send in the middle of a stream).
Result<ChatChunk> parse_chat_chunk(std::string_view data);

// The message of an error response's body: OpenAI's {"error": {"message"}},
// {"error": "text"} (Ollama, some proxies), {"message": ...}, or else the
// body itself; printable and at most `max_bytes` long. Empty for an empty
// body.
std::string error_message(std::string_view body, size_t max_bytes = 200);

}  // namespace quip::serve
