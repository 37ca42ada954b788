#include "hub/hf_download.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "base/file_io.h"
#include "base/text.h"
#include "hub/hf_http.h"

namespace quip::hub {

namespace {

namespace fs = std::filesystem;

// The listing of a repository with thousands of files is a few megabytes.
constexpr size_t kMaxListingBytes = 64 << 20;
// An error's body is read for its message only.
constexpr size_t kMaxErrorBody = 16 * 1024;

struct DigestDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string hex(const unsigned char* bytes, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kHex[bytes[i] >> 4];
    s += kHex[bytes[i] & 15];
  }
  return s;
}

// SHA-256 through OpenSSL's EVP interface.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { reset(); }
  void reset() {
    ok_ = ctx_ != nullptr && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1;
  }
  void update(const void* data, size_t n) {
    ok_ = ok_ && EVP_DigestUpdate(ctx_.get(), data, n) == 1;
  }
  // The digest as 64 lower-case hex digits; empty if OpenSSL failed.
  std::string finish() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!ok_ || EVP_DigestFinal_ex(ctx_.get(), digest, &n) != 1) return "";
    return hex(digest, n);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, DigestDeleter> ctx_;
  bool ok_ = false;
};

uint64_t parse_u64(const std::string& s, bool& ok) {
  uint64_t v = 0;
  ok = !s.empty() && s.size() <= 19;
  for (const char c : s) {
    if (c < '0' || c > '9') ok = false;
    if (ok) v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Hashes the first `n` bytes of `fd` into `hash`; false on a read error.
bool hash_prefix(int fd, uint64_t n, Sha256& hash) {
  std::vector<char> buf(1 << 20);
  uint64_t at = 0;
  while (at < n) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - at));
    const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    hash.update(buf.data(), static_cast<size_t>(got));
    at += static_cast<uint64_t>(got);
  }
  return true;
}

// A download's state, shared with libcurl's callbacks.
struct Transfer {
  CURL* easy = nullptr;
  int fd = -1;
  Sha256* hash = nullptr;
  uint64_t offset = 0;  // bytes in the file
  uint64_t received = 0;
  long status = 0;  // the final response's, read with its first body byte
  const std::map<std::string, std::string>* headers = nullptr;  // the final response's
  std::string error_body;
  bool wrong_range = false;  // a 206 that does not start at `offset`
  int write_errno = 0;
  bool stopped = false;
  const PullHandlers* handlers = nullptr;
  PullProgress* progress = nullptr;
  uint64_t done_before = 0;  // bytes of earlier files in place
};

bool report(Transfer& t) {
  if (!t.handlers->on_progress) return true;
  t.progress->done = t.done_before + t.offset;
  if (!t.handlers->on_progress(*t.progress)) t.stopped = true;
  return !t.stopped;
}

size_t on_download_body(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (t.status == 0) {
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.status);
    if (t.status == 200 && t.offset > 0) {
      // The Range was ignored: the whole file comes, so the part starts over.
      if (::ftruncate(t.fd, 0) != 0 || ::lseek(t.fd, 0, SEEK_SET) != 0) {
        t.write_errno = errno;
        return 0;
      }
      t.hash->reset();
      t.offset = 0;
    } else if (t.status == 206) {
      // "Content-Range: bytes FROM-LAST/SIZE" must start where the part ends.
      const auto it = t.headers->find("content-range");
      const std::string expect = "bytes " + std::to_string(t.offset) + "-";
      if (it == t.headers->end() || !it->second.starts_with(expect)) {
        t.wrong_range = true;
        return 0;
      }
    }
  }
  if (t.status >= 300) {
    if (t.error_body.size() < kMaxErrorBody) {
      t.error_body.append(data, std::min(bytes, kMaxErrorBody - t.error_body.size()));
    }
    return bytes;
  }
  size_t written = 0;
  while (written < bytes) {
    const ssize_t w = ::write(t.fd, data + written, bytes - written);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      t.write_errno = errno;
      return 0;  // libcurl stops with CURLE_WRITE_ERROR
    }
    t.hash->update(data + written, static_cast<size_t>(w));
    written += static_cast<size_t>(w);
    t.offset += static_cast<uint64_t>(w);
    t.received += static_cast<uint64_t>(w);
  }
  return report(t) ? bytes : 0;
}

int on_transfer_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  return report(t) ? 0 : 1;  // non-zero: CURLE_ABORTED_BY_CALLBACK
}

// An flock held until it goes.
class FileLock {
 public:
  FileLock() = default;
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;
  ~FileLock() {
    if (fd_.valid()) ::flock(fd_.get(), LOCK_UN);
  }

 private:
  UniqueFd fd_;
};

std::string errno_text(int e) {
  return std::strerror(e);
}

