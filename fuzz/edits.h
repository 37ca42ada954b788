// For fuzz targets that mutate a real file of their own making: the input
// as a list of edits, so that most runs get past the format's first checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

namespace quip::fuzz {

// `file` after `edits`: (offset u16 big-endian, xor u8) triples, applied in
// turn, until a 0xFF in an offset's first byte; the two bytes after it,
// when present, give a length to truncate to. Offsets and lengths wrap
// around the file's size. PRECONDITIONS: file is not empty.
inline std::vector<uint8_t> edited(std::vector<uint8_t> file, std::span<const uint8_t> edits) {
  size_t at = 0;
  for (; at + 3 <= edits.size() && edits[at] != 0xff; at += 3) {
    const size_t offset = (size_t{edits[at]} << 8 | edits[at + 1]) % file.size();
    file[offset] ^= edits[at + 2];
  }
  if (at + 3 <= edits.size()) {
    file.resize((size_t{edits[at + 1]} << 8 | edits[at + 2]) % (file.size() + 1));
  }
  return file;
}

inline void write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace quip::fuzz
