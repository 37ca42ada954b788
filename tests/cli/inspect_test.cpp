// `quip inspect` and the top-level command line, tested through the `quip`
// binary itself (QUIP_BINARY): exit status, stdout and stderr.
//
// Expectations come from elsewhere than the code under test: from
// GgufFile::open on the same file (metadata, tensors), from the file names
// and facts documented in ../shared/README.md, and from files this test
// writes with GgufWriter, whose every value is known in advance.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "support/run_quip.h"
#include "support/shared.h"

extern char** environ;

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using gguf::ArrayView;
using gguf::GgufFile;
using gguf::GgufWriter;
using gguf::make_array;
using gguf::OwnedArray;
using gguf::OwnedValue;
using gguf::TensorInfo;
using gguf::Value;
using gguf::ValueType;
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitBadData = 3;
constexpr uint64_t kMaxJsonArray = 16;  // longer arrays print as {"type", "length"}

// GGUF value type names as `quip inspect --json` spells them, by type number
// (gguf.md's GGUF_TYPE_* in lower case, without the prefix).
constexpr const char* kValueTypeNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};

// ggml type ids used by the written files (ggml.h, enum ggml_type).
constexpr uint32_t kF32 = 0;
constexpr uint32_t kF16 = 1;
constexpr uint32_t kQ8_0 = 8;

using testing::count_lines;
using testing::describe;
using testing::RunResult;
using testing::split_lines;
using testing::TempDir;

RunResult run_quip(const std::vector<std::string>& args, const testing::RunOptions& o = {}) {
  return testing::run_quip(args, o);
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The value of text row `label` ("layers          2" gives "2"), or nullopt.
std::optional<std::string> text_row(const std::string& text, std::string_view label) {
  for (const std::string& line : split_lines(text)) {
    if (line.size() > label.size() && line.starts_with(label) && line[label.size()] == ' ') {
      const size_t begin = line.find_first_not_of(' ', label.size());
      return begin == std::string::npos ? std::string() : line.substr(begin);
    }
  }
  return std::nullopt;
}

// Whether `s` is valid UTF-8 (nlohmann refuses to dump anything else).
bool is_utf8(std::string_view s) {
  try {
    (void)Json(std::string(s)).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

// ---- Comparing inspect's JSON with what the reader sees ---------------------

template <class T>
void expect_integer(T v, const OrderedJson& j, const std::string& where) {
  ASSERT_TRUE(j.is_number_integer()) << where << ": " << j.dump();
  if constexpr (std::is_signed_v<T>) {
    EXPECT_EQ(j.get<int64_t>(), static_cast<int64_t>(v)) << where;
  } else {
    ASSERT_TRUE(j.is_number_unsigned()) << where << ": " << j.dump();
    EXPECT_EQ(j.get<uint64_t>(), static_cast<uint64_t>(v)) << where;
  }
}

template <class T>
void expect_float(T v, const OrderedJson& j, const std::string& where) {
  if (!std::isfinite(v)) return;  // JSON has no NaN or infinity; not asserted here
  ASSERT_TRUE(j.is_number_float()) << where << ": " << j.dump();
  EXPECT_EQ(static_cast<T>(j.get<double>()), v) << where << ": " << j.dump();
}

void expect_string(std::string_view v, const OrderedJson& j, const std::string& where) {
  ASSERT_TRUE(j.is_string()) << where << ": " << j.dump();
  if (is_utf8(v)) {
    EXPECT_EQ(j.get<std::string>(), v) << where;
  }
}

void expect_array(const ArrayView& a, const OrderedJson& j, const std::string& where);

void expect_element(const ArrayView& a, uint64_t i, const OrderedJson& j,
                    const std::string& where) {
  switch (a.elem_type) {
    case ValueType::U8: return expect_integer(a.at<uint8_t>(i), j, where);
    case ValueType::I8: return expect_integer(a.at<int8_t>(i), j, where);
    case ValueType::U16: return expect_integer(a.at<uint16_t>(i), j, where);
    case ValueType::I16: return expect_integer(a.at<int16_t>(i), j, where);
    case ValueType::U32: return expect_integer(a.at<uint32_t>(i), j, where);
    case ValueType::I32: return expect_integer(a.at<int32_t>(i), j, where);
    case ValueType::U64: return expect_integer(a.at<uint64_t>(i), j, where);
    case ValueType::I64: return expect_integer(a.at<int64_t>(i), j, where);
    case ValueType::F32: return expect_float(a.at<float>(i), j, where);
    case ValueType::F64: return expect_float(a.at<double>(i), j, where);
    case ValueType::Bool:
      ASSERT_TRUE(j.is_boolean()) << where;
      EXPECT_EQ(j.get<bool>(), a.at<bool>(i)) << where;
      return;
    case ValueType::String: return expect_string(a.strings[i], j, where);
    case ValueType::Array: return expect_array(a.arrays[i], j, where);
  }
  ADD_FAILURE() << where << ": element type " << static_cast<uint32_t>(a.elem_type);
}

void expect_array(const ArrayView& a, const OrderedJson& j, const std::string& where) {
  if (a.length > kMaxJsonArray) {
    const OrderedJson expected = {{"type", kValueTypeNames[static_cast<uint32_t>(a.elem_type)]},
                                  {"length", a.length}};
    EXPECT_EQ(j, expected) << where;
    return;
  }
  ASSERT_TRUE(j.is_array()) << where << ": " << j.dump();
  ASSERT_EQ(j.size(), a.length) << where;
  for (uint64_t i = 0; i < a.length; ++i) {
    expect_element(a, i, j[i], where + "[" + std::to_string(i) + "]");
  }
}

void expect_value(const Value& v, const OrderedJson& j, const std::string& where) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ArrayView>) {
          expect_array(x, j, where);
        } else if constexpr (std::is_same_v<T, std::string_view>) {
          expect_string(x, j, where);
        } else if constexpr (std::is_same_v<T, bool>) {
          ASSERT_TRUE(j.is_boolean()) << where;
          EXPECT_EQ(j.get<bool>(), x) << where;
        } else if constexpr (std::is_floating_point_v<T>) {
          expect_float(x, j, where);
        } else {
          expect_integer(x, j, where);
        }
      },
      v);
}

