#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/text.h"

namespace quip {

namespace {

// Closes a descriptor when the scope ends. The mapping outlives it: a file
// descriptor can be closed after mmap returns without invalidating the map.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

Error errno_error(const std::string& path, const char* what) {
  return Error{printable(path, 4096) + ": " + what + ": " + std::strerror(errno)};
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(path, "cannot open");
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_error(path, "cannot stat");
  if (S_ISDIR(st.st_mode))
    return Error{printable(path, 4096) + ": is a directory, expected a file"};
  if (!S_ISREG(st.st_mode)) return Error{printable(path, 4096) + ": is not a regular file"};

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;

  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return errno_error(path, "cannot map");
  file.data_ = static_cast<const std::byte*>(addr);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace quip
