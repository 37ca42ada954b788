// GGUF v2/v3 reader over a read-only memory map, with full validation.
//
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
//   header      magic "GGUF", u32 version, u64 tensor count, u64 metadata count
//   metadata    (string key, u32 value type, value) x count
//   tensor info (string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset) x count
//   padding     to `general.alignment` (default 32)
//   tensor data offsets are relative to the start of this section
//
// Opening reads the header, metadata and tensor table only; tensor data is
// never touched (opening a 1 GB model costs microseconds). Every size and
// offset taken from the file is checked before use: any file, however broken,
// gives an Error naming the file, the problem, the value found and the value
// expected, never a crash.
//
// Thread safety: a GgufFile is immutable after open; use it from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/result.h"
#include "base/text.h"
#include "gguf/types.h"
#include "gguf/value.h"

namespace quip::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint32_t kMaxTensorNameBytes = 63;  // ggml's GGML_MAX_NAME less the NUL
inline constexpr uint64_t kMaxKeyBytes = 65535;
inline constexpr uint32_t kMaxArrayNesting = 8;  // an array of arrays is nesting 2

struct KeyValue {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  TypeTraits type;      // a valid ggml type (maybe without an engine kernel)
  uint32_t n_dims = 0;  // 1..kMaxDims
  std::array<uint64_t, kMaxDims> shape{1, 1, 1, 1};  // shape[0] innermost (ggml's ne)
  uint64_t offset = 0;  // from the start of the data section, as stored
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  std::span<const std::byte> data;  // into the mapping; not read at open
};

class GgufFile {
 public:
  // Maps and validates the file at `path`. The first part of a model split
  // across files (llama.cpp's gguf-split: `split.count` > 1, `split.no` 0,
  // the file named PREFIX-00001-of-NNNNN.gguf) opens the other parts beside
  // it too (PREFIX-00002-of-NNNNN.gguf, ...): their tensors are listed in
  // tensors() with the first part's, each viewing its own part's mapping,
  // so the parts load as one model. Any other part is an error.
  static Result<GgufFile> open(const std::string& path);

  // Validates `bytes`, which the caller keeps alive as long as the result.
  // `name` stands for the file in messages.
  static Result<GgufFile> parse(std::string name, std::span<const std::byte> bytes);

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  std::span<const std::byte> bytes() const { return bytes_; }  // the whole file

  // The encoded metadata section, as stored (to fingerprint a file's
  // metadata without walking it again).
  std::span<const std::byte> metadata_bytes() const { return metadata_bytes_; }

  // Metadata in file order.
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;

  // The value of `key` as T (a scalar alternative of Value, or string_view). Errors name the
  // file, the key, the stored type and T's type:
  //   "m.gguf: key 'llama.block_count' has type string, expected u32".
  template <class T>
  Result<T> get(std::string_view key) const;

  // Like get<T>, but nullopt when the key is absent.
  template <class T>
  Result<std::optional<T>> get_optional(std::string_view key) const;

  // An integer stored in any integer type, if it is non-negative.
  Result<uint64_t> get_uint(std::string_view key) const;

  // An array whose elements have type `elem`.
  Result<const ArrayView*> get_array(std::string_view key, ValueType elem) const;

  // Tensors in file order (of a split model, the parts' in part order).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // Of a split model, the parts after this first one; empty otherwise.
  const std::vector<GgufFile>& parts() const { return parts_; }
  // The bytes of this file and of its parts.
  uint64_t total_size() const;
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  class Parser;

  static Result<GgufFile> open_one(const std::string& path);
  Result<void> open_parts();

  Error key_type_error(std::string_view key, ValueType found, ValueType expected) const;

  std::string name_;
  std::string prefix_;                 // "name: ", printable, for messages
  std::optional<MappedFile> mapping_;  // set by open(); parse() borrows instead
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::span<const std::byte> metadata_bytes_;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string_view, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  std::vector<GgufFile> parts_;
};

template <class T>
Result<T> GgufFile::get(std::string_view key) const {
  static_assert(!std::is_same_v<T, ArrayView>, "use get_array(), which does not copy");
  const Value* v = find(key);
  if (v == nullptr) return Error{prefix_ + "key '" + printable(key) + "' not found"};
  if (const T* p = std::get_if<T>(v)) return *p;
  return key_type_error(key, type_of(*v), value_type_of<T>());
}

template <class T>
Result<std::optional<T>> GgufFile::get_optional(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::optional<T>();
  if (const T* p = std::get_if<T>(v)) return std::optional<T>(*p);
  return key_type_error(key, type_of(*v), value_type_of<T>());
}

}  // namespace quip::gguf
