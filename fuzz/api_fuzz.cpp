// libFuzzer target for the bodies `quip serve` reads from any client
// (serve/api.h): any bytes give a request or a 400 whose message is one
// line, never a crash, a hang or a leak; and the stop-string matcher, fed
// the same bytes in pieces, lets out exactly the text before the earliest
// stop string. The first byte picks the parser and the piece size.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "serve/api.h"

namespace {

using quip::serve::ApiError;
using quip::serve::ApiRequest;
using quip::serve::Parsed;

void check_parsed(const Parsed& p) {
  if (const auto* e = std::get_if<ApiError>(&p)) {
    if (e->status != 400 || e->message.empty() || e->message.find('\n') != std::string::npos) {
      std::abort();
    }
    return;
  }
  const ApiRequest& r = std::get<ApiRequest>(p);
  if (r.chat && !r.messages.is_array()) std::abort();
  if (r.max_tokens < -1 || r.top_logprobs < 0 || r.top_logprobs > 20) std::abort();
}

void check_stops(std::string_view text, size_t piece) {
  // Stop strings taken from the text itself, so that they occur.
  std::vector<std::string> stops;
  if (text.size() >= 4) {
    stops.emplace_back(text.substr(text.size() / 2, 2));
    stops.emplace_back(text.substr(1, 3));
  }
  quip::serve::StopMatcher m(stops);
  std::string out;
  for (size_t at = 0; at < text.size() && !m.stopped(); at += piece) {
    out += m.push(text.substr(at, piece));
  }
  out += m.flush();
  size_t first = std::string::npos;
  for (const auto& s : stops) first = std::min(first, text.find(s));
  if (out != text.substr(0, first)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: check_parsed(quip::serve::parse_openai_chat(body)); break;
    case 1: check_parsed(quip::serve::parse_openai_completion(body)); break;
    case 2: check_parsed(quip::serve::parse_ollama_chat(body)); break;
    case 3: check_parsed(quip::serve::parse_ollama_generate(body)); break;
    default: (void)quip::serve::parse_ollama_show(body); break;
  }
  check_stops(body, 1 + data[0] / 5 % 7);
  return 0;
}
