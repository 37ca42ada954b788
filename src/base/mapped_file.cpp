#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/file_io.h"
#include "base/text.h"

namespace quip {

namespace {

Error errno_error(const std::string& path, const char* what) {
  return Error{printable(path, 4096) + ": " + what + ": " + std::strerror(errno)};
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  struct stat st {};
  auto fd = open_regular_file(path, &st);  // never blocks on a FIFO; a regular file only
  if (!fd) return fd.error();

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;

  // The mapping outlives the descriptor: it can be closed once mmap returns.
  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_SHARED, fd->get(), 0);
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
