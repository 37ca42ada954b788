#include "serve/openai_client.h"

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/text.h"
#include "serve/sse.h"

namespace quip::serve {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// An error body is read for its message only: a few kilobytes say it.
constexpr size_t kMaxErrorBody = 64 * 1024;
// A whole (non-streamed) answer, from a server that ignores "stream".
constexpr size_t kMaxJsonBody = 64 << 20;

struct EasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// What the write callback keeps of the response.
struct Reception {
  CURL* easy = nullptr;
  const ChatHandlers* handlers = nullptr;
  Clock::time_point t0;
  SseParser parser;
  std::vector<SseEvent> events;
  ChatResult result;
  long status = 0;         // the HTTP status, read with the first byte of the body
  bool json_body = false;  // Content-Type application/json: a whole answer, not a stream
  std::string body;        // an error's body, or a whole JSON answer
  bool done = false;       // "data: [DONE]" seen
  bool stopped = false;    // the caller asked to stop
  std::optional<Error> failure;
};

void pass_on(Reception& r, const std::string& content, const std::string& reasoning) {
  if ((!content.empty() || !reasoning.empty()) && r.result.first_piece_ms == 0) {
    r.result.first_piece_ms = ms_since(r.t0);
  }
  if (!reasoning.empty()) {
    r.result.reasoning += reasoning;
    if (r.handlers->on_reasoning) r.handlers->on_reasoning(reasoning);
  }
  if (!content.empty()) {
    r.result.content += content;
    if (r.handlers->on_content && !r.handlers->on_content(content)) r.stopped = true;
  }
}

// The events the parser completed; false to stop reading.
bool take_events(Reception& r) {
  for (const SseEvent& e : r.events) {
    if (r.done) break;  // nothing after [DONE] counts
    if (!e.type.empty() && e.type != "message") {
      // OpenAI's "event: error" carries the error as data.
      if (e.type == "error") {
        r.failure = Error{"the server reported: " + error_message(e.data)};
        return false;
      }
      continue;
    }
    auto chunk = parse_chat_chunk(e.data);
    if (!chunk) {
      r.failure = chunk.error();
      return false;
    }
    if (chunk->done) {
      r.done = true;
      break;
    }
    pass_on(r, chunk->content, chunk->reasoning);
    if (chunk->finish_reason) r.result.finish_reason = chunk->finish_reason;
    if (chunk->usage) r.result.usage = chunk->usage;
    if (r.stopped) break;
  }
  r.events.clear();
  return !r.stopped;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto& r = *static_cast<Reception*>(user);
  const size_t bytes = size * n;
  if (r.status == 0) {
    curl_easy_getinfo(r.easy, CURLINFO_RESPONSE_CODE, &r.status);
    char* type = nullptr;
    curl_easy_getinfo(r.easy, CURLINFO_CONTENT_TYPE, &type);
    r.json_body = type != nullptr && std::string_view(type).starts_with("application/json");
  }
  if (r.status >= 300 || r.json_body) {
    const size_t limit = r.status >= 300 ? kMaxErrorBody : kMaxJsonBody;
    if (r.body.size() < limit) r.body.append(data, std::min(bytes, limit - r.body.size()));
    return bytes;
  }
  if (auto ok = r.parser.push(std::string_view(data, bytes), r.events); !ok) {
    r.failure = ok.error();
    return 0;
  }
  return take_events(r) ? bytes : 0;  // 0: curl stops with CURLE_WRITE_ERROR
}

// A server that answered with one JSON object ("stream" ignored): its
// message as one piece.
Result<void> take_json_answer(Reception& r) {
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty() || !j["choices"][0].is_object()) {
    return Error{"the answer is neither an event stream nor a chat completion: '" +
                 printable(r.body, 80) + "'"};
  }
  // A whole answer reads as one chunk whose delta is its message.
  nlohmann::json chunk = {{"choices", nlohmann::json::array()}};
  nlohmann::json choice = j["choices"][0];
  if (choice.contains("message")) choice["delta"] = choice["message"];
  chunk["choices"].push_back(choice);
  if (j.contains("usage")) chunk["usage"] = j["usage"];
  auto parsed =
      parse_chat_chunk(chunk.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!parsed) return parsed.error();
  pass_on(r, parsed->content, parsed->reasoning);
  r.result.finish_reason = parsed->finish_reason;
  r.result.usage = parsed->usage;
  r.done = true;
  return {};
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// "HTTP 500" with the reason phrases people know for the common ones.
std::string status_text(long status) {
  std::string s = "HTTP " + std::to_string(status);
  switch (status) {
    case 400: return s + " Bad Request";
    case 401: return s + " Unauthorized";
    case 403: return s + " Forbidden";
    case 404: return s + " Not Found";
    case 429: return s + " Too Many Requests";
    case 500: return s + " Internal Server Error";
    case 502: return s + " Bad Gateway";
    case 503: return s + " Service Unavailable";
    default: return s;
  }
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
  const std::string shown = printable(url, 120);
  std::string_view rest = url;
  std::string scheme;
  for (const char* s : {"http://", "https://"}) {
    if (rest.starts_with(s)) {
      scheme = s;
      rest.remove_prefix(scheme.size());
    }
  }
  if (scheme.empty()) return Error{"backend '" + shown + "': expected an http:// or https:// URL"};
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Error{"backend '" + shown + "': a URL with a query or fragment is not a server's base"};
  }
  for (const char c : rest) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return Error{"backend '" + shown + "': the URL holds a space or control character"};
    }
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return Error{"backend '" + printable(scheme) +
                 "...': a URL with a user name or password; "
                 "give the key in an environment variable (api_key_env)"};
  }
  if (authority.empty()) return Error{"backend '" + shown + "': the URL has no host"};
  std::string path(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (path.ends_with('/')) path.pop_back();
  if (path.ends_with("/v1")) path.resize(path.size() - 3);
  while (path.ends_with('/')) path.pop_back();
  return Endpoint{scheme + std::string(authority) + path, std::string(authority)};
}

