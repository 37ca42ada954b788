// Writer -> reader round trips for every value type, the typed accessors and
// their messages, alignment and tensor placement.
#include "gguf/reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "gguf/writer.h"

namespace quip::gguf {
namespace {

constexpr uint32_t kF32 = static_cast<uint32_t>(GgmlType::F32);

Result<GgufFile> parse(const std::vector<std::byte>& bytes) {
  return GgufFile::parse("t.gguf", bytes);
}

template <class T>
void expect_scalar_round_trip(T value) {
  GgufWriter w;
  w.set("k", value);
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto got = f->get<T>("k");
  ASSERT_TRUE(got.ok()) << got.error().message;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(*got));
      return;
    }
  }
  EXPECT_EQ(*got, value);
  EXPECT_EQ(type_of(*f->find("k")), value_type_of<T>());
}

TEST(Reader, EveryScalarTypeRoundTrips) {
  for (uint8_t v : {uint8_t{0}, uint8_t{255}}) expect_scalar_round_trip(v);
  for (int8_t v : {int8_t{-128}, int8_t{127}}) expect_scalar_round_trip(v);
  for (uint16_t v : {uint16_t{0}, uint16_t{65535}}) expect_scalar_round_trip(v);
  for (int16_t v : {int16_t{-32768}, int16_t{32767}}) expect_scalar_round_trip(v);
  for (uint32_t v : {0u, 4294967295u}) expect_scalar_round_trip(v);
  for (int32_t v : {std::numeric_limits<int32_t>::min(), 7}) expect_scalar_round_trip(v);
  for (uint64_t v : {uint64_t{0}, ~uint64_t{0}}) expect_scalar_round_trip(v);
  for (int64_t v : {std::numeric_limits<int64_t>::min(), int64_t{-1}}) expect_scalar_round_trip(v);
  for (float v : {0.0f, -1.5e-30f, 1e-5f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    expect_scalar_round_trip(v);
  }
  for (double v : {0.1, -1e300, std::numeric_limits<double>::denorm_min()}) {
    expect_scalar_round_trip(v);
  }
  expect_scalar_round_trip(true);
  expect_scalar_round_trip(false);
}

TEST(Reader, StringsRoundTripByteForByte) {
  const std::string cases[] = {"", "plain", std::string("nul\0inside", 10), "é ▁ 日本 🦙",
                               std::string(100000, 'x')};
  for (const std::string& s : cases) {
    GgufWriter w;
    w.set("s", s);
    const auto bytes = w.bytes();
    auto f = parse(bytes);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(*f->get<std::string_view>("s"), s);
  }
}

template <class T>
void expect_array_round_trip(const std::vector<T>& values) {
  GgufWriter w;
  w.set("a", make_array(values));
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto a = f->get_array("a", value_type_of<T>());
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ((*a)->length, values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ((*a)->template at<T>(i), values[i]);
}

TEST(Reader, EveryArrayTypeRoundTrips) {
  expect_array_round_trip<uint8_t>({1, 2, 255});
  expect_array_round_trip<int8_t>({-1, 0, 1});
  expect_array_round_trip<uint16_t>({1, 65535});
  expect_array_round_trip<int16_t>({-32768, 5});
  expect_array_round_trip<uint32_t>({});
  expect_array_round_trip<int32_t>({-7, 1 << 30});
  expect_array_round_trip<float>({0.25f, -8.0f, 1e-7f});
  expect_array_round_trip<bool>({true, false, true});
  expect_array_round_trip<uint64_t>({~uint64_t{0}, 3});
  expect_array_round_trip<int64_t>({-5, 5});
  expect_array_round_trip<double>({1.0 / 3.0});
}

TEST(Reader, StringArraysAndNestedArraysRoundTrip) {
  std::vector<std::string> tokens = {"<s>", "", "▁the", std::string("\0x", 2)};
  OwnedArray nested{ValueType::Array, {}};
  nested.items.emplace_back(make_array(std::vector<std::string>{"a", "b"}));
  nested.items.emplace_back(make_array(std::vector<int32_t>{1, 2, 3}));
  OwnedArray deep{ValueType::Array, {}};
  deep.items.emplace_back(nested);

  GgufWriter w;
  w.set("tokens", make_array(tokens));
  w.set("nested", nested);
  w.set("deep", deep);
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;

  auto t = f->get_array("tokens", ValueType::String);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ((*t)->strings.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ((*t)->strings[i], tokens[i]);

  auto n = f->get_array("nested", ValueType::Array);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ((*n)->arrays.size(), 2u);
  EXPECT_EQ((*n)->arrays[0].strings[1], "b");
  EXPECT_EQ((*n)->arrays[1].elem_type, ValueType::I32);
  EXPECT_EQ((*n)->arrays[1].at<int32_t>(2), 3);

  auto d = f->get_array("deep", ValueType::Array);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->arrays[0].arrays[1].at<int32_t>(0), 1);
}

TEST(Reader, NestingUpToTheLimitIsAccepted) {
  OwnedValue v = make_array(std::vector<uint8_t>{9});
  for (uint32_t depth = 1; depth < kMaxArrayNesting; ++depth) {
    OwnedArray outer{ValueType::Array, {}};
    outer.items.push_back(std::move(v));
    v = std::move(outer);
  }
  GgufWriter w;
  w.set("deepest", std::move(v));
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  EXPECT_TRUE(f.ok()) << f.error().message;
}

TEST(Reader, MetadataKeepsFileOrder) {
  GgufWriter w;
  const std::vector<std::string> keys = {"z", "a", "m.n", "general.name"};
  for (const auto& k : keys) w.set(k, uint8_t{1});
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->metadata().size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(f->metadata()[i].key, keys[i]);
}

TEST(Reader, AccessorsNameTheKeyAndTypes) {
  GgufWriter w;
  w.set("llama.block_count", std::string("two"));
  w.set("neg", int32_t{-3});
  w.set("small", uint16_t{12});
  w.set("list", make_array(std::vector<float>{1.0f}));
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok());

  auto wrong = f->get<uint32_t>("llama.block_count");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "t.gguf: key 'llama.block_count' has type string, expected u32");

  auto missing = f->get<float>("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "t.gguf: key 'nope' not found");

  auto absent = f->get_optional<float>("nope");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  EXPECT_FALSE(f->get_optional<float>("neg").ok());

  EXPECT_EQ(*f->get_uint("small"), 12u);
  auto negative = f->get_uint("neg");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "t.gguf: key 'neg' is -3, expected a non-negative integer");
  EXPECT_FALSE(f->get_uint("list").ok());

  auto elems = f->get_array("list", ValueType::String);
  ASSERT_FALSE(elems.ok());
  EXPECT_EQ(elems.error().message,
            "t.gguf: key 'list' is an array of f32, expected an array of string");
  auto not_array = f->get_array("small", ValueType::U16);
  ASSERT_FALSE(not_array.ok());
  EXPECT_EQ(not_array.error().message, "t.gguf: key 'small' has type u16, expected array");
}

