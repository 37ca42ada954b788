// A read-only memory map of a whole file (RAII).
//
// The pages are shared with the page cache: several processes mapping the
// same model share one copy of it, and mapping costs no read of the file.
// Thread safety: immutable after open; bytes() may be read from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/result.h"

namespace quip {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void reset();

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace quip