// Everything `quip inspect --json` says about `path` that the reader also
// knows, field by field and in file order.
void expect_json_agrees_with_reader(const fs::path& path, const OrderedJson& j) {
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;

  EXPECT_EQ(j.at("file"), path.string());
  EXPECT_EQ(j.at("version"), f->version());
  EXPECT_EQ(j.at("file_size"), fs::file_size(path));
  EXPECT_EQ(j.at("alignment"), f->alignment());
  EXPECT_EQ(j.at("data_offset"), f->data_offset());
  auto arch = f->get<std::string_view>("general.architecture");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  EXPECT_EQ(j.at("architecture"), std::string(*arch));
  EXPECT_EQ(j.at("n_tensors"), f->tensors().size());
  EXPECT_EQ(j.at("n_kv"), f->metadata().size());

  const OrderedJson& metadata = j.at("metadata");
  ASSERT_TRUE(metadata.is_object());
  ASSERT_EQ(metadata.size(), f->metadata().size());
  size_t i = 0;
  for (const auto& [key, value] : metadata.items()) {
    const gguf::KeyValue& kv = f->metadata()[i++];
    ASSERT_EQ(key, kv.key) << "metadata key " << i - 1 << " out of file order";
    expect_value(kv.value, value, "metadata '" + key + "'");
  }

  const OrderedJson& tensors = j.at("tensors");
  ASSERT_TRUE(tensors.is_array());
  ASSERT_EQ(tensors.size(), f->tensors().size());
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;
  std::map<std::string, uint64_t> per_type;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo& info = f->tensors()[t];
    const OrderedJson& jt = tensors[t];
    SCOPED_TRACE("tensor " + std::to_string(t) + " '" + std::string(info.name) + "'");
    EXPECT_EQ(jt.at("name"), std::string(info.name));
    EXPECT_EQ(jt.at("type"), std::string(info.type.name));
    const std::string type = jt.at("type").get<std::string>();
    EXPECT_EQ(type.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), std::string::npos)
        << type << " is not an upper-case type name";
    OrderedJson shape = OrderedJson::array();
    for (uint32_t d = 0; d < info.n_dims; ++d) shape.push_back(info.shape[d]);
    EXPECT_EQ(jt.at("shape"), shape);
    EXPECT_EQ(jt.at("offset"), info.offset);
    n_params += info.n_elements;
    n_bytes += info.n_bytes;
    ++per_type[std::string(info.type.name)];
  }
  const OrderedJson& summary = j.at("summary");
  EXPECT_EQ(summary.at("parameters"), n_params);
  EXPECT_EQ(summary.at("tensor_bytes"), n_bytes);
  EXPECT_EQ(Json(summary.at("tensors_per_type")), Json(per_type));
}

OrderedJson inspect_json(const fs::path& path) {
  const std::vector<std::string> args = {"inspect", "--json", path.string()};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  try {
    return OrderedJson::parse(r.out);
  } catch (const OrderedJson::parse_error& e) {
    ADD_FAILURE() << describe(args, r) << "\n  stdout is not JSON: " << e.what();
    return OrderedJson();
  }
}

// ---- JSON output ------------------------------------------------------------

