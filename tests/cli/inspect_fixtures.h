// Helpers shared by the tests of `quip inspect` (inspect_test.cpp,
// inspect_json_test.cpp): running quip, reading its text rows and JSON, and
// the files the tests write.
#pragma once

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

namespace quip::cli::inspect_fixtures {

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

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadData = 3;
inline constexpr uint64_t kMaxJsonArray = 16;  // longer arrays print as {"type", "length"}

// GGUF value type names as `quip inspect --json` spells them, by type number
// (gguf.md's GGUF_TYPE_* in lower case, without the prefix).
inline constexpr const char* kValueTypeNames[] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

// ggml type ids used by the written files (ggml.h, enum ggml_type).
inline constexpr uint32_t kF32 = 0;
inline constexpr uint32_t kF16 = 1;
inline constexpr uint32_t kQ8_0 = 8;

using testing::count_lines;
using testing::describe;
using testing::RunResult;
using testing::split_lines;
using testing::TempDir;

inline RunResult run_quip(const std::vector<std::string>& args, const testing::RunOptions& o = {}) {
  return testing::run_quip(args, o);
}

inline std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The value of text row `label` ("layers          2" gives "2"), or nullopt.
inline std::optional<std::string> text_row(const std::string& text, std::string_view label) {
  for (const std::string& line : split_lines(text)) {
    if (line.size() > label.size() && line.starts_with(label) && line[label.size()] == ' ') {
      const size_t begin = line.find_first_not_of(' ', label.size());
      return begin == std::string::npos ? std::string() : line.substr(begin);
    }
  }
  return std::nullopt;
}

// Whether `s` is valid UTF-8 (nlohmann refuses to dump anything else).
inline bool is_utf8(std::string_view s) {
  try {
    (void)Json(std::string(s)).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

inline OrderedJson inspect_json(const fs::path& path) {
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

// A file holding every GGUF value type, arrays on both sides of the 16-element
// limit, nested arrays and three tensors.
inline GgufWriter every_value_type_writer() {
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

inline void write_bytes(const fs::path& path, const std::vector<std::byte>& bytes) {
  testing::write_bytes(path,
                       std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

inline std::vector<std::byte> small_valid_file() {
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.add_tensor("t", kF32, {4}, std::vector<std::byte>(16, std::byte{0}));
  return w.bytes();
}

}  // namespace quip::cli::inspect_fixtures
