#include "gguf/fingerprint.h"

#include <gtest/gtest.h>

#include <set>

#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::gguf {
namespace {

std::string fingerprint_of(const std::filesystem::path& path) {
  auto f = GgufFile::open(path.string());
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? fingerprint(*f) : "";
}

TEST(Fingerprint, StableAndDistinctAcrossTheSharedModels) {
  QUIP_REQUIRE_SHARED();
  std::set<std::string> seen;
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    const std::string fp = fingerprint_of(path);
    EXPECT_EQ(fp.size(), 16u);
    EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos) << fp;
    EXPECT_EQ(fingerprint_of(path), fp) << "not stable: " << path;
    EXPECT_TRUE(seen.insert(fp).second) << "two models share " << fp;
  }
}

// A file differing in one byte of its metadata, or in the first or last byte
// of its tensor data (both sampled), has another fingerprint.
TEST(Fingerprint, ChangesWithMetadataAndData) {
  QUIP_REQUIRE_SHARED();
  const auto source = testing::shared_dir() / "models" / "tiny-llama-spm-e64-q8_0.gguf";
  const std::string bytes = testing::read_file(source);
  auto original = GgufFile::open(source.string());
  ASSERT_TRUE(original.ok());
  const std::string fp = fingerprint(*original);
  const size_t data_offset = original->data_offset();
  testing::TempDir dir;
  for (size_t at : {size_t{40}, data_offset, bytes.size() - 1}) {
    std::string changed = bytes;
    changed[at] = static_cast<char>(changed[at] ^ 0x01);
    testing::write_bytes(dir / "m.gguf", changed);
    auto f = GgufFile::open((dir / "m.gguf").string());
    if (!f.ok()) continue;  // a metadata change may make the file invalid
    EXPECT_NE(fingerprint(*f), fp) << "byte " << at;
  }
}

}  // namespace
}  // namespace quip::gguf