TEST(InspectJson, EveryModelAgreesWithTheReader) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    const OrderedJson j = inspect_json(path);
    ASSERT_TRUE(j.is_object());
    expect_json_agrees_with_reader(path, j);
  }
}

TEST(InspectJson, VocabularyWithoutTensorsAgreesWithTheReader) {
  QUIP_REQUIRE_SHARED();
  const fs::path path = testing::shared_dir() / "vocab" / "ggml-vocab-llama-bpe.gguf";
  const OrderedJson j = inspect_json(path);
  ASSERT_TRUE(j.is_object());
  expect_json_agrees_with_reader(path, j);
  EXPECT_EQ(j.at("n_tensors"), 0);
  EXPECT_EQ(j.at("tensors"), OrderedJson::array());
  // The Llama 3 tokenizer (README: vocab/): 128256 tokens, pre-tokenizer llama-bpe.
  EXPECT_EQ(j.at("summary").at("n_vocab"), 128256);
  EXPECT_EQ(j.at("summary").at("tokenizer_pre"), "llama-bpe");
}

// The tensor type a shared model is named after: "q4_k_m" has Q4_K tensors.
std::optional<std::string> named_type(const std::string& file_name) {
  static const std::pair<const char*, const char*> kSuffixes[] = {
      {"-f16.gguf", "F16"},     {"-bf16.gguf", "BF16"},     {"-q8_0.gguf", "Q8_0"},
      {"-q4_0.gguf", "Q4_0"},   {"-q4_1.gguf", "Q4_1"},     {"-q5_0.gguf", "Q5_0"},
      {"-q5_1.gguf", "Q5_1"},   {"-iq4_nl.gguf", "IQ4_NL"}, {"-iq4_xs.gguf", "IQ4_XS"},
      {"-q2_k.gguf", "Q2_K"},   {"-q3_k_m.gguf", "Q3_K"},   {"-q4_k_m.gguf", "Q4_K"},
      {"-q5_k_m.gguf", "Q5_K"}, {"-q6_k.gguf", "Q6_K"},
  };
  for (const auto& [suffix, type] : kSuffixes) {
    if (file_name.ends_with(suffix)) return type;
  }
  return std::nullopt;
}

bool has_tensor(const OrderedJson& j, const std::string& name) {
  for (const OrderedJson& t : j.at("tensors")) {
    if (t.at("name") == name) return true;
  }
  return false;
}

// Facts stated by ../shared/README.md for each family of shared models.
TEST(InspectJson, ModelsMatchTheFactsTheirNamesDocument) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  int checked_families = 0;
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    SCOPED_TRACE(name);
    const OrderedJson j = inspect_json(path);
    ASSERT_TRUE(j.is_object());
    const OrderedJson& s = j.at("summary");

    if (name.starts_with("tiny-")) {
      const std::optional<std::string> type = named_type(name);
      ASSERT_TRUE(type.has_value()) << "no tensor type in the file name";
      std::map<std::string, int> types;
      for (const OrderedJson& t : j.at("tensors")) {
        const std::string tname = t.at("name").get<std::string>();
        ++types[t.at("type").get<std::string>()];
        if (tname.ends_with("norm.weight")) {
          EXPECT_EQ(t.at("type"), "F32") << tname;
        }
      }
      EXPECT_GT(types[*type], 0) << "no " << *type << " tensor";
      EXPECT_GT(types["F32"], 0) << "norms stay F32";
    }

    if (name.starts_with("tiny-llama-spm-e64-")) {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "llama");
      EXPECT_EQ(s.at("n_embd"), 64);
      EXPECT_EQ(s.at("n_head"), 4);
      EXPECT_EQ(s.at("n_head_kv"), 2);
      EXPECT_EQ(s.at("n_layer"), 2);
      EXPECT_EQ(s.at("head_dim"), 16);
      EXPECT_EQ(s.at("n_vocab"), 32000);
      EXPECT_EQ(s.at("tokenizer_model"), "llama");
      EXPECT_TRUE(has_tensor(j, "output.weight")) << "e64 has an untied output";
    } else if (name.starts_with("tiny-llama-spm-e256-")) {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "llama");
      EXPECT_EQ(s.at("n_embd"), 256);
      EXPECT_EQ(s.at("n_head"), 8);
      EXPECT_EQ(s.at("n_head_kv"), 2);
      EXPECT_EQ(s.at("head_dim"), 32);
      EXPECT_EQ(s.at("n_vocab"), 32000);
      EXPECT_EQ(s.at("tokenizer_model"), "llama");
      EXPECT_FALSE(has_tensor(j, "output.weight")) << "e256 has a tied output";
    } else if (name.starts_with("tiny-llama3-")) {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "llama");
      EXPECT_EQ(s.at("n_vocab"), 128256);
      EXPECT_EQ(s.at("n_head_kv"), 1);
      EXPECT_EQ(s.at("rope_freq_base"), 500000.0);
      EXPECT_EQ(s.at("tokenizer_pre"), "llama-bpe");
      EXPECT_EQ(s.at("has_chat_template"), true);
      EXPECT_FALSE(has_tensor(j, "output.weight")) << "tied output";
    } else if (name.starts_with("tiny-qwen2-")) {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "qwen2");
      EXPECT_EQ(s.at("tokenizer_pre"), "qwen2");
      EXPECT_EQ(s.at("n_vocab"), 50257 + 2);  // GPT-2 plus <|im_start|>, <|im_end|>
      EXPECT_EQ(s.at("has_chat_template"), true);
      for (const char* bias : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"}) {
        EXPECT_TRUE(has_tensor(j, bias)) << bias;
      }
      EXPECT_EQ(has_tensor(j, "output.weight"), name.starts_with("tiny-qwen2-e256-"))
          << "e64 is tied, e256 untied";
    } else if (name.starts_with("tiny-qwen3-")) {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "qwen3");
      EXPECT_TRUE(has_tensor(j, "blk.0.attn_q_norm.weight"));
      EXPECT_TRUE(has_tensor(j, "blk.0.attn_k_norm.weight"));
      EXPECT_FALSE(has_tensor(j, "blk.0.attn_q.bias"));
      EXPECT_NE(s.at("head_dim").get<uint64_t>(),
                s.at("n_embd").get<uint64_t>() / s.at("n_head").get<uint64_t>())
          << "qwen3's head size is its own key";
      EXPECT_EQ(s.at("has_chat_template"), true);
    } else if (name == "llama-2-tiny-random.gguf") {
      ++checked_families;
      EXPECT_EQ(j.at("architecture"), "llama");
      EXPECT_EQ(s.at("n_embd"), 8);
      EXPECT_EQ(s.at("head_dim"), 4);
    }
  }
  EXPECT_EQ(checked_families, static_cast<int>(files.size())) << "a model of no known family";
}

