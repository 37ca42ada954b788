// Every GGUF file in ../shared opens, and its tensors lie inside the file.
#include <gtest/gtest.h>

#include "gguf/reader.h"
#include "support/shared.h"

namespace quip::gguf {
namespace {

void expect_opens(const std::filesystem::path& path, bool expect_tensors) {
  SCOPED_TRACE(path.string());
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_GT(f->metadata().size(), 0u);
  EXPECT_TRUE(f->find("general.architecture") != nullptr);
  auto tokens = f->get_array("tokenizer.ggml.tokens", ValueType::String);
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_GT((*tokens)->length, 0u);
  if (expect_tensors) {
    EXPECT_GT(f->tensors().size(), 0u);
    for (const TensorInfo& t : f->tensors()) {
      EXPECT_EQ(t.data.size(), t.n_bytes);
      EXPECT_LE(f->data_offset() + t.offset + t.n_bytes, f->file_size());
      EXPECT_EQ(f->find_tensor(t.name), &t);
    }
  }
}

TEST(SharedFiles, EveryModelOpens) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const auto& p : files) expect_opens(p, true);
}

TEST(SharedFiles, EveryVocabularyOpens) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("vocab", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const auto& p : files) expect_opens(p, false);
}

}  // namespace
}  // namespace quip::gguf
