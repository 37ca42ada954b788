#include "base/file_io.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/text.h"

namespace quip {

namespace fs = std::filesystem;

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

std::string_view file_kind_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

std::string shown(const fs::path& path) {
  return printable(path.string(), 4096);
}

Error errno_error(const fs::path& path, const char* what, int e) {
  return Error{shown(path) + ": " + what + ": " + std::strerror(e)};
}

}  // namespace

Result<UniqueFd> open_regular_file(const fs::path& path, struct stat* st) {
  if (path.empty()) return Error{"empty file name"};
  // O_NONBLOCK: open() of a FIFO would otherwise wait for a writer forever.
  // O_NOCTTY: a terminal device named here must not become ours.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return errno_error(path, "cannot open", errno);
  struct stat own {};
  struct stat& s = st != nullptr ? *st : own;
  if (::fstat(fd.get(), &s) != 0) return errno_error(path, "cannot stat", errno);
  if (S_ISDIR(s.st_mode)) return Error{shown(path) + ": is a directory, expected a file"};
  if (!S_ISREG(s.st_mode)) {
    return Error{shown(path) + ": is " + std::string(file_kind_name(s.st_mode)) +
                 ", expected a regular file"};
  }
  // Reads of a regular file never block anyway; clearing the flag keeps the
  // descriptor ordinary for whoever uses it next (mmap, SQLite).
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return errno_error(path, "cannot open", errno);
  }
  return fd;
}

Result<void> check_regular_if_exists(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return {};
  auto fd = open_regular_file(path);
  if (!fd) return fd.error();
  return {};
}

Result<std::string> read_bounded(int fd, std::string_view name, uint64_t max_bytes,
                                 std::string_view hint) {
  std::string text;
  const auto too_long = [&] {
    std::string m(name);
    m += ": longer than ";
    m += human_size(max_bytes);
    m += hint;
    return Error{std::move(m)};
  };
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking stdin: wait for it
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      return Error{std::string(name) + ": cannot read: " + std::strerror(errno)};
    }
    if (text.size() + static_cast<size_t>(n) > max_bytes) return too_long();
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

Result<std::string> read_regular_file(const fs::path& path, uint64_t max_bytes,
                                      std::string_view hint) {
  struct stat st {};
  auto fd = open_regular_file(path, &st);
  if (!fd) return fd.error();
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Error{shown(path) + ": longer than " + human_size(max_bytes) + std::string(hint)};
  }
  return read_bounded(fd->get(), shown(path), max_bytes, hint);
}

std::string human_size(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

namespace {

// chmod's a folder or file of ours back to owner-only access. Never a folder
// with the sticky bit (a shared one such as /tmp) or someone else's.
void restrict_mode(const fs::path& path, const struct stat& st) {
  if ((st.st_mode & 077) == 0 || st.st_uid != ::geteuid() || (st.st_mode & S_ISVTX) != 0) return;
  const mode_t keep = S_ISDIR(st.st_mode) ? 0700 : 0600;
  ::chmod(path.c_str(), st.st_mode & keep);
}

}  // namespace

Result<void> make_private_dir(const fs::path& dir, int owned_parents) {
  if (dir.empty()) return {};
  // Create each missing folder from the top down, 0700 (the umask can only
  // take bits away).
  fs::path at;
  for (const fs::path& part : dir) {
    at /= part;
    struct stat st {};
    if (::stat(at.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return Error{shown(at) + ": is " + std::string(file_kind_name(st.st_mode)) +
                     ", expected a directory"};
      }
      continue;
    }
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
      return errno_error(at, "cannot create the folder", errno);
    }
  }
  fs::path p = dir.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "a/b/" names b
  for (int level = 0; level <= owned_parents && !p.empty() && p != p.root_path(); ++level) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) restrict_mode(p, st);
    p = p.parent_path();
  }
  return {};
}

void make_private(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) restrict_mode(path, st);
}

void make_private(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_mode & 077) == 0 || st.st_uid != ::geteuid()) return;
  ::fchmod(fd, st.st_mode & (S_ISDIR(st.st_mode) ? 0700 : 0600));
}

}  // namespace quip