// A file holding every GGUF value type, arrays on both sides of the 16-element
// limit, nested arrays and three tensors.
GgufWriter every_value_type_writer() {
  GgufWriter w;
  w.set("general.architecture", std::string("testarch"));
  w.set("general.alignment", uint32_t{64});
  w.set("testarch.block_count", uint32_t{3});
  w.set("testarch.embedding_length", uint64_t{48});
  w.set("testarch.attention.head_count", int32_t{6});
  w.set("v.u8", uint8_t{200});
  w.set("v.i8", int8_t{-100});
  w.set("v.u16", uint16_t{60000});
  w.set("v.i16", int16_t{-30000});
  w.set("v.u32", uint32_t{4000000000u});
  w.set("v.i32", int32_t{-2000000000});
  w.set("v.f32", 0.5f);
  w.set("v.f32_neg", -1.25f);
  w.set("v.f32_eps", 1e-5f);  // not exact in binary: printed as the shortest float, 1e-05
  w.set("v.bool_true", true);
  w.set("v.bool_false", false);
  w.set("v.string", std::string("h\xC3\xA9llo w\xC3\xB6rld"));
  w.set("v.string_empty", std::string());
  w.set("v.string_bad_utf8", std::string("a\xFF"
                                         "b"));
  w.set("v.u64", std::numeric_limits<uint64_t>::max());
  w.set("v.i64", std::numeric_limits<int64_t>::min());
  w.set("v.f64", -0.25);
  w.set("v.f64_tenth", 0.1);

  w.set("a.u8", make_array(std::vector<uint8_t>{1, 2, 255}));
  w.set("a.i8", make_array(std::vector<int8_t>{-128, -1, 127}));
  w.set("a.u16", make_array(std::vector<uint16_t>{65535}));
  w.set("a.i16", make_array(std::vector<int16_t>{-2, 2}));
  w.set("a.u32", make_array(std::vector<uint32_t>{}));
  std::vector<int32_t> sixteen(16);
  for (int32_t i = 0; i < 16; ++i) sixteen[i] = i - 8;
  w.set("a.i32_16", make_array(sixteen));
  std::vector<int32_t> seventeen(17, 7);
  w.set("a.i32_17", make_array(seventeen));
  w.set("a.f32", make_array(std::vector<float>{0.5f, -2.0f, 0.0f}));
  w.set("a.bool", make_array(std::vector<bool>{true, false, true}));
  w.set("a.u64", make_array(std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()}));
  w.set("a.i64", make_array(std::vector<int64_t>{-5}));
  w.set("a.f64", make_array(std::vector<double>{0.125, -3.0}));
  w.set("a.string_short", make_array(std::vector<std::string>{"x", "", "y z"}));
  std::vector<std::string> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back("token" + std::to_string(i));
  w.set("a.string_20", make_array(twenty));

  // [[1, 2], [], [17 elements]] of u16.
  OwnedArray nested;
  nested.elem_type = ValueType::Array;
  nested.items.emplace_back(make_array(std::vector<uint16_t>{1, 2}));
  nested.items.emplace_back(make_array(std::vector<uint16_t>{}));
  nested.items.emplace_back(make_array(std::vector<uint16_t>(17, 3)));
  w.set("a.nested", nested);
  // [[["deep"]]]: three levels.
  OwnedArray level2;
  level2.elem_type = ValueType::Array;
  level2.items.emplace_back(make_array(std::vector<std::string>{"deep"}));
  OwnedArray level3;
  level3.elem_type = ValueType::Array;
  level3.items.emplace_back(level2);
  w.set("a.nested3", level3);

  // Sizes from ggml's block layouts: F32 4 bytes, Q8_0 34 bytes per 32, F16 2 bytes.
  std::vector<std::byte> f32_data(4 * 2 * sizeof(float), std::byte{0});
  w.add_tensor("weights.f32", kF32, {4, 2}, std::move(f32_data));
  w.add_zero_tensor("weights.q8_0", kQ8_0, {32, 3}, 3 * 34);
  w.add_zero_tensor("weights.f16", kF16, {8, 1, 2}, 16 * 2);
  return w;
}