bool disk_full(int e) {
  return e == ENOSPC || e == EDQUOT || e == EFBIG;
}

// Writes `text` to `path` through a temporary file renamed into place.
Result<void> write_atomically(const fs::path& path, std::string_view text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd.valid()) {
    return Error{printable(tmp.string(), 4096) + ": cannot create: " + errno_text(errno)};
  }
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Error{printable(tmp.string(), 4096) + ": cannot write: " + errno_text(e)};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Error{printable(path.string(), 4096) + ": cannot write: " + errno_text(e)};
  }
  return {};
}

// Points `link` at `target` (relative), replacing what is there atomically.
Result<void> link_atomically(const fs::path& link, const std::string& target) {
  const fs::path tmp = link.string() + ".tmp-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), link.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Error{printable(link.string(), 4096) + ": cannot link to " + target + ": " +
                 errno_text(e)};
  }
  return {};
}

class Puller {
 public:
  Puller(const PullRequest& request, const PullHandlers& handlers)
      : request_(request), handlers_(handlers), client_(request) {}

  Result<PullResult> run() {
    const std::string& ep = request_.endpoint;
    const std::string& repo = request_.ref.repo;
    // 1. The listing.
    const std::string& revision = request_.ref.revision;
    const std::string what =
        revision == "main" ? "repository" : "repository or revision '" + revision + "'";
    std::string info_url =
        ep + "/api/models/" + repo + "/revision/" + revision_url_segment(revision) + "?blobs=true";
    const Response info =
        client_.fetch_following(info_url, /*nobody=*/false, kMaxListingBytes, handlers_.keep_going);
    if (info.code == CURLE_ABORTED_BY_CALLBACK) {
      result_.interrupted = true;
      return std::move(result_);
    }
    if (info.status >= 300) return Error{status_error(info, request_, what)};
    if (info.code == CURLE_WRITE_ERROR) {
      return Error{ep + ": the listing of the repository is longer than " +
                   human_size(kMaxListingBytes)};
    }
    if (info.code != CURLE_OK) return Error{transfer_error(info, request_)};
    if (info.status != 200) return Error{status_error(info, request_, what)};
    auto listing = parse_model_info(info.body);
    if (!listing) return listing.error().with_context(ep);
    if (is_commit(revision) && listing->commit != revision) {
      return Error{ep + " answered commit " + listing->commit + " for commit " + revision};
    }
    result_.commit = listing->commit;

    // 2. The file(s).
    auto files = choose_model_files(listing->files, request_.ref.tag);
    if (!files) return files.error();
    for (const RepoFile& f : *files) {
      if (f.sha256.empty()) {
        return Error{f.path +
                     ": the hub lists no SHA-256 for it (not an LFS file), so it cannot "
                     "be verified"};
      }
    }
    result_.files = *files;

    const fs::path repo_dir = request_.cache / repo_folder_name(repo);
    blobs_ = repo_dir / "blobs";
    locks_ = request_.cache / ".locks" / repo_folder_name(repo);
    std::error_code ec;
    for (const fs::path& dir : {blobs_, locks_}) {
      fs::create_directories(dir, ec);
      if (ec) return Error{printable(dir.string(), 4096) + ": cannot create: " + ec.message()};
    }

    // 3. The blobs.
    progress_.total = 0;
    for (const RepoFile& f : result_.files) progress_.total += f.size;
    uint64_t done = 0;
    std::vector<const RepoFile*> missing;
    for (const RepoFile& f : result_.files) {
      if (blob_in_place(f)) {
        done += f.size;
      } else {
        missing.push_back(&f);
        struct stat st {};
        if (::stat(incomplete_path(f).c_str(), &st) == 0 &&
            static_cast<uint64_t>(st.st_size) <= f.size) {
          done += static_cast<uint64_t>(st.st_size);
        }
      }
    }
    progress_.at_start = done;
    progress_.done = done;
    uint64_t in_place = 0;
    for (const RepoFile& f : result_.files) {
      if (std::find(missing.begin(), missing.end(), &f) == missing.end()) {
        in_place += f.size;
        continue;
      }
      auto ok = fetch_blob(f, in_place);
      if (!ok) return ok.error();
      if (result_.interrupted) return std::move(result_);
      in_place += f.size;
    }

    // 4. The snapshot, then refs/REVISION (none for a commit: its name is
    // the snapshot's).
    const fs::path snapshot = repo_dir / "snapshots" / result_.commit;
    for (const RepoFile& f : result_.files) {
      const fs::path link = snapshot / f.path;
      fs::create_directories(link.parent_path(), ec);
      if (ec) {
        return Error{printable(link.parent_path().string(), 4096) +
                     ": cannot create: " + ec.message()};
      }
      if (auto ok = link_atomically(link, snapshot_link_target(f.path, f.sha256)); !ok) {
        return ok.error();
      }
    }
    if (!is_commit(revision)) {
      const fs::path ref = repo_dir / "refs" / revision;  // "refs/pr/3": folders
      fs::create_directories(ref.parent_path(), ec);
      if (ec) {
        return Error{printable(ref.parent_path().string(), 4096) +
                     ": cannot create: " + ec.message()};
      }
      if (auto ok = write_atomically(ref, result_.commit); !ok) return ok.error();
    }
    result_.path = snapshot / result_.files.front().path;
    return std::move(result_);
  }

