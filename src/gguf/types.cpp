#include "gguf/types.h"

#include <array>
#include <cctype>

#include "base/check.h"

namespace quip::gguf {

namespace {

// Block sizes and byte counts follow the block structs of ggml-common.h; for
// the K-quants and i-quants a block is a 256-element super-block.
constexpr TypeTraits kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},
    {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 2 + 16},
    {GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16},
    {GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16},
    {GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16},
    {GgmlType::Q8_0, "Q8_0", 32, 2 + 32},
    {GgmlType::Q8_1, "Q8_1", 32, 2 + 2 + 32},
    {GgmlType::Q2_K, "Q2_K", 256, 16 + 64 + 2 + 2},
    {GgmlType::Q3_K, "Q3_K", 256, 32 + 64 + 12 + 2},
    {GgmlType::Q4_K, "Q4_K", 256, 2 + 2 + 12 + 128},
    {GgmlType::Q5_K, "Q5_K", 256, 2 + 2 + 12 + 32 + 128},
    {GgmlType::Q6_K, "Q6_K", 256, 128 + 64 + 16 + 2},
    {GgmlType::Q8_K, "Q8_K", 256, 4 + 256 + 32},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 2 + 64},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 2 + 64 + 8},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 2 + 96},
    {GgmlType::IQ1_S, "IQ1_S", 256, 2 + 32 + 16},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16},
    {GgmlType::IQ3_S, "IQ3_S", 256, 2 + 64 + 8 + 32 + 4},
    {GgmlType::IQ2_S, "IQ2_S", 256, 2 + 64 + 8 + 8},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 2 + 2 + 4 + 128},
    {GgmlType::I8, "I8", 1, 1},
    {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},
    {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},
    {GgmlType::IQ1_M, "IQ1_M", 256, 32 + 16 + 8},
    {GgmlType::BF16, "BF16", 1, 2},
    {GgmlType::TQ1_0, "TQ1_0", 256, 48 + 4 + 2},
    {GgmlType::TQ2_0, "TQ2_0", 256, 64 + 2},
    {GgmlType::MXFP4, "MXFP4", 32, 1 + 16},
};

// kTypes indexed by id; `valid` is false for the ids ggml never assigned or removed.
struct Slot {
  TypeTraits traits;
  bool valid;
};

constexpr std::array<Slot, kGgmlTypeIdEnd> make_table() {
  std::array<Slot, kGgmlTypeIdEnd> table{};
  for (const TypeTraits& t : kTypes) table[static_cast<uint32_t>(t.type)] = Slot{t, true};
  return table;
}

constexpr std::array<Slot, kGgmlTypeIdEnd> kTable = make_table();

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t id) {
  if (id >= kGgmlTypeIdEnd || !kTable[id].valid) return std::nullopt;
  return kTable[id].traits;
}

TypeTraits traits(GgmlType type) {
  const std::optional<TypeTraits> t = type_traits(static_cast<uint32_t>(type));
  CHECK(t.has_value());
  return *t;
}

std::optional<std::string_view> type_name(uint32_t id) {
  const std::optional<TypeTraits> t = type_traits(id);
  if (!t) return std::nullopt;
  return t->name;
}

std::optional<GgmlType> type_from_name(std::string_view name) {
  for (const TypeTraits& t : kTypes) {
    if (t.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::toupper(static_cast<unsigned char>(name[i])) == t.name[i];
    }
    if (same) return t.type;
  }
  return std::nullopt;
}

}  // namespace quip::gguf