TEST(InspectJson, WrittenFileGivesExactlyTheExpectedValues) {
  TempDir dir;
  const fs::path path = dir / "every-type.gguf";
  auto written = every_value_type_writer().write(path.string());
  ASSERT_TRUE(written.ok()) << written.error().message;

  const OrderedJson ordered = inspect_json(path);
  ASSERT_TRUE(ordered.is_object());
  const Json j = Json::parse(ordered.dump());

  EXPECT_EQ(j.at("file"), path.string());
  EXPECT_EQ(j.at("version"), 3);
  EXPECT_EQ(j.at("file_size"), fs::file_size(path));
  EXPECT_EQ(j.at("alignment"), 64);
  EXPECT_EQ(j.at("data_offset").get<uint64_t>() % 64, 0u);
  EXPECT_EQ(j.at("architecture"), "testarch");
  EXPECT_EQ(j.at("n_tensors"), 3);
  EXPECT_EQ(j.at("n_kv"), 39);

  const Json expected_metadata = {
      {"general.architecture", "testarch"},
      {"general.alignment", 64},
      {"testarch.block_count", 3},
      {"testarch.embedding_length", 48},
      {"testarch.attention.head_count", 6},
      {"v.u8", 200},
      {"v.i8", -100},
      {"v.u16", 60000},
      {"v.i16", -30000},
      {"v.u32", 4000000000u},
      {"v.i32", -2000000000},
      {"v.f32", 0.5},
      {"v.f32_neg", -1.25},
      {"v.f32_eps", 1e-5},
      {"v.bool_true", true},
      {"v.bool_false", false},
      {"v.string", "h\xC3\xA9llo w\xC3\xB6rld"},
      {"v.string_empty", ""},
      {"v.string_bad_utf8",
       "a\xEF\xBF\xBD"
       "b"},  // U+FFFD for the invalid byte
      {"v.u64", std::numeric_limits<uint64_t>::max()},
      {"v.i64", std::numeric_limits<int64_t>::min()},
      {"v.f64", -0.25},
      {"v.f64_tenth", 0.1},
      {"a.u8", {1, 2, 255}},
      {"a.i8", {-128, -1, 127}},
      {"a.u16", {65535}},
      {"a.i16", {-2, 2}},
      {"a.u32", Json::array()},
      {"a.i32_16", {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}},
      {"a.i32_17", {{"type", "i32"}, {"length", 17}}},
      {"a.f32", {0.5, -2.0, 0.0}},
      {"a.bool", {true, false, true}},
      {"a.u64", {std::numeric_limits<uint64_t>::max()}},
      {"a.i64", {-5}},
      {"a.f64", {0.125, -3.0}},
      {"a.string_short", {"x", "", "y z"}},
      {"a.string_20", {{"type", "string"}, {"length", 20}}},
      {"a.nested",
       Json::array({Json::array({1, 2}), Json::array(), Json{{"type", "u16"}, {"length", 17}}})},
      {"a.nested3", Json::array({Json::array({Json::array({"deep"})})})},
  };
  const Json& metadata = j.at("metadata");
  for (const auto& [key, value] : expected_metadata.items()) {
    ASSERT_TRUE(metadata.contains(key)) << key;
    EXPECT_EQ(metadata.at(key), value) << key << ": " << metadata.at(key).dump();
  }
  EXPECT_EQ(metadata.size(), expected_metadata.size());

  // Number kinds survive: floats stay floats, big unsigned values stay unsigned.
  EXPECT_TRUE(metadata.at("v.f32").is_number_float());
  EXPECT_TRUE(metadata.at("a.f32")[2].is_number_float());
  EXPECT_TRUE(metadata.at("v.u64").is_number_unsigned());
  EXPECT_EQ(metadata.at("v.u64").get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(metadata.at("v.i64").get<int64_t>(), std::numeric_limits<int64_t>::min());

  // Keys in file order.
  std::vector<std::string> keys;
  for (const auto& [key, value] : ordered.at("metadata").items()) keys.push_back(key);
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys.front(), "general.architecture");
  EXPECT_EQ(keys[5], "v.u8");
  EXPECT_EQ(keys.back(), "a.nested3");

  // Offsets laid out at the 64-byte alignment, in order: 32 bytes, 102 bytes, 32 bytes.
  const Json expected_tensors = {
      {{"name", "weights.f32"}, {"type", "F32"}, {"shape", {4, 2}}, {"offset", 0}},
      {{"name", "weights.q8_0"}, {"type", "Q8_0"}, {"shape", {32, 3}}, {"offset", 64}},
      {{"name", "weights.f16"}, {"type", "F16"}, {"shape", {8, 1, 2}}, {"offset", 192}},
  };
  EXPECT_EQ(j.at("tensors"), expected_tensors) << j.at("tensors").dump();
  EXPECT_EQ(j.at("file_size").get<uint64_t>(), j.at("data_offset").get<uint64_t>() + 192 + 32);

  const Json& s = j.at("summary");
  EXPECT_EQ(s.at("n_layer"), 3);
  EXPECT_EQ(s.at("n_embd"), 48);
  EXPECT_EQ(s.at("n_head"), 6);
  EXPECT_EQ(s.at("n_head_kv"), 6) << "absent head_count_kv means one KV head per head";
  EXPECT_EQ(s.at("head_dim"), 8);
  EXPECT_EQ(s.at("parameters"), 8 + 96 + 16);
  EXPECT_EQ(s.at("tensor_bytes"), 32 + 102 + 32);
  EXPECT_EQ(s.at("tensors_per_type"), (Json{{"F16", 1}, {"F32", 1}, {"Q8_0", 1}}));
  EXPECT_EQ(s.at("n_vocab"), nullptr);
  EXPECT_EQ(s.at("has_chat_template"), false);

  expect_json_agrees_with_reader(path, ordered);
}