 private:
  fs::path blob_path(const RepoFile& f) const { return blobs_ / f.sha256; }
  fs::path incomplete_path(const RepoFile& f) const { return blobs_ / (f.sha256 + ".incomplete"); }

  // A blob whose name is its hash was verified when it was renamed there;
  // its size is checked again (a cache copied halfway).
  bool blob_in_place(const RepoFile& f) const {
    struct stat st {};
    return ::stat(blob_path(f).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           static_cast<uint64_t>(st.st_size) == f.size;
  }

  // Takes the file's lock, waiting while another process holds it.
  Result<FileLock> lock(const RepoFile& f) {
    const fs::path path = locks_ / (f.sha256 + ".lock");
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
    if (!fd.valid()) {
      return Error{printable(path.string(), 4096) + ": cannot open the lock: " + errno_text(errno)};
    }
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        return Error{printable(path.string(), 4096) + ": cannot lock: " + errno_text(errno)};
      }
      if (handlers_.keep_going && !handlers_.keep_going()) {
        result_.interrupted = true;
        return FileLock();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return FileLock(std::move(fd));
  }

  // Where the bytes of `f` are: the resolve URL's redirect, checked
  // against the listing.
  Result<std::string> locate(const RepoFile& f) {
    std::string url = request_.endpoint + "/" + request_.ref.repo + "/resolve/" + result_.commit +
                      "/" + url_path(f.path);
    const Response head =
        client_.fetch_following(url, /*nobody=*/true, kMaxErrorBody, handlers_.keep_going);
    if (head.code == CURLE_ABORTED_BY_CALLBACK) {
      result_.interrupted = true;
      return std::string();
    }
    if (head.code != CURLE_OK) return Error{f.path + ": " + transfer_error(head, request_)};
    if (head.status >= 400) return Error{f.path + ": " + status_error(head, request_, "file")};
    const auto header = [&](const char* name) {
      const auto it = head.headers.find(name);
      return it == head.headers.end() ? std::string() : it->second;
    };
    std::string etag = header("x-linked-etag");
    if (etag.empty()) etag = header("etag");
    etag = normalize_etag(etag);
    if (etag != f.sha256) {
      return Error{f.path + ": the hub's ETag '" + printable(etag, 80) +
                   "' is not the SHA-256 its listing gives (" + f.sha256 +
                   "); the repository may have changed: pull again"};
    }
    std::string size_text = header("x-linked-size");
    if (size_text.empty() && head.status < 300) size_text = header("content-length");
    bool ok = false;
    const uint64_t size = parse_u64(size_text, ok);
    if (ok && size != f.size) {
      return Error{f.path + ": the hub gives its size as " + std::to_string(size) +
                   " bytes, its listing as " + std::to_string(f.size)};
    }
    if (head.status >= 300) {
      const std::string location = header("location");
      if (location.empty()) {
        return Error{f.path + ": " + request_.endpoint + " answered HTTP " +
                     std::to_string(head.status) + " without a Location"};
      }
      return resolve_location(url, location);
    }
    return url;
  }

  Result<void> fetch_blob(const RepoFile& f, uint64_t done_before) {
    auto held = lock(f);
    if (!held) return held.error();
    if (result_.interrupted) return {};
    // Another process may have finished it while this one waited.
    if (blob_in_place(f)) return {};
    auto url = locate(f);
    if (!url) return url.error();
    if (result_.interrupted) return {};

    const fs::path part = incomplete_path(f);
    const std::string shown = printable(part.string(), 4096);
    UniqueFd fd(::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
    if (!fd.valid()) return Error{f.path + ": cannot create " + shown + ": " + errno_text(errno)};
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      return Error{f.path + ": cannot read " + shown + ": " + errno_text(errno)};
    }
    uint64_t have = static_cast<uint64_t>(st.st_size);
    Sha256 hash;
    // A part longer than the file, or one that cannot be read, starts over.
    if (have > f.size || !hash_prefix(fd.get(), have, hash)) {
      if (::ftruncate(fd.get(), 0) != 0) {
        return Error{f.path + ": cannot truncate " + shown + ": " + errno_text(errno)};
      }
      have = 0;
      hash.reset();
    }
    // pread left the offset where it was: the new bytes go after the old.
    if (::lseek(fd.get(), static_cast<off_t>(have), SEEK_SET) < 0) {
      return Error{f.path + ": cannot seek in " + shown + ": " + errno_text(errno)};
    }

    Transfer t;
    t.fd = fd.get();
    t.hash = &hash;
    t.offset = have;
    t.handlers = &handlers_;
    t.progress = &progress_;
    t.done_before = done_before;
    progress_.file = f.path;
    if (have < f.size) {
      auto got = download(*url, f, t);
      result_.received += t.received;
      if (!got) return got.error();
      if (t.stopped) {
        result_.interrupted = true;
        return {};
      }
    }
    if (t.offset != f.size) {
      return Error{f.path + ": the transfer ended after " + std::to_string(t.offset) + " of " +
                   std::to_string(f.size) + " bytes; pull again to resume"};
    }
    // The file must hold what was hashed: as many bytes as were received.
    if (::fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != f.size) {
      ::unlink(part.c_str());
      return Error{f.path + ": " + shown + " does not hold the " + std::to_string(f.size) +
                   " bytes received; it was discarded"};
    }
    const std::string got = hash.finish();
    if (got != f.sha256) {
      ::unlink(part.c_str());
      return Error{f.path + ": SHA-256 mismatch: expected " + f.sha256 + ", got " +
                   (got.empty() ? std::string("nothing (OpenSSL failed)") : got) +
                   "; the download was discarded"};
    }
    // On disk before it has its final name: a crash never leaves a short blob.
    if (::fsync(fd.get()) != 0) {
      const int e = errno;
      return Error{f.path + ": cannot write " + shown + ": " + errno_text(e) +
                   (disk_full(e) ? "; free some space and pull again to resume" : "")};
    }
    if (::rename(part.c_str(), blob_path(f).c_str()) != 0) {
      return Error{f.path + ": cannot rename " + shown + ": " + errno_text(errno)};
    }
    return {};
  }

  // GETs `url` from t.offset into t.fd (on_download_body starts over when
  // a server ignores the Range and sends the whole file). A server that
  // finds the Range unsatisfiable (416) gets the whole file asked again.
  Result<void> download(const std::string& url, const RepoFile& f, Transfer& t) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
      if (!easy) return Error{"cannot start an HTTP client (libcurl)"};
      CURL* h = easy.get();
      const uint64_t from = t.offset;
      Response r;
      auto list = client_.request_headers(url, {});
      char error[CURL_ERROR_SIZE] = {};
      client_.common_options(h, url, list.get(), error);
      const std::string range = std::to_string(from) + "-";
      if (from > 0) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
      // Further redirects are followed; libcurl drops the Authorization
      // header when one leads to another host.
      curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
      curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.headers);
      t.easy = h;
      t.headers = &r.headers;
      t.status = 0;
      t.error_body.clear();
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_download_body);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
      curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_transfer_progress);
      curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
      r.code = curl_easy_perform(h);
      r.curl_error = error;
      r.body = t.error_body;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
      if (t.stopped) return {};
      if (t.write_errno != 0) {
        const int e = t.write_errno;
        const std::string shown = printable(incomplete_path(f).string(), 4096);
        if (disk_full(e)) {
          return Error{f.path + ": cannot write " + shown + ": " + errno_text(e) + "; its " +
                       std::to_string(t.offset) +
                       " bytes are kept: free some space and pull again to resume"};
        }
        return Error{f.path + ": cannot write " + shown + ": " + errno_text(e)};
      }
      if (t.wrong_range) {
        return Error{f.path + ": asked for bytes from " + std::to_string(from) +
                     ", the server sent a different range"};
      }
      if (r.status == 416 && from > 0) {
        if (::ftruncate(t.fd, 0) != 0 || ::lseek(t.fd, 0, SEEK_SET) != 0) {
          return Error{f.path + ": cannot truncate the partial download: " + errno_text(errno)};
        }
        t.hash->reset();
        t.offset = 0;
        continue;
      }
      if (r.status >= 300) return Error{f.path + ": " + status_error(r, request_, "file")};
      if (r.code != CURLE_OK) {
        return Error{f.path + ": " + transfer_error(r, request_) + " after " +
                     std::to_string(t.offset) + " of " + std::to_string(f.size) +
                     " bytes; pull again to resume"};
      }
      return {};
    }
    return Error{f.path + ": the server refuses every Range request (HTTP 416)"};
  }

  const PullRequest& request_;
  const PullHandlers& handlers_;
  Client client_;
  fs::path blobs_, locks_;
  PullProgress progress_;
  PullResult result_;
};

}  // namespace

Result<PullResult> pull(const PullRequest& request, const PullHandlers& handlers) {
  global_init();
  return Puller(request, handlers).run();
}

}  // namespace quip::hub
