// The saved merge tables: a second load reads the table back, and a
// truncated, corrupt or foreign file never changes a result: it is removed
// and the table rebuilt.
#include "tokenizer/merge_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gguf/reader.h"
#include "support/shared.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer {
namespace {

namespace fs = std::filesystem;

class MergeCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("quip-merge-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static gguf::GgufFile open(const char* vocab) {
    auto f = gguf::GgufFile::open((testing::shared_dir() / "vocab" / vocab).string());
    EXPECT_TRUE(f.ok()) << f.error().message;
    return std::move(*f);
  }

  // Loads with the cache folder; returns whether the merges came from it.
  bool load_and_check(const gguf::GgufFile& f, const Tokenizer& reference) {
    auto t = Tokenizer::load(f, {.cache_dir = dir_});
    EXPECT_TRUE(t.ok()) << t.error().message;
    for (const std::string& text : texts()) {
      EXPECT_EQ(t->encode(text), reference.encode(text)) << text.substr(0, 40);
    }
    return t->vocab().merges_from_cache();
  }

  static const std::vector<std::string>& texts() {
    static const std::vector<std::string> t = [] {
      std::vector<std::string> v = {"Hello world", " this is 🦙.cpp", "3333333",
                                    "нещо на Български"};
      const std::string book =
          testing::read_file(testing::shared_dir() / "text" / "war-and-peace.txt");
      v.push_back(book.substr(100000, 20000));
      return v;
    }();
    return t;
  }

  fs::path cache_file(const gguf::GgufFile& f) const {
    return merge_cache_path(dir_, merge_cache_key(f.metadata_bytes()));
  }

  fs::path dir_;
};

TEST_F(MergeCache, SecondLoadReadsTheSavedTable) {
  QUIP_REQUIRE_SHARED();
  const gguf::GgufFile f = open("ggml-vocab-llama-bpe.gguf");
  auto reference = Tokenizer::load(f);
  ASSERT_TRUE(reference.ok());
  EXPECT_FALSE(load_and_check(f, *reference));
  EXPECT_TRUE(fs::exists(cache_file(f)));
  EXPECT_TRUE(load_and_check(f, *reference));
}

TEST_F(MergeCache, BrokenFilesAreReplaced) {
  QUIP_REQUIRE_SHARED();
  const gguf::GgufFile f = open("ggml-vocab-gpt-2.gguf");
  auto reference = Tokenizer::load(f);
  ASSERT_TRUE(reference.ok());
  ASSERT_FALSE(load_and_check(f, *reference));
  const fs::path file = cache_file(f);
  const uintmax_t size = fs::file_size(file);

  const auto corrupt = [&](uintmax_t at) {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    io.get(c);
    io.seekp(static_cast<std::streamoff>(at));
    io.put(static_cast<char>(c ^ 0x5A));
  };
  for (uintmax_t at : {uintmax_t{0}, uintmax_t{20}, uintmax_t{64}, size / 2, size - 1}) {
    SCOPED_TRACE(at);
    corrupt(at);
    EXPECT_FALSE(load_and_check(f, *reference));  // detected, rebuilt
    EXPECT_TRUE(load_and_check(f, *reference));   // and saved anew
  }
  fs::resize_file(file, size - 8);
  EXPECT_FALSE(load_and_check(f, *reference));
  EXPECT_TRUE(load_and_check(f, *reference));
  fs::resize_file(file, 0);
  EXPECT_FALSE(load_and_check(f, *reference));
  EXPECT_TRUE(load_and_check(f, *reference));
}

TEST_F(MergeCache, AnotherVocabularysTableIsNotUsed) {
  QUIP_REQUIRE_SHARED();
  const gguf::GgufFile gpt2 = open("ggml-vocab-gpt-2.gguf");
  const gguf::GgufFile starcoder = open("ggml-vocab-starcoder.gguf");
  auto reference = Tokenizer::load(starcoder);
  ASSERT_TRUE(reference.ok());
  ASSERT_TRUE(Tokenizer::load(gpt2, {.cache_dir = dir_}).ok());
  fs::copy_file(cache_file(gpt2), cache_file(starcoder));  // swapped in under the other's name
  EXPECT_FALSE(load_and_check(starcoder, *reference));
  EXPECT_TRUE(load_and_check(starcoder, *reference));
}

TEST_F(MergeCache, UnwritableFolderOnlyCostsTime) {
  QUIP_REQUIRE_SHARED();
  const gguf::GgufFile f = open("ggml-vocab-gpt-2.gguf");
  auto reference = Tokenizer::load(f);
  ASSERT_TRUE(reference.ok());
  std::ofstream(dir_.string()).put('x');  // a file where the folder should be
  EXPECT_FALSE(load_and_check(f, *reference));
  EXPECT_FALSE(load_and_check(f, *reference));
  fs::remove(dir_);
}

}  // namespace
}  // namespace quip::tokenizer