// ---- Text output ------------------------------------------------------------

TEST(InspectText, ShowsArchitectureLayersAndHeads) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto arch = f->get<std::string_view>("general.architecture");
    ASSERT_TRUE(arch.ok()) << arch.error().message;
    const std::string a(*arch);
    auto n_layer = f->get_uint(a + ".block_count");
    auto n_head = f->get_uint(a + ".attention.head_count");
    auto n_head_kv = f->get_uint(a + ".attention.head_count_kv");
    ASSERT_TRUE(n_layer.ok() && n_head.ok() && n_head_kv.ok());

    const std::vector<std::string> args = {"inspect", path.string()};
    const RunResult r = run_quip(args);
    ASSERT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(text_row(r.out, "architecture"), a) << r.out;
    EXPECT_EQ(text_row(r.out, "layers"), std::to_string(*n_layer)) << r.out;
    EXPECT_EQ(text_row(r.out, "heads"),
              std::to_string(*n_head) + " (KV heads " + std::to_string(*n_head_kv) + ")")
        << r.out;
    const std::optional<std::string> file_row = text_row(r.out, "file");
    ASSERT_TRUE(file_row.has_value()) << r.out;
    EXPECT_TRUE(file_row->starts_with(path.string() + " (GGUF v3, ")) << *file_row;
    const std::optional<std::string> tensors_row = text_row(r.out, "tensors");
    ASSERT_TRUE(tensors_row.has_value()) << r.out;
    EXPECT_TRUE(tensors_row->starts_with(std::to_string(f->tensors().size()) + ": "))
        << *tensors_row;
    EXPECT_EQ(text_row(r.out, "metadata keys"), std::to_string(f->metadata().size()));
    // Without --tensors, no tensor is listed.
    EXPECT_EQ(r.out.find(std::string(f->tensors().front().name)), std::string::npos) << r.out;
  }
}

