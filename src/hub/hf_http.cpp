#include "hub/hf_http.h"

#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace quip::hub {

namespace {

struct BodySink {
  std::string* body;
  size_t limit;
};

size_t on_small_body(char* data, size_t size, size_t n, void* user) {
  auto& sink = *static_cast<BodySink*>(user);
  const size_t bytes = size * n;
  if (sink.body->size() + bytes > sink.limit) return 0;  // too long: the transfer fails
  sink.body->append(data, bytes);
  return bytes;
}

int on_wait_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto& keep_going = *static_cast<const std::function<bool()>*>(user);
  return keep_going() ? 0 : 1;
}

// The hub's own words for an error: X-Error-Message, else the body's
// {"error": "..."}, else nothing.
std::string hub_message(const Response& r) {
  if (auto it = r.headers.find("x-error-message"); it != r.headers.end()) {
    return printable(it->second, 200);
  }
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return printable(j["error"].get<std::string>(), 200);
  }
  return "";
}

}  // namespace

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// "scheme://host:port" of a URL, lower-cased: whom a token may go to.
std::string origin_of(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return "";
  const size_t path = url.find_first_of("/?#", scheme_end + 3);
  return lower(std::string(url.substr(0, path)));
}

// A repository path as a URL path: everything but unreserved characters
// and '/' percent-encoded (huggingface_hub's quote(filename)).
std::string url_path(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || c == '/') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A Location header made absolute against the URL it answered.
std::string resolve_location(const std::string& base, const std::string& location) {
  if (location.starts_with("http://") || location.starts_with("https://")) return location;
  const std::string origin = origin_of(base);
  if (location.starts_with("//")) return origin.substr(0, origin.find("://") + 1) + location;
  if (location.starts_with("/")) return origin + location;
  const size_t query = base.find_first_of("?#");
  const std::string path = base.substr(0, query);
  return path.substr(0, path.rfind('/') + 1) + location;
}

// ETag: W/"abc" or "abc" -> abc (huggingface_hub's _normalize_etag).
std::string normalize_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto& headers = *static_cast<std::map<std::string, std::string>*>(user);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  // A new response (after a redirect) starts afresh.
  if (line.starts_with("HTTP/")) {
    headers.clear();
  } else if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    headers[lower(std::string(line.substr(0, colon)))] = std::string(value);
  }
  return size * n;
}

Response Client::fetch(const std::string& url, bool nobody, size_t limit,
                       const std::function<bool()>& keep_going) const {
  Response r;
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  if (!easy) {
    r.code = CURLE_FAILED_INIT;
    return r;
  }
  auto headers = request_headers(url, {"Accept: application/json"});
  BodySink sink{&r.body, limit};
  char error[CURL_ERROR_SIZE] = {};
  CURL* h = easy.get();
  common_options(h, url, headers.get(), error);
  curl_easy_setopt(h, CURLOPT_NOBODY, nobody ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_small_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  if (keep_going) {
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_wait_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &keep_going);
  }
  r.code = curl_easy_perform(h);
  r.curl_error = error;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

Response Client::fetch_following(std::string& url, bool nobody, size_t limit,
                                 const std::function<bool()>& keep_going) const {
  for (int hop = 0;; ++hop) {
    Response r = fetch(url, nobody, limit, keep_going);
    const auto location = r.headers.find("location");
    if (r.code != CURLE_OK || r.status < 300 || r.status >= 400 || hop == 5 ||
        location == r.headers.end() || !location->second.starts_with("/") ||
        location->second.starts_with("//")) {
      return r;
    }
    url = origin_of(url) + location->second;
  }
}

std::unique_ptr<curl_slist, ListDeleter> Client::request_headers(
    const std::string& url, std::initializer_list<std::string> extra) const {
  std::unique_ptr<curl_slist, ListDeleter> list;
  for (const std::string& e : extra) list.reset(curl_slist_append(list.release(), e.c_str()));
  if (!request_.token.empty() && origin_of(url) == endpoint_origin_) {
    const std::string auth = "Authorization: Bearer " + request_.token;
    list.reset(curl_slist_append(list.release(), auth.c_str()));
  }
  return list;
}

void Client::common_options(CURL* h, const std::string& url, curl_slist* headers,
                            char* error) const {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  // No signals from libcurl: the command's handlers own Ctrl-C.
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, request_.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, request_.stall_timeout_s);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, request_.user_agent.c_str());
}

// The one line for an HTTP error status. `what`: "repository" or "file".
std::string status_error(const Response& r, const PullRequest& request, std::string_view what) {
  const std::string& ep = request.endpoint;
  const std::string code = "HTTP " + std::to_string(r.status);
  const std::string said = hub_message(r);
  const std::string because = said.empty() ? "" : " (" + said + ")";
  if (r.status == 404) return "no such " + std::string(what) + " on " + ep + because;
  if (r.status == 401 && request.token.empty()) {
    return "not found, or private or gated (" + code + " from " + ep +
           "): set HF_TOKEN to an access token that can read it";
  }
  if (r.status == 401) {
    return ep + " refused " + request.token_source + " (" + code + because +
           "): check that the token is valid and can read this repository";
  }
  if (r.status == 403) {
    return "access denied (" + code + " from " + ep + because +
           "): a gated model needs its terms accepted on the hub, and the token (" +
           request.token_source + ") must be one that may read it";
  }
  return ep + ": " + code + because;
}

// A transfer that libcurl ended with an error.
std::string transfer_error(const Response& r, const PullRequest& request) {
  const std::string why = r.curl_error.empty() ? curl_easy_strerror(r.code) : r.curl_error;
  if (r.code == CURLE_OPERATION_TIMEDOUT) {
    return "no data from " + request.endpoint + " for " + std::to_string(request.stall_timeout_s) +
           " s (" + printable(why, 200) + ")";
  }
  return "cannot reach " + request.endpoint + ": " + printable(why, 200);
}

Result<std::string> endpoint_from_environment() {
  const char* v = std::getenv("HF_ENDPOINT");
  std::string url = v != nullptr && *v != '\0' ? v : "https://huggingface.co";
  const std::string shown = printable(url, 200);
  while (url.ends_with('/')) url.pop_back();
  const size_t scheme = url.find("://");
  const std::string name = lower(url.substr(0, scheme == std::string::npos ? 0 : scheme));
  if (scheme == std::string::npos || (name != "http" && name != "https")) {
    return Error{"HF_ENDPOINT '" + shown + "': expected an http:// or https:// URL"};
  }
  const std::string rest = url.substr(scheme + 3);
  const std::string authority = rest.substr(0, rest.find('/'));
  if (authority.empty()) return Error{"HF_ENDPOINT '" + shown + "': the URL has no host"};
  if (authority.find('@') != std::string::npos) {
    return Error{"HF_ENDPOINT: a URL with a user name or password; give the token in HF_TOKEN"};
  }
  for (const char c : url) {
    if (c == '?' || c == '#' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return Error{"HF_ENDPOINT '" + shown + "': a base URL without spaces, query or fragment"};
    }
  }
  return url;
}

}  // namespace quip::hub
