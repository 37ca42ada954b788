// A catalogue of broken GGUF files: each is rejected with one line naming the
// file, what is wrong, the value found and what was expected; none crashes
// (the ASan+UBSan build runs this catalogue too).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "gguf/reader.h"
#include "gguf/test_bytes.h"
#include "gguf/writer.h"

namespace quip::gguf {
namespace {

using testing::Bytes;

constexpr uint32_t kF32 = static_cast<uint32_t>(GgmlType::F32);
constexpr uint32_t kQ4K = static_cast<uint32_t>(GgmlType::Q4_K);
constexpr uint32_t kU8 = static_cast<uint32_t>(ValueType::U8);
constexpr uint32_t kU32 = static_cast<uint32_t>(ValueType::U32);
constexpr uint32_t kU64 = static_cast<uint32_t>(ValueType::U64);
constexpr uint32_t kString = static_cast<uint32_t>(ValueType::String);
constexpr uint32_t kArray = static_cast<uint32_t>(ValueType::Array);
constexpr uint32_t kBool = static_cast<uint32_t>(ValueType::Bool);
constexpr uint64_t kHuge = ~uint64_t{0};  // 2^64 - 1: wraps to 0 when 1 is added

std::vector<std::byte> f32_data(size_t n) {
  return std::vector<std::byte>(n * 4);
}

// A small valid file: two metadata keys and two F32 tensors.
GgufWriter valid_writer() {
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("general.name", std::string("tiny"));
  w.add_tensor("a", kF32, {8}, f32_data(8));
  w.add_tensor("b", kF32, {4, 2}, f32_data(8));
  return w;
}

// A file with one tensor of the given shape and type and `bytes` of data.
std::vector<std::byte> one_tensor(std::vector<uint64_t> shape, uint32_t type, size_t bytes) {
  GgufWriter w;
  w.add_tensor("t", type, std::move(shape), std::vector<std::byte>(bytes));
  return w.bytes();
}

// A file with one metadata entry whose value is `type` followed by `payload`.
std::vector<std::byte> one_value(uint32_t type, const Bytes& payload) {
  GgufWriter w;
  w.set_raw("k", type, payload.b);
  return w.bytes();
}

// Arrays nested `depth` deep around one u8.
Bytes nested_arrays(uint32_t depth) {
  Bytes b;
  for (uint32_t i = 1; i < depth; ++i) b.put<uint32_t>(kArray).put<uint64_t>(1);
  return b.put<uint32_t>(kU8).put<uint64_t>(1).put<uint8_t>(7);
}

struct Case {
  const char* name;
  std::function<std::vector<std::byte>()> make;
  const char* message;  // expected part of the error, after "broken.gguf: "
};

const Case kCases[] = {
    {"Empty", [] { return std::vector<std::byte>(); }, "truncated: the magic needs 4 bytes"},
    {"BadMagic", [] { return Bytes().raw("GGML").put<uint32_t>(3).b; },
     "not a GGUF file: magic is 'GGML', expected 'GGUF'"},
    {"BinaryMagic",
     [] {
       return Bytes()
           .raw(std::string_view("\x7f"
                                 "ELF",
                                 4))
           .b;
     },
     "magic is '\\x7FELF', expected 'GGUF'"},
    {"VersionOne", [] { return Bytes().header(0, 0, 1).b; },
     "unsupported GGUF version 1, expected 2 or 3"},
    {"VersionFour", [] { return Bytes().header(0, 0, 4).b; },
     "unsupported GGUF version 4, expected 2 or 3"},
    {"TruncatedHeader", [] { return Bytes().raw("GGUF").put<uint32_t>(3).put<uint32_t>(0).b; },
     "truncated: the tensor count needs 8 bytes at offset 8, the file has 4 left"},
    {"TensorCountTooLarge", [] { return Bytes().header(uint64_t{1} << 62, 0).b; },
     "tensor count 4611686018427387904 is more than the file can hold (at most 0"},
    {"MetadataCountTooLarge", [] { return Bytes().header(0, kHuge).put<uint64_t>(0).b; },
     "metadata count 18446744073709551615 is more than the file can hold"},
    {"KeyLengthPastEnd", [] { return Bytes().header(0, 1).put<uint64_t>(100).raw("abcdef").b; },
     "the key of metadata entry 0: length 100 runs past the end of the file"},
    {"KeyLengthWraps", [] { return Bytes().header(0, 1).put<uint64_t>(kHuge).raw("abcdefgh").b; },
     "length 18446744073709551615 runs past the end of the file"},
    {"EmptyKey", [] { return Bytes().header(0, 1).str("").put<uint32_t>(kU8).put<uint8_t>(1).b; },
     "metadata entry 0: empty key"},
    {"KeyTooLong",
     [] {
       return Bytes()
           .header(0, 1)
           .str(std::string(65536, 'k'))
           .put<uint32_t>(kU8)
           .put<uint8_t>(1)
           .b;
     },
     "metadata entry 0: key is 65536 bytes long, expected at most 65535"},
    {"DuplicateKey",
     [] {
       GgufWriter w;
       w.set("general.name", std::string("a"));
       w.set("general.name", std::string("b"));
       return w.bytes();
     },
     "duplicate key 'general.name' (metadata entries 0 and 1)"},
    {"UnknownValueType", [] { return one_value(13, Bytes().put<uint8_t>(0)); },
     "key 'k': unknown value type 13, expected 0 to 12"},
    {"UnknownValueTypeMax", [] { return one_value(0xFFFFFFFFu, Bytes().put<uint8_t>(0)); },
     "key 'k': unknown value type 4294967295, expected 0 to 12"},
    {"TruncatedValue", [] { return one_value(kU64, Bytes().put<uint32_t>(1)); },
     "truncated: key 'k' needs 8 bytes"},
    {"BoolOutOfRange", [] { return one_value(kBool, Bytes().put<uint8_t>(2)); },
     "key 'k': bool value 2, expected 0 or 1"},
    {"StringLengthWraps", [] { return one_value(kString, Bytes().put<uint64_t>(kHuge)); },
     "key 'k': length 18446744073709551615 runs past the end of the file"},
    {"ArrayLengthPastEnd",
     [] { return one_value(kArray, Bytes().put<uint32_t>(kU32).put<uint64_t>(uint64_t{1} << 61)); },
     "key 'k': array of 2305843009213693952 u32 elements runs past the end of the file"},
    {"ArrayByteSizeOverflows",
     [] { return one_value(kArray, Bytes().put<uint32_t>(kU64).put<uint64_t>(kHuge / 4)); },
     "key 'k': array of 4611686018427387903 u64 elements runs past the end of the file"},
    {"StringArrayElementPastEnd",
     [] {
       return one_value(
           kArray, Bytes().put<uint32_t>(kString).put<uint64_t>(2).str("ok").put<uint64_t>(kHuge));
     },
     "key 'k' element 1: length 18446744073709551615 runs past the end"},
    {"ArrayOfUnknownType",
     [] { return one_value(kArray, Bytes().put<uint32_t>(99).put<uint64_t>(1)); },
     "the elements of key 'k': unknown value type 99, expected 0 to 12"},
    {"ArrayOfBadBools",
     [] {
       return one_value(
           kArray, Bytes().put<uint32_t>(kBool).put<uint64_t>(2).put<uint8_t>(1).put<uint8_t>(9));
     },
     "key 'k' element 1: bool value 9, expected 0 or 1"},
    {"ArraysNestedTooDeep", [] { return one_value(kArray, nested_arrays(kMaxArrayNesting + 1)); },
     "arrays nested 9 deep, expected at most 8"},
    {"AlignmentZero",
     [] {
       GgufWriter w = valid_writer();
       w.set("general.alignment", uint32_t{0});
       return w.bytes();
     },
     "key 'general.alignment' is 0, expected a power of two"},
    {"AlignmentNotPowerOfTwo",
     [] {
       GgufWriter w = valid_writer();
       w.set("general.alignment", uint32_t{48});
       return w.bytes();
     },
     "key 'general.alignment' is 48, expected a power of two"},
    {"AlignmentWrongType",
     [] {
       GgufWriter w = valid_writer();
       w.set("general.alignment", uint64_t{32});
       return w.bytes();
     },
     "key 'general.alignment' has type u64, expected u32"},
    {"EmptyTensorName",
     [] {
       GgufWriter w;
       w.add_tensor("", kF32, {1}, f32_data(1));
       return w.bytes();
     },
     "tensor 0: empty name"},
    {"TensorNameTooLong",
     [] {
       GgufWriter w;
       w.add_tensor(std::string(64, 'n'), kF32, {1}, f32_data(1));
       return w.bytes();
     },
     "name is 64 bytes long, expected at most 63"},
    {"DuplicateTensorName",
     [] {
       GgufWriter w;
       w.add_tensor("a", kF32, {1}, f32_data(1));
       w.add_tensor("a", kF32, {1}, f32_data(1));
       return w.bytes();
     },
     "duplicate tensor name 'a' (tensors 0 and 1)"},
    {"FiveDims",
     [] {
       return one_tensor({1, 1, 1, 1, 1}, kF32, 4);
     },
     "tensor 0 't': 5 dimensions, expected 1 to 4"},
    {"ZeroDims", [] { return one_tensor({}, kF32, 4); },
     "tensor 0 't': 0 dimensions, expected 1 to 4"},
    {"ZeroDim",
     [] {
       return one_tensor({4, 0}, kF32, 0);
     },
     "tensor 0 't': dimension 1 is 0, expected at least 1"},
    {"NegativeDim", [] { return one_tensor({kHuge}, kF32, 4); },
     "tensor 0 't': dimension 0 is -1 (as int64), expected at least 1"},
    {"ElementCountOverflows",
     [] {
       return one_tensor({uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 4);
     },
     "element count of shape [4294967296, 4294967296] overflows 63 bits"},
    {"ByteSizeOverflows", [] { return one_tensor({uint64_t{1} << 62}, kF32, 4); },
     "byte size of 4611686018427387904 F32 elements overflows 64 bits"},
    {"InvalidType", [] { return one_tensor({4}, 42, 16); },
     "tensor 0 't': invalid type 42, expected a ggml type id below 40"},
    {"RemovedType", [] { return one_tensor({32}, 4, 20); }, "tensor 0 't': invalid type 4,"},
    {"ShapeNotBlockMultiple", [] { return one_tensor({100}, kQ4K, 144); },
     "first dimension 100 is not a multiple of the Q4_K block size 256"},
    {"MisalignedOffset",
     [] {
       GgufWriter w = valid_writer();
       w.set_tensor_offset(1, 36);
       return w.bytes();
     },
     "tensor 1 'b': data offset 36 is not a multiple of the alignment 32"},
    {"TensorPastEnd",
     [] {
       GgufWriter w = valid_writer();
       w.set_tensor_offset(1, 1 << 20);
       auto b = w.bytes();
       b.resize(b.size() - 1024);
       return b;
     },
     "tensor 'b': data at offset 1048576 of 32 bytes runs past the end of the file"},
    {"TensorOffsetWraps",
     [] {
       GgufWriter w = valid_writer();
       w.set_tensor_offset(1, kHuge - 31);
       auto b = w.bytes();
       b.resize(256);
       return b;
     },
     "tensor 'b': data at offset 18446744073709551584 of 32 bytes runs past the end"},
    {"TensorsOverlap",
     [] {
       GgufWriter w;
       w.add_tensor("a", kF32, {16}, f32_data(16));
       w.add_tensor("b", kF32, {8}, f32_data(8));
       w.set_tensor_offset(1, 32);
       return w.bytes();
     },
     "tensors 'a' and 'b' overlap: the first occupies [0, 64), the second starts at 32"},
    {"TruncatedTensorData",
     [] {
       auto b = valid_writer().bytes();
       b.resize(b.size() - 1);
       return b;
     },
     "tensor 'b': data at offset 32 of 32 bytes runs past the end of the file"},
    {"TruncatedTensorTable",
     [] {
       GgufWriter w;
       w.add_tensor("t", kF32, {1, 1, 1, 1}, f32_data(1));
       auto b = w.bytes();
       b.resize(24 + 8 + 1 + 4 + 8 + 4);  // header, name, n_dims, a dimension and a half
       return b;
     },
     "truncated: dimension 1 of tensor 0 't' needs 8 bytes at offset 45, the file has 4 left"},
    {"DataSectionPastEnd",
     [] {
       GgufWriter w;
       w.add_tensor("t", kF32, {1}, f32_data(1));
       auto b = w.bytes();
       b.resize(24 + 8 + 1 + 4 + 8 + 4 + 8);  // the tensor table, none of the padding
       return b;
     },
     "truncated: the tensor data section starts at offset 64, past the end of the file (size 57)"},
};

class BrokenFile : public ::testing::TestWithParam<Case> {};

TEST_P(BrokenFile, IsRejectedWithOneClearLine) {
  const Case& c = GetParam();
  const std::vector<std::byte> bytes = c.make();
  auto f = GgufFile::parse("broken.gguf", bytes);
  ASSERT_FALSE(f.ok()) << "accepted";
  const std::string& m = f.error().message;
  EXPECT_EQ(m.rfind("broken.gguf: ", 0), 0u) << m;
  EXPECT_NE(m.find(c.message), std::string::npos)
      << "message: " << m << "\nexpected: " << c.message;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BrokenFile, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(BrokenFile, CatalogueIsLarge) {
  EXPECT_GE(std::size(kCases), 30u);
}

TEST(BrokenFile, ValidBaseIsAccepted) {
  // The catalogue's base file is valid: each case above breaks one thing.
  const auto bytes = valid_writer().bytes();
  auto f = GgufFile::parse("valid.gguf", bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->tensors().size(), 2u);
}

// Every proper prefix of a valid file is rejected, never read past.
TEST(BrokenFile, EveryTruncationIsRejected) {
  GgufWriter w = valid_writer();
  w.set("tokens", make_array(std::vector<std::string>{"a", "bc", ""}));
  w.set("nested", [] {
    OwnedArray outer{ValueType::Array, {}};
    outer.items.emplace_back(make_array(std::vector<uint16_t>{1, 2}));
    return outer;
  }());
  const auto bytes = w.bytes();
  ASSERT_TRUE(GgufFile::parse("full.gguf", bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A copy of exactly n bytes, so the sanitizers see any read past the end.
    const std::vector<std::byte> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    auto f = GgufFile::parse("cut.gguf", prefix);
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes accepted";
  }
}

// Each byte of the header, metadata and tensor table set to each of a few
// values: any result is fine but a crash or a read outside the bytes.
TEST(BrokenFile, ByteCorruptionNeverCrashes) {
  const auto bytes = valid_writer().bytes();
  auto good = GgufFile::parse("good.gguf", bytes);
  ASSERT_TRUE(good.ok());
  const size_t head = good->data_offset();
  size_t rejected = 0;
  for (size_t i = 0; i < head; ++i) {
    for (uint8_t v : {0x00, 0x01, 0x7F, 0x80, 0xFF}) {
      auto copy = bytes;
      copy[i] = std::byte{v};
      auto f = GgufFile::parse("flip.gguf", copy);
      if (!f.ok()) {
        ++rejected;
        EXPECT_EQ(f.error().message.find('\n'), std::string::npos);
      }
    }
  }
  EXPECT_GT(rejected, head);  // most corruptions of the structure are caught
}

TEST(BrokenFile, OpenReportsFileErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("quip-broken-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string empty = (dir / "empty.gguf").string();
  std::ofstream(empty).close();

  auto missing = GgufFile::open((dir / "missing.gguf").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("missing.gguf: cannot open: No such file"),
            std::string::npos)
      << missing.error().message;

  auto is_dir = GgufFile::open(dir.string());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_NE(is_dir.error().message.find("is a directory, expected a file"), std::string::npos);

  auto empty_file = GgufFile::open(empty);
  ASSERT_FALSE(empty_file.ok());
  EXPECT_EQ(empty_file.error().message,
            empty + ": truncated: the magic needs 4 bytes at offset 0, the file has 0 left");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace quip::gguf