Result<ChatResult> stream_chat(const ChatCall& call, const ChatHandlers& handlers) {
  global_init();
  const std::string& host = call.endpoint.host;
  const auto fail = [&](const std::string& what) { return Error{host + ": " + what}; };
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!easy || !multi) return fail("cannot start an HTTP client (libcurl)");
  CURL* h = easy.get();

  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Accept: text/event-stream");
  std::unique_ptr<curl_slist, ListDeleter> headers(list);
  if (!call.api_key.empty()) {
    const std::string auth = "Authorization: Bearer " + call.api_key;
    headers.reset(curl_slist_append(headers.release(), auth.c_str()));
  }
  if (!headers) return fail("cannot start an HTTP client (libcurl)");

  Reception r;
  r.easy = h;
  r.handlers = &handlers;
  r.t0 = Clock::now();
  char curl_error[CURL_ERROR_SIZE] = {};
  const std::string url = call.endpoint.chat_url();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, call.body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_error);
  // No signals from libcurl (its DNS timeouts would use SIGALRM): the
  // caller's handlers own Ctrl-C.
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, call.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, call.idle_timeout_s);
  // A redirect would resend the key elsewhere; a server's base is given whole.
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "quip");
  curl_multi_add_handle(multi.get(), h);

  int running = 1;
  while (running != 0) {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) {
      curl_multi_remove_handle(multi.get(), h);
      return fail("the HTTP client failed (libcurl)");
    }
    // After [DONE] nothing more is read: a server that keeps the
    // connection open is not waited for.
    if (running == 0 || r.stopped || r.failure || r.done) break;
    if (handlers.keep_going && !handlers.keep_going()) {
      r.stopped = true;
      break;
    }
    // Waits for the socket, at most 100 ms, so that a stop is heard soon.
    curl_multi_poll(multi.get(), nullptr, 0, 100, nullptr);
  }
  CURLcode code = CURLE_OK;
  bool finished = false;
  int queued = 0;
  while (CURLMsg* m = curl_multi_info_read(multi.get(), &queued)) {
    if (m->msg == CURLMSG_DONE) {
      code = m->data.result;
      finished = true;
    }
  }
  double connect_s = 0;
  curl_easy_getinfo(h, CURLINFO_CONNECT_TIME, &connect_s);
  r.result.connected_ms = connect_s * 1000;
  long status = r.status;
  if (status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  // Removing the handle closes the connection of a call cut short.
  curl_multi_remove_handle(multi.get(), h);
  r.result.end_ms = ms_since(r.t0);

  if (r.failure) return fail("malformed stream: " + r.failure->message);
  if (r.stopped) {
    r.result.interrupted = true;
    r.result.finish_reason.reset();
    return std::move(r.result);
  }
  if (r.done && !finished) return std::move(r.result);
  if (!finished) return fail("the HTTP client stopped without a result (libcurl)");
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return fail(status == 0
                    ? "no answer within the timeout (" + std::to_string(call.connect_timeout_s) +
                          " s to connect, " + std::to_string(call.idle_timeout_s) + " s idle)"
                    : "timed out: nothing received for " + std::to_string(call.idle_timeout_s) +
                          " s");
  }
  if (code != CURLE_OK) {
    const std::string why = curl_error[0] != '\0' ? curl_error : curl_easy_strerror(code);
    if (status >= 300) return fail(status_text(status) + ": " + printable(why, 200));
    return fail("cannot reach the server: " + printable(why, 200));
  }
  if (status >= 300) {
    const std::string message = error_message(r.body);
    return fail(status_text(status) + (message.empty() ? "" : ": " + message));
  }
  if (r.json_body) {
    if (auto ok = take_json_answer(r); !ok) return fail(ok.error().message);
    return std::move(r.result);
  }
  if (auto ok = r.parser.finish(r.events); !ok)
    return fail("malformed stream: " + ok.error().message);
  if (!take_events(r) && r.failure) return fail("malformed stream: " + r.failure->message);
  if (r.stopped) {
    r.result.interrupted = true;
    r.result.finish_reason.reset();
    return std::move(r.result);
  }
  if (!r.done && !r.result.finish_reason) {
    return fail("malformed stream: it ended before the answer did (no finish_reason, no [DONE])");
  }
  return std::move(r.result);
}

}  // namespace quip::serve
