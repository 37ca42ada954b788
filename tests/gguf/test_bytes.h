// Hand-built GGUF bytes for tests: the pieces the writer will not produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace quip::gguf::testing {

struct Bytes {
  std::vector<std::byte> b;

  template <class T>
  Bytes& put(T v) {
    std::byte buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    b.insert(b.end(), buf, buf + sizeof(T));
    return *this;
  }
  Bytes& raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    b.insert(b.end(), p, p + s.size());
    return *this;
  }
  Bytes& str(std::string_view s) { return put<uint64_t>(s.size()).raw(s); }
  // Magic, version and counts.
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF").put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
};

}  // namespace quip::gguf::testing
