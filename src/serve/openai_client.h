// The client side of an OpenAI-compatible chat-completions API (llama-server,
// vLLM, Ollama's /v1, OpenAI, another `quip serve`): one streamed call,
// POST <base>/v1/chat/completions with "stream": true, its deltas passed on
// as they arrive. HTTP and HTTPS through libcurl.
//
// Nothing here prints; every failure is one line that names the server's
// host (never the API key, which is sent only in the Authorization header).
// Thread safety: calls are independent; libcurl's global setup is done once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "serve/openai_stream.h"

namespace quip::serve {

// A server's base URL as the user gave it, made canonical.
struct Endpoint {
  std::string base;  // "http://host:8080" or "https://host/prefix": no "/v1", no trailing '/'
  std::string host;  // "host:8080": what messages name

  std::string chat_url() const { return base + "/v1/chat/completions"; }
};

// "http://host:8080", ".../", ".../v1" and ".../v1/" all name one server.
// Errors: a URL that is not http:// or https://, has no host, or holds a
// user name or password (keys go in an environment variable, never in a
// URL that is recorded), a query or a fragment.
Result<Endpoint> parse_endpoint(std::string_view url);

struct ChatCall {
  Endpoint endpoint;
  std::string body;     // the request's JSON
  std::string api_key;  // sent as "Authorization: Bearer KEY"; empty: none
  long connect_timeout_s = 10;
  // No byte from the server for this long (no token, no keep-alive) ends
  // the call as timed out.
  long idle_timeout_s = 300;
};

struct ChatHandlers {
  // Each piece of the answer as it comes; false stops the call (the
  // connection is closed and the result says interrupted).
  std::function<bool(std::string_view text)> on_content;
  std::function<void(std::string_view text)> on_reasoning;
  // Asked at least every 100 ms while waiting for the server; false stops
  // the call as on_content's false does. Null: never.
  std::function<bool()> keep_going;
};

struct ChatResult {
  std::string content, reasoning;
  std::optional<std::string> finish_reason;  // absent when interrupted
  std::optional<ChatUsage> usage;            // absent when the server sent none
  bool interrupted = false;
  // Milliseconds from the call's start to the connection being made, to
  // the first piece of the answer (or reasoning), and to the end.
  double connected_ms = 0, first_piece_ms = 0, end_ms = 0;
};

// Makes the call. Errors, one line each, starting "HOST: ": the host cannot
// be reached or the connection fails, no byte within the timeout, an HTTP
// error status (with the server's message), a stream that is malformed or
// ends before the answer does. An interrupted call is not an error.
Result<ChatResult> stream_chat(const ChatCall& call, const ChatHandlers& handlers);

}  // namespace quip::serve
