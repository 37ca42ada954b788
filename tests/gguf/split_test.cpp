// A model split across files as llama.cpp's gguf-split writes it opens as
// one model: the first part's metadata, every part's tensors.
#include <gtest/gtest.h>

#include <cstring>

#include "cli/cli_home.h"
#include "cli/fake_stores.h"
#include "gguf/fingerprint.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::gguf {
namespace {

namespace fs = std::filesystem;

OwnedValue owned(const Value& v);

OwnedArray owned_array(const ArrayView& a) {
  OwnedArray out;
  out.elem_type = a.elem_type;
  for (uint64_t i = 0; i < a.length; ++i) {
    switch (a.elem_type) {
      case ValueType::U8: out.items.emplace_back(a.at<uint8_t>(i)); break;
      case ValueType::I8: out.items.emplace_back(a.at<int8_t>(i)); break;
      case ValueType::U16: out.items.emplace_back(a.at<uint16_t>(i)); break;
      case ValueType::I16: out.items.emplace_back(a.at<int16_t>(i)); break;
      case ValueType::U32: out.items.emplace_back(a.at<uint32_t>(i)); break;
      case ValueType::I32: out.items.emplace_back(a.at<int32_t>(i)); break;
      case ValueType::F32: out.items.emplace_back(a.at<float>(i)); break;
      case ValueType::Bool: out.items.emplace_back(a.at<bool>(i)); break;
      case ValueType::U64: out.items.emplace_back(a.at<uint64_t>(i)); break;
      case ValueType::I64: out.items.emplace_back(a.at<int64_t>(i)); break;
      case ValueType::F64: out.items.emplace_back(a.at<double>(i)); break;
      case ValueType::String: out.items.emplace_back(std::string(a.strings[i])); break;
      case ValueType::Array: out.items.emplace_back(owned_array(a.arrays[i])); break;
    }
  }
  return out;
}

OwnedValue owned(const Value& v) {
  return std::visit(
      [](const auto& x) -> OwnedValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ArrayView>) {
          return owned_array(x);
        } else if constexpr (std::is_same_v<T, std::string_view>) {
          return std::string(x);
        } else {
          return x;
        }
      },
      v);
}

std::string part_name(const std::string& prefix, int i, int n) {
  char tail[64];
  std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", i, n);
  return prefix + tail;
}

// Writes `from` as `n` parts PREFIX-0000i-of-0000n.gguf, as gguf-split
// --split-max-tensors does: the metadata in the first part, split.no (u16),
// split.count (u16) and split.tensors.count (i32) in each, the tensors in
// order, shared out evenly. `tensors_count` overrides the count written.
void write_split(const fs::path& from, const std::string& prefix, int n,
                 std::optional<int32_t> tensors_count = std::nullopt) {
  auto f = GgufFile::open(from.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  const size_t total = f->tensors().size();
  for (int i = 0; i < n; ++i) {
    GgufWriter w;
    if (i == 0) {
      for (const KeyValue& kv : f->metadata()) w.set(std::string(kv.key), owned(kv.value));
    }
    w.set("split.no", static_cast<uint16_t>(i));
    w.set("split.count", static_cast<uint16_t>(n));
    w.set("split.tensors.count", tensors_count.value_or(static_cast<int32_t>(total)));
    const size_t begin = total * i / n, end = total * (i + 1) / n;
    for (size_t t = begin; t < end; ++t) {
      const TensorInfo& info = f->tensors()[t];
      w.add_tensor(std::string(info.name), static_cast<uint32_t>(info.type.type),
                   std::vector<uint64_t>(info.shape.begin(), info.shape.begin() + info.n_dims),
                   std::vector<std::byte>(info.data.begin(), info.data.end()));
    }
    ASSERT_TRUE(w.write(part_name(prefix, i + 1, n)).ok());
  }
}

class SplitModel : public ::testing::Test {
 protected:
  void SetUp() override {
    QUIP_REQUIRE_SHARED();
    model_ = quip::testing::shared_dir() / "models" / "tiny-qwen2-e64-q8_0.gguf";
  }
  std::string prefix() const { return (dir_.path() / "tiny-Q8_0").string(); }

  fs::path model_;
  quip::testing::TempDir dir_;
};

TEST_F(SplitModel, OpensAsOneModel) {
  write_split(model_, prefix(), 3);
  auto whole = GgufFile::open(model_.string());
  ASSERT_TRUE(whole.ok());
  auto split = GgufFile::open(part_name(prefix(), 1, 3));
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(split->parts().size(), 2u);
  ASSERT_EQ(split->tensors().size(), whole->tensors().size());
  uint64_t parts_bytes = 0;
  for (int i = 1; i <= 3; ++i) parts_bytes += fs::file_size(part_name(prefix(), i, 3));
  EXPECT_EQ(split->total_size(), parts_bytes);
  for (const TensorInfo& t : whole->tensors()) {
    const TensorInfo* s = split->find_tensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->type.type, t.type.type);
    EXPECT_EQ(s->shape, t.shape);
    ASSERT_EQ(s->data.size(), t.data.size());
    EXPECT_EQ(std::memcmp(s->data.data(), t.data.data(), t.data.size()), 0) << t.name;
  }
  // The fingerprint covers every part: another last part is another model.
  const std::string before = fingerprint(*split);
  auto again = GgufFile::open(part_name(prefix(), 1, 3));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(fingerprint(*again), before);
  // (The last byte of a file's data is one of the samples it hashes.)
  std::string last = quip::testing::read_file(part_name(prefix(), 3, 3));
  last.back() = static_cast<char>(last.back() ^ 1);
  quip::testing::write_bytes(part_name(prefix(), 3, 3), last);
  auto changed = GgufFile::open(part_name(prefix(), 1, 3));
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_NE(fingerprint(*changed), before);
}

