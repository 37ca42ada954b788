// The HTTP side of `quip pull` (hf_download.h), inside src/hub only: the
// requests to a hub through libcurl, with the token sent to the hub's own
// origin and nowhere else, and the one-line messages for what a hub
// answers. Thread safety: a Client is used by one thread at a time.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "hub/hf_download.h"

namespace quip::hub {

struct EasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// libcurl's global setup, done once.
void global_init();

// ASCII lower case.
std::string lower(std::string s);

// "scheme://host:port" of a URL, lower-cased: whom a token may go to.
std::string origin_of(std::string_view url);

// A repository path as a URL path: everything but unreserved characters
// and '/' percent-encoded (huggingface_hub's quote(filename)).
std::string url_path(std::string_view path);

// A Location header made absolute against the URL it answered.
std::string resolve_location(const std::string& base, const std::string& location);

// ETag: W/"abc" or "abc" -> abc (huggingface_hub's _normalize_etag).
std::string normalize_etag(std::string etag);

// What a request got back.
struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last response's
  std::string body;                            // capped; not for downloads to a file
  CURLcode code = CURLE_OK;
  std::string curl_error;
};

// CURLOPT_HEADERFUNCTION for a std::map<std::string, std::string>: the
// headers of the last response (a redirect's are dropped), names lower-cased.
size_t on_header(char* data, size_t size, size_t n, void* user);

class Client {
 public:
  explicit Client(const PullRequest& request)
      : request_(request), endpoint_origin_(origin_of(request.endpoint)) {}

  // A request whose whole answer is kept (up to `limit` bytes; past it the
  // code is CURLE_WRITE_ERROR). `nobody`: a HEAD request. Redirects are not
  // followed. `keep_going` (may be null) is asked while waiting; false
  // aborts the request (CURLE_ABORTED_BY_CALLBACK).
  Response fetch(const std::string& url, bool nobody, size_t limit,
                 const std::function<bool()>& keep_going) const;

  // fetch, following relative redirects (a renamed repository's routes
  // answer 307 with a Location on the same host), as huggingface_hub's
  // _httpx_follow_relative_redirects does; `url` becomes the last one asked.
  Response fetch_following(std::string& url, bool nobody, size_t limit,
                           const std::function<bool()>& keep_going) const;

  // The headers of a request: `extra`, and the token for the endpoint's origin only.
  std::unique_ptr<curl_slist, ListDeleter> request_headers(
      const std::string& url, std::initializer_list<std::string> extra) const;

  // The options every request has: URL, headers, error buffer (of
  // CURL_ERROR_SIZE), timeouts, protocols, user agent, no signals.
  void common_options(CURL* h, const std::string& url, curl_slist* headers, char* error) const;

 private:
  const PullRequest& request_;
  std::string endpoint_origin_;
};

// The one line for an HTTP error status. `what`: "repository" or "file".
std::string status_error(const Response& r, const PullRequest& request, std::string_view what);

// The one line for a transfer that libcurl ended with an error.
std::string transfer_error(const Response& r, const PullRequest& request);

}  // namespace quip::hub
