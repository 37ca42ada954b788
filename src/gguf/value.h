// GGUF metadata values as read from a file: views into the mapped bytes.
//
// Ownership: strings and array elements point into the GgufFile's mapping and
// live as long as the GgufFile they came from.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/big_alloc.h"
#include "base/check.h"

namespace quip::gguf {

// The 13 value types of GGUF; the numbers are those stored in the file.
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

inline constexpr uint32_t kValueTypeCount = 13;

// "u32", "string", ... as used in messages and `quip inspect --json`.
std::string_view value_type_name(ValueType type);

// Bytes per element of a fixed-size type; 0 for String and Array.
uint32_t value_type_size(ValueType type);

// An array value. Scalar elements stay packed in the file (`raw`); strings and
// nested arrays are indexed at open.
struct ArrayView {
  ValueType elem_type = ValueType::U8;
  uint64_t length = 0;
  const std::byte* raw = nullptr;         // scalar elements, little-endian, unaligned
  BigVector<std::string_view> strings;  // when elem_type == String
  std::vector<ArrayView> arrays;          // when elem_type == Array

  // Element i of a scalar array.
  // PRECONDITIONS: T matches elem_type (see value_type_of), i < length.
  template <class T>
  T at(uint64_t i) const;
};

// Alternatives in the order of ValueType, so that index() == the type number.
using Value = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                           std::string_view, ArrayView, uint64_t, int64_t, double>;

inline ValueType type_of(const Value& v) {
  return static_cast<ValueType>(v.index());
}

// The ValueType that holds a C++ scalar type T.
template <class T>
constexpr ValueType value_type_of() {
  constexpr size_t index = []<size_t... I>(std::index_sequence<I...>) {
    constexpr bool same[] = {std::is_same_v<T, std::variant_alternative_t<I, Value>>...};
    for (size_t i = 0; i < sizeof...(I); ++i) {
      if (same[i]) return i;
    }
    return sizeof...(I);
  }
  (std::make_index_sequence<std::variant_size_v<Value>>{});
  static_assert(index < std::variant_size_v<Value>, "not a GGUF value type");
  return static_cast<ValueType>(index);
}

template <class T>
T ArrayView::at(uint64_t i) const {
  static_assert(std::is_arithmetic_v<T>, "at() reads scalar elements");
  CHECK(elem_type == value_type_of<T>());
  CHECK(i < length);
  if constexpr (std::is_same_v<T, bool>) {
    return raw[i] != std::byte{0};
  } else {
    T v;
    std::memcpy(&v, raw + i * sizeof(T), sizeof(T));
    return v;
  }
}

}  // namespace quip::gguf
