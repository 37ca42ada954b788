// GGUF v3 writer, for tests and tools that make model files.
//
// The writer writes what it is told, valid or not (tests use it to build
// broken files); GgufFile is what validates. Tensor offsets are laid out in
// order at the alignment unless a test overrides them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"
#include "gguf/value.h"

namespace quip::gguf {

struct OwnedValue;

struct OwnedArray {
  ValueType elem_type = ValueType::U8;
  std::vector<OwnedValue> items;  // each of type elem_type
};

// A metadata value that owns its contents; alternatives in ValueType order.
struct OwnedValue : std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                                 std::string, OwnedArray, uint64_t, int64_t, double> {
  using variant::variant;
};

// An array of `values`, each converted to an OwnedValue of type T's.
template <class T>
OwnedArray make_array(const std::vector<T>& values);

class GgufWriter {
 public:
  // Appends a metadata entry (a duplicate key is written twice).
  void set(std::string key, OwnedValue value);

  // Appends a metadata entry whose value is `type` and `payload` as given.
  void set_raw(std::string key, uint32_t type, std::vector<std::byte> payload);

  // Appends a tensor. `shape` is innermost first; `data` is written as is.
  // With `zero_bytes` set instead of data, that many zero bytes are written
  // (as a hole in the file where the file system supports it).
  void add_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                  std::vector<std::byte> data);
  void add_zero_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                       uint64_t zero_bytes);

  // Appends a tensor of `n_bytes` whose data `fill` writes when the file is
  // written (so a multi-gigabyte model never sits in memory whole).
  using Fill = std::function<void(std::span<std::byte>)>;
  void add_generated_tensor(std::string name, uint32_t type, std::vector<uint64_t> shape,
                            uint64_t n_bytes, Fill fill);

  // Stores `offset` for tensor i instead of the laid-out one.
  void set_tensor_offset(size_t i, uint64_t offset);

  void set_version(uint32_t version) { version_ = version; }

  // The whole file in memory (zero tensors included).
  std::vector<std::byte> bytes() const;

  // Writes the file to `path` through a temporary file renamed into place.
  Result<void> write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> shape;
    std::vector<std::byte> data;
    uint64_t size;
    std::optional<uint64_t> offset_override;
    Fill fill;  // when set, the data is made at write time
  };
  struct Entry {
    std::string key;
    uint32_t type;
    std::vector<std::byte> payload;  // the encoded value
  };

  uint64_t alignment() const;
  // The header, metadata and tensor table, padded to the data section.
  std::vector<std::byte> head() const;
  std::vector<uint64_t> offsets() const;

  uint32_t version_ = 3;
  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

template <class T>
OwnedArray make_array(const std::vector<T>& values) {
  OwnedArray a;
  if constexpr (std::is_same_v<T, std::string>) {
    a.elem_type = ValueType::String;
  } else {
    a.elem_type = value_type_of<T>();
  }
  a.items.reserve(values.size());
  for (const T& v : values) a.items.emplace_back(std::in_place_type<T>, v);
  return a;
}

}  // namespace quip::gguf
