// The ggml type table against the bits per weight that ggml documents for
// each format (an independent statement of the block layouts).
#include "gguf/types.h"

#include <gtest/gtest.h>

#include <set>

namespace quip::gguf {
namespace {

TEST(Types, BitsPerWeightMatchTheFormats) {
  const struct {
    GgmlType type;
    double bpw;
  } kExpected[] = {
      {GgmlType::F32, 32},         {GgmlType::F16, 16},        {GgmlType::BF16, 16},
      {GgmlType::Q4_0, 4.5},       {GgmlType::Q4_1, 5.0},      {GgmlType::Q5_0, 5.5},
      {GgmlType::Q5_1, 6.0},       {GgmlType::Q8_0, 8.5},      {GgmlType::Q8_1, 9.0},
      {GgmlType::Q2_K, 2.625},     {GgmlType::Q3_K, 3.4375},   {GgmlType::Q4_K, 4.5},
      {GgmlType::Q5_K, 5.5},       {GgmlType::Q6_K, 6.5625},   {GgmlType::Q8_K, 9.125},
      {GgmlType::IQ2_XXS, 2.0625}, {GgmlType::IQ2_XS, 2.3125}, {GgmlType::IQ2_S, 2.5625},
      {GgmlType::IQ3_XXS, 3.0625}, {GgmlType::IQ3_S, 3.4375},  {GgmlType::IQ1_S, 1.5625},
      {GgmlType::IQ1_M, 1.75},     {GgmlType::IQ4_NL, 4.5},    {GgmlType::IQ4_XS, 4.25},
      {GgmlType::TQ1_0, 1.6875},   {GgmlType::TQ2_0, 2.0625},  {GgmlType::MXFP4, 4.25},
      {GgmlType::I8, 8},           {GgmlType::I16, 16},        {GgmlType::I32, 32},
      {GgmlType::I64, 64},         {GgmlType::F64, 64},
  };
  std::set<uint32_t> seen;
  for (const auto& e : kExpected) {
    const TypeTraits t = traits(e.type);
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(t.type, e.type);
    EXPECT_DOUBLE_EQ(8.0 * t.block_bytes / t.block_size, e.bpw);
    seen.insert(static_cast<uint32_t>(e.type));
  }
  // Every id ggml defines is covered above; the others are invalid.
  for (uint32_t id = 0; id < kGgmlTypeIdEnd + 8; ++id) {
    EXPECT_EQ(type_traits(id).has_value(), seen.count(id) == 1) << "id " << id;
  }
  EXPECT_FALSE(type_traits(4).has_value());  // Q4_2, removed from ggml
  EXPECT_FALSE(type_traits(0xFFFFFFFFu).has_value());
}

TEST(Types, NamesRoundTrip) {
  for (uint32_t id = 0; id < kGgmlTypeIdEnd; ++id) {
    const std::optional<std::string_view> name = type_name(id);
    if (!name) continue;
    ASSERT_EQ(type_from_name(*name), static_cast<GgmlType>(id));
    std::string lower(*name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(type_from_name(lower), static_cast<GgmlType>(id)) << lower;
  }
  EXPECT_EQ(type_name(12), "Q4_K");
  EXPECT_FALSE(type_from_name("Q4_K_M").has_value());  // a file type, not a tensor type
  EXPECT_FALSE(type_from_name("").has_value());
}

}  // namespace
}  // namespace quip::gguf
