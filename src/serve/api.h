// The HTTP APIs `quip serve` speaks, as data: a request body (OpenAI's
// chat and text completions, Ollama's chat and generate) read into one
// ApiRequest, and the objects each protocol answers with. No sockets here:
// the parsers take untrusted bytes and never throw (fuzz/fuzz_api.cpp), so
// that a malformed body is a 400 that names what is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "session/session.h"

namespace quip::serve {

// What a request asks, whichever API it came through.
struct ApiRequest {
  std::string model;  // as the client names it (may be empty)
  // Chat: `messages` ({"role", "content"} with string contents) through the
  // model's template. Otherwise `prompt`: through the template as one user
  // message (Ollama's generate, with `system` before it), or as it is
  // when `raw` (OpenAI's text completions, Ollama's raw generate).
  bool chat = true;
  nlohmann::json messages = nlohmann::json::array();
  std::string prompt;
  std::optional<std::string> system;
  bool raw = false;

  bool stream = false;
  bool include_usage = false;  // OpenAI: stream_options.include_usage
  int64_t max_tokens = -1;     // -1: until the end of the turn
  // Unset: the server's defaults (greedy, as `quip` is).
  std::optional<double> temperature, top_p, min_p, repeat_penalty;
  std::optional<int64_t> top_k, seed;
  std::vector<std::string> stop;  // the answer ends before the first of these
  int top_logprobs = 0;           // with logprobs: the K most likely tokens per step
  bool logprobs = false;
  bool ignore_eos = false;  // llama-server's extension: go on past the end of the turn
  size_t n_ctx = 0;         // Ollama's options.num_ctx; 0: the server's
  // Constrained output (OpenAI's response_format, Ollama's format) as GBNF.
  std::optional<std::string> grammar;
  std::optional<bool> think;  // Ollama's think; OpenAI's reasoning_effort "none" is false
};

// An answer the client gets instead: an HTTP status and a message.
struct ApiError {
  int status = 400;
  std::string message;
};

using Parsed = std::variant<ApiRequest, ApiError>;

// POST /v1/chat/completions, /v1/completions, /api/chat, /api/generate.
Parsed parse_openai_chat(std::string_view body);
Parsed parse_openai_completion(std::string_view body);
Parsed parse_ollama_chat(std::string_view body);
Parsed parse_ollama_generate(std::string_view body);
// POST /api/show: the model named.
std::variant<std::string, ApiError> parse_ollama_show(std::string_view body);

// OpenAI's error object ({"error": {"message", "type", "code"}}).
nlohmann::json openai_error(const ApiError& e);

// Where the answer ends early: the stop strings of a request, matched on the
// text as it streams. push() returns the part of `piece` that is safe to
// send (text that may be the start of a stop string is held back until it
// is not); after a match, `stopped()` is true and nothing more comes out.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  std::string push(std::string_view piece);
  // What was held back, at the end of an answer that did not stop here.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

// finish_reason / done_reason: "stop" for the end of the turn, a stop
// string or a grammar's end, "length" for a limit.
const char* finish_reason(const session::Answer& a);

// The usage object of OpenAI's answers.
nlohmann::json openai_usage(const session::Answer& a);
// Ollama's counts and durations (nanoseconds) of a final object.
void add_ollama_counts(nlohmann::json& j, const session::Answer& a, double total_ms);

// "2026-12-06T05:12:00.123Z" for Ollama's created_at.
std::string iso8601_now();

}  // namespace quip::serve