// The lines after the summary's blank line, one per tensor:
// NAME TYPE D0 x D1 ... OFFSET.
void expect_tensor_lines(const std::string& out, const GgufFile& f) {
  const size_t blank = out.find("\n\n");
  ASSERT_NE(blank, std::string::npos) << out;
  const std::vector<std::string> lines = split_lines(out.substr(blank + 2));
  ASSERT_EQ(lines.size(), f.tensors().size()) << out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(lines[i]);
    std::vector<std::string> expected = {std::string(t.name), std::string(t.type.name)};
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      if (d > 0) expected.push_back("x");
      expected.push_back(std::to_string(t.shape[d]));
    }
    expected.push_back(std::to_string(t.offset));
    EXPECT_EQ(split_words(lines[i]), expected);
  }
}

TEST(InspectText, TensorsFlagListsOneLinePerTensor) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    const std::vector<std::string> args = {"inspect", path.string(), "--tensors"};
    const RunResult r = run_quip(args);
    ASSERT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    expect_tensor_lines(r.out, *f);
  }
}

TEST(InspectText, WrittenFileShowsItsValues) {
  TempDir dir;
  const fs::path path = dir / "every-type.gguf";
  auto written = every_value_type_writer().write(path.string());
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;

  const std::vector<std::string> args = {"inspect", "--tensors", path.string()};
  const RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(text_row(r.out, "architecture"), "testarch") << r.out;
  EXPECT_EQ(text_row(r.out, "layers"), "3") << r.out;
  EXPECT_EQ(text_row(r.out, "embedding size"), "48") << r.out;
  EXPECT_EQ(text_row(r.out, "heads"), "6 (KV heads 6)") << r.out;
  EXPECT_EQ(text_row(r.out, "head size"), "8") << r.out;
  EXPECT_EQ(text_row(r.out, "metadata keys"), "39") << r.out;
  const std::vector<std::string> tensor_lines = split_lines(r.out.substr(r.out.find("\n\n") + 2));
  ASSERT_EQ(tensor_lines.size(), 3u) << r.out;
  EXPECT_EQ(split_words(tensor_lines[0]),
            (std::vector<std::string>{"weights.f32", "F32", "4", "x", "2", "0"}));
  EXPECT_EQ(split_words(tensor_lines[1]),
            (std::vector<std::string>{"weights.q8_0", "Q8_0", "32", "x", "3", "64"}));
  EXPECT_EQ(split_words(tensor_lines[2]),
            (std::vector<std::string>{"weights.f16", "F16", "8", "x", "1", "x", "2", "192"}));
  expect_tensor_lines(r.out, *f);
}

// ---- Unusable files: exit 3, one line on stderr naming the file -------------

void expect_bad_data(const fs::path& path) {
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {"inspect", path.string()};
    if (json) args.push_back("--json");
    const RunResult r = run_quip(args);
    EXPECT_EQ(r.status, kExitBadData) << describe(args, r);
    EXPECT_EQ(r.out, "") << describe(args, r);
    EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
    EXPECT_TRUE(r.err.ends_with("\n")) << describe(args, r);
    EXPECT_NE(r.err.find(path.string()), std::string::npos) << describe(args, r);
  }
}

void write_bytes(const fs::path& path, const std::vector<std::byte>& bytes) {
  testing::write_bytes(path,
                       std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::vector<std::byte> small_valid_file() {
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.add_tensor("t", kF32, {4}, std::vector<std::byte>(16, std::byte{0}));
  return w.bytes();
}

TEST(InspectErrors, MissingFileExits3) {
  TempDir dir;
  expect_bad_data(dir / "no-such-model.gguf");
}

TEST(InspectErrors, BadMagicExits3) {
  TempDir dir;
  std::vector<std::byte> bytes = small_valid_file();
  bytes[0] = std::byte{'X'};
  write_bytes(dir / "bad-magic.gguf", bytes);
  expect_bad_data(dir / "bad-magic.gguf");
}

TEST(InspectErrors, OtherBrokenFilesExit3) {
  TempDir dir;
  const std::vector<std::byte> valid = small_valid_file();

  write_bytes(dir / "empty.gguf", {});
  expect_bad_data(dir / "empty.gguf");

  write_bytes(dir / "truncated.gguf", std::vector<std::byte>(valid.begin(), valid.begin() + 20));
  expect_bad_data(dir / "truncated.gguf");

  std::vector<std::byte> no_data(valid.begin(), valid.end() - 8);  // the tensor's last 8 bytes
  write_bytes(dir / "short-data.gguf", no_data);
  expect_bad_data(dir / "short-data.gguf");

  std::vector<std::byte> bad_version = valid;
  bad_version[4] = std::byte{99};
  write_bytes(dir / "bad-version.gguf", bad_version);
  expect_bad_data(dir / "bad-version.gguf");

  GgufWriter bad_type;
  bad_type.add_tensor("t", 4, {4}, std::vector<std::byte>(16, std::byte{0}));  // removed Q4_2
  auto written = bad_type.write((dir / "bad-type.gguf").string());
  ASSERT_TRUE(written.ok()) << written.error().message;
  expect_bad_data(dir / "bad-type.gguf");

  fs::create_directories(dir / "a-directory.gguf");
  expect_bad_data(dir / "a-directory.gguf");
}

// The valid file the broken ones start from really is valid.
TEST(InspectErrors, TheUnbrokenFileOpens) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  const std::vector<std::string> args = {"inspect", (dir / "valid.gguf").string()};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
}

// ---- Usage: exit 2 and one line on stderr; --help on stdout, exit 0 ---------

void expect_usage_error(const std::vector<std::string>& args) {
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitUsage) << describe(args, r);
  EXPECT_EQ(r.out, "") << describe(args, r);
  EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
  EXPECT_TRUE(r.err.ends_with("\n")) << describe(args, r);
}