TEST(Reader, TensorsAreViewsAtTheirAlignedOffsets) {
  for (uint32_t alignment : {1u, 8u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w;
    w.set("general.alignment", alignment);
    std::vector<std::byte> a(12), b(4 * 6);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::byte(i + 1);
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::byte(100 + i);
    w.add_tensor("a", kF32, {3}, a);
    w.add_tensor("blk.0.b", kF32, {2, 3}, b);
    w.add_tensor("q", static_cast<uint32_t>(GgmlType::Q8_0), {64, 2}, std::vector<std::byte>(136));
    const auto bytes = w.bytes();
    auto f = parse(bytes);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->data_offset() % alignment, 0u);
    ASSERT_EQ(f->tensors().size(), 3u);
    const TensorInfo* tb = f->find_tensor("blk.0.b");
    ASSERT_NE(tb, nullptr);
    EXPECT_EQ(tb->n_dims, 2u);
    EXPECT_EQ(tb->shape[0], 2u);
    EXPECT_EQ(tb->shape[1], 3u);
    EXPECT_EQ(tb->shape[2], 1u);
    EXPECT_EQ(tb->n_elements, 6u);
    EXPECT_EQ(tb->n_bytes, 24u);
    EXPECT_EQ(tb->offset % alignment, 0u);
    EXPECT_EQ(tb->data.data(), bytes.data() + f->data_offset() + tb->offset);
    EXPECT_TRUE(std::equal(tb->data.begin(), tb->data.end(), b.begin(), b.end()));
    const TensorInfo* tq = f->find_tensor("q");
    EXPECT_EQ(tq->type.name, "Q8_0");
    EXPECT_EQ(tq->n_bytes, 4u * 34u);  // two blocks of 32 per row, 2 rows
    EXPECT_EQ(f->find_tensor("missing"), nullptr);
  }
}

TEST(Reader, VersionTwoIsRead) {
  GgufWriter w;
  w.set_version(2);
  w.set("general.architecture", std::string("llama"));
  w.add_tensor("t", kF32, {1}, std::vector<std::byte>(4));
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->version(), 2u);
}

TEST(Reader, FileWithoutTensorsMayEndAfterMetadata) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  const auto bytes = w.bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_LE(f->data_offset(), f->file_size());
}

TEST(Reader, EveryValidTensorTypeIsAccepted) {
  // Types the engine has no kernels for are still valid tensors (inspect lists them).
  for (uint32_t id = 0; id < kGgmlTypeIdEnd; ++id) {
    const std::optional<TypeTraits> t = type_traits(id);
    if (!t) continue;
    GgufWriter w;
    w.add_tensor("t", id, {t->block_size, 3}, std::vector<std::byte>(3 * t->block_bytes));
    const auto bytes = w.bytes();
    auto f = parse(bytes);
    ASSERT_TRUE(f.ok()) << t->name << ": " << f.error().message;
    EXPECT_EQ(f->tensors()[0].type.type, t->type);
    EXPECT_EQ(f->tensors()[0].n_bytes, 3u * t->block_bytes);
  }
}

TEST(Reader, WriteAndOpenAFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("quip-reader-" + std::to_string(::getpid()) + ".gguf");
  GgufWriter w;
  w.set("general.architecture", std::string("qwen2"));
  w.add_tensor("dense", kF32, {4}, std::vector<std::byte>(16, std::byte{7}));
  w.add_zero_tensor("sparse", kF32, {1024, 1024}, 4u << 20);
  ASSERT_TRUE(w.write(path.string()).ok());
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->file_size(), std::filesystem::file_size(path));
  EXPECT_EQ(*f->get<std::string_view>("general.architecture"), "qwen2");
  EXPECT_EQ(f->find_tensor("dense")->data[15], std::byte{7});
  EXPECT_EQ(f->find_tensor("sparse")->data.back(), std::byte{0});
  // The file written equals the bytes the writer makes in memory.
  EXPECT_EQ(f->file_size(), w.bytes().size());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace quip::gguf
