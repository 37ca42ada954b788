// The ggml tensor types a GGUF file may name, with their block layout.
//
// Ids are fixed by ggml (ggml.h, enum ggml_type); ids that ggml has removed
// (4, 5, 31-33, 36-38) are invalid here too. A type in this table but without
// an engine kernel is still a valid tensor type: the reader accepts it and
// `quip inspect` lists it; the engine refuses it at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace quip::gguf {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// One past the largest id ggml has assigned.
inline constexpr uint32_t kGgmlTypeIdEnd = 40;

struct TypeTraits {
  GgmlType type;
  std::string_view name;  // upper case, as ggml prints it: "Q4_K", "BF16"
  uint32_t block_size;    // elements per block
  uint32_t block_bytes;   // bytes per block
};

// The traits of type id `id`, or nullopt for an id ggml does not define.
std::optional<TypeTraits> type_traits(uint32_t id);

// Traits of a valid type.
TypeTraits traits(GgmlType type);

// The name of type id `id` ("Q4_K"), or nullopt for an invalid id.
std::optional<std::string_view> type_name(uint32_t id);

// The type called `name` (case-insensitive), or nullopt.
std::optional<GgmlType> type_from_name(std::string_view name);

}  // namespace quip::gguf