TEST(InspectUsage, UnknownOptionExits2) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  expect_usage_error({"inspect", "--no-such-option", (dir / "valid.gguf").string()});
  expect_usage_error({"inspect", (dir / "valid.gguf").string(), "--jsn"});
}

TEST(InspectUsage, MissingFileArgumentExits2) {
  expect_usage_error({"inspect"});
  expect_usage_error({"inspect", "--json"});
}

TEST(InspectUsage, TwoFilesExit2) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  expect_usage_error({"inspect", (dir / "valid.gguf").string(), (dir / "valid.gguf").string()});
}

TEST(InspectUsage, HelpPrintsUsageOnStdout) {
  const std::vector<std::string> args = {"inspect", "--help"};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tensors"), std::string::npos) << r.out;
}

TEST(InspectCli, UnknownCommandExits2) {
  const std::vector<std::string> args = {"nosuchcommand"};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitUsage) << describe(args, r);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
  EXPECT_NE(r.err.find("nosuchcommand"), std::string::npos) << r.err;
}

TEST(InspectCli, NoCommandExits2) {
  expect_usage_error({});
}

TEST(InspectCli, HelpListsInspect) {
  for (const char* help : {"--help", "-h"}) {
    const std::vector<std::string> args = {help};
    const RunResult r = run_quip(args);
    EXPECT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
  }
}

// ---- Output that cannot be written, values JSON cannot hold -----------------

TEST(InspectOutput, FullDiskIsAFailureWithOneLine) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", (dir / "valid.gguf").string()},
        std::vector<std::string>{"inspect", "--help"}, std::vector<std::string>{"--help"}}) {
    const RunResult r = run_quip(args, {.stdin_from = "/dev/null", .stdout_to = "/dev/full"});
    EXPECT_EQ(r.status, kExitFailure) << describe(args, r);
    EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  }
}

TEST(InspectOutput, PathWithNewlineStaysOnOneLine) {
  TempDir dir;
  const fs::path path = dir / "two\nlines.gguf";
  write_bytes(path, {std::byte{'x'}});
  const std::vector<std::string> args = {"inspect", path.string()};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitBadData) << describe(args, r);
  EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
  EXPECT_NE(r.err.find("two\\x0Alines.gguf"), std::string::npos) << r.err;
}

TEST(InspectOutput, NonFiniteFloatsAreNamedNotNull) {
  TempDir dir;
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("v.nan", std::numeric_limits<float>::quiet_NaN());
  w.set("v.inf", std::numeric_limits<double>::infinity());
  w.set("v.ninf", -std::numeric_limits<float>::infinity());
  w.set("v.list", make_array(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()}));
  ASSERT_TRUE(w.write((dir / "nan.gguf").string()).ok());
  const OrderedJson j = inspect_json(dir / "nan.gguf");
  const OrderedJson& m = j.at("metadata");
  EXPECT_EQ(m.at("v.nan"), "NaN");
  EXPECT_EQ(m.at("v.inf"), "Infinity");
  EXPECT_EQ(m.at("v.ninf"), "-Infinity");
  EXPECT_EQ(m.at("v.list"), OrderedJson::parse(R"([1.0, "Infinity"])"));
}

TEST(InspectOutput, KeysDifferingInInvalidBytesStayDistinct) {
  TempDir dir;
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("k\xff", uint8_t{1});
  w.set("k\xfe", uint8_t{2});
  ASSERT_TRUE(w.write((dir / "keys.gguf").string()).ok());
  const OrderedJson j = inspect_json(dir / "keys.gguf");
  EXPECT_EQ(j.at("n_kv"), 3);
  EXPECT_EQ(j.at("metadata").size(), 3u);
  EXPECT_EQ(j.at("metadata").at("k\\xFF"), 1);
  EXPECT_EQ(j.at("metadata").at("k\\xFE"), 2);
}

}  // namespace
}  // namespace quip::cli
