// Opening the files quip reads, and keeping what it stores private.
//
// Every file quip reads (a model, -f, --template, config.toml, a cache file,
// the database) is opened with open_regular_file: O_NONBLOCK, so that a FIFO
// in its place cannot block open() waiting for a writer; fstat, so that only
// a regular file is accepted (a FIFO, a device such as /dev/zero, a socket or
// a folder is an error naming what it is); then O_NONBLOCK is cleared for the
// reads. Streams (stdin) are read with read_bounded, which stops at a limit
// instead of reading an endless source without end.
//
// What quip stores is the user's alone: its folders are created 0700 and its
// files 0600, and make_private_dir / make_private repair the modes of
// existing ones (a folder or file open to others is chmod'ed back, quietly;
// a chmod that fails, on a file of another owner or a read-only disk, is not
// an error: the files stay usable).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"

namespace quip {

// A file descriptor, closed when it goes (RAII).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// "a directory", "a FIFO", "a character device", ... for messages.
std::string_view file_kind_name(mode_t mode);

// Opens `path` for reading if it is a regular file, without ever blocking in
// open(). `st` (if given) receives its fstat. Errors name the path (made
// printable) and what is wrong: "PATH: cannot open: No such file or
// directory", "PATH: is a FIFO, expected a regular file".
Result<UniqueFd> open_regular_file(const std::filesystem::path& path, struct stat* st = nullptr);

// The same check without keeping the file open: an error when `path` exists
// and is not a regular file (or cannot be opened); ok when it does not exist.
Result<void> check_regular_if_exists(const std::filesystem::path& path);

// The whole of `fd`, read until its end but never more than `max_bytes`:
// past that the error is "NAME: longer than LIMIT" followed by `hint` (how
// to raise the limit). `name` names the source in errors ("stdin").
Result<std::string> read_bounded(int fd, std::string_view name, uint64_t max_bytes,
                                 std::string_view hint);

// A regular file's whole content; a file larger than `max_bytes` is refused
// (with `hint`) before anything is read.
Result<std::string> read_regular_file(const std::filesystem::path& path, uint64_t max_bytes,
                                      std::string_view hint = "");

// "64 MiB", "1.5 GiB", "100 B": a byte count for messages.
std::string human_size(uint64_t bytes);

// Creates `dir` and its missing parents with mode 0700. An existing `dir`,
// and its `owned_parents` nearest parents (folders quip owns too, such as
// the cache folder above cache/kv), are made 0700 again when others may
// read them. Errors name the folder.
Result<void> make_private_dir(const std::filesystem::path& dir, int owned_parents = 0);

// Makes an existing file 0600 (a folder 0700) when group or others have
// any access to it; quiet, and nothing when `path` does not exist.
void make_private(const std::filesystem::path& path);
// The same on an open descriptor.
void make_private(int fd);

}  // namespace quip