TEST_F(SplitModel, BrokenSplitsAreErrors) {
  write_split(model_, prefix(), 3);
  const auto error_of = [](const std::string& path) {
    auto f = GgufFile::open(path);
    return f.ok() ? std::string("opened") : f.error().message;
  };
  EXPECT_NE(error_of(part_name(prefix(), 2, 3))
                .find("part 2 of 3 of a split model: open its "
                      "first part (-00001-of-00003.gguf)"),
            std::string::npos)
      << error_of(part_name(prefix(), 2, 3));

  fs::copy_file(part_name(prefix(), 1, 3), dir_.path() / "renamed.gguf");
  EXPECT_NE(error_of((dir_.path() / "renamed.gguf").string()).find("must be named"),
            std::string::npos);

  fs::remove(part_name(prefix(), 3, 3));
  const std::string missing = error_of(part_name(prefix(), 1, 3));
  EXPECT_NE(missing.find("split part 3"), std::string::npos) << missing;
  EXPECT_NE(missing.find(part_name(prefix(), 3, 3)), std::string::npos) << missing;

  write_split(model_, prefix(), 3, /*tensors_count=*/5);
  EXPECT_NE(error_of(part_name(prefix(), 1, 3)).find("'split.tensors.count' is 5"),
            std::string::npos)
      << error_of(part_name(prefix(), 1, 3));

  // A part of another split in its place.
  write_split(model_, prefix(), 3);
  write_split(model_, (dir_.path() / "four").string(), 4);
  fs::copy_file(part_name((dir_.path() / "four").string(), 2, 4), part_name(prefix(), 2, 3),
                fs::copy_options::overwrite_existing);
  EXPECT_NE(error_of(part_name(prefix(), 1, 3)).find("expected 1 of 3"), std::string::npos)
      << error_of(part_name(prefix(), 1, 3));
}

// Splits written by hand: keys missing or out of range, a tensor twice.
TEST_F(SplitModel, BrokenSplitKeysAreErrors) {
  const auto error_of = [](const std::string& path) {
    auto f = GgufFile::open(path);
    return f.ok() ? std::string("opened") : f.error().message;
  };
  const auto part = [&](std::optional<uint16_t> no, uint32_t count,
                        const std::vector<std::string>& tensors, int index) {
    GgufWriter w;
    w.set("general.architecture", std::string("llama"));
    if (no) w.set("split.no", *no);
    w.set("split.count", count);
    for (const std::string& name : tensors) {
      w.add_tensor(name, 0, {8}, std::vector<std::byte>(32));
    }
    const std::string path = part_name(prefix(), index, static_cast<int>(count));
    EXPECT_TRUE(w.write(path).ok());
    return path;
  };
  EXPECT_NE(error_of(part(std::nullopt, 2, {"a"}, 1)).find("key 'split.no' not found"),
            std::string::npos);
  EXPECT_NE(error_of(part(0, 100000, {"a"}, 1)).find("'split.count' is 100000, expected at most"),
            std::string::npos);
  const std::string first = part(0, 2, {"a", "b"}, 1);
  part(1, 2, {"c", "a"}, 2);
  EXPECT_NE(error_of(first).find("tensor 'a' is in an earlier part"), std::string::npos)
      << error_of(first);
  part(1, 2, {"c"}, 2);
  auto joined = GgufFile::open(first);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_EQ(joined->tensors().size(), 3u);
  // A count of 1 is a whole file, whatever it is called.
  EXPECT_EQ(error_of(part(0, 1, {"a"}, 1)), "opened");
}

class SplitModelCli : public quip::cli::testing_home::QuipHome {};

TEST_F(SplitModelCli, AnswersAsTheWholeFile) {
  QUIP_REQUIRE_SHARED();
  const fs::path model = quip::testing::shared_dir() / "models" / "tiny-qwen2-e64-q8_0.gguf";
  const std::string prefix = (home() / "tiny-Q8_0").string();
  write_split(model, prefix, 3);
  const auto answer = [&](const std::string& m) {
    quip::testing::RunOptions o;
    o.env = {{"QUIP_NO_SERVE", "1"}, {"HOME", (home() / "user").string()},
             {"HF_HUB_CACHE", ""},   {"HUGGINGFACE_HUB_CACHE", ""},
             {"HF_HOME", ""},        {"XDG_CACHE_HOME", ""}};
    return run_ok({"-m", m, "--raw", "--temp", "0", "-n", "12", "Once upon a time"}, o);
  };
  const std::string whole = answer(model.string());
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(answer(part_name(prefix, 1, 3)), whole);

  // In the Hugging Face cache each part is a link to its blob; the parts
  // are found beside the first part's link.
  quip::testing_stores::FakeStores stores(home() / "user");
  for (int i = 1; i <= 3; ++i) {
    stores.hf_download("org", "Tiny-GGUF", "0123456789abcdef0123456789abcdef01234567",
                       fs::path(part_name(prefix, i, 3)).filename().string(),
                       part_name(prefix, i, 3));
  }
  quip::testing::RunOptions o;
  o.env = {{"QUIP_NO_SERVE", "1"},
           {"HOME", (home() / "user").string()},
           {"HF_HUB_CACHE", ""},
           {"HF_HOME", ""},
           {"XDG_CACHE_HOME", ""}};
  EXPECT_EQ(run_ok({"-m", "hf:org/Tiny-GGUF:Q8_0", "--raw", "--temp", "0", "-n", "12",
                    "Once upon a time"},
                   o),
            whole);
}

}  // namespace
}  // namespace quip::gguf
