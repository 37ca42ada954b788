// `quip inspect --json`, tested through the `quip` binary (QUIP_BINARY).
//
// Expectations come from elsewhere than the code under test: from
// GgufFile::open on the same file (metadata, tensors), from the file names
// and facts documented in ../shared/README.md, and from files this test
// writes with GgufWriter, whose every value is known in advance.
#include "cli/inspect_fixtures.h"

namespace quip::cli {
namespace {

using namespace inspect_fixtures;  // NOLINT: the shared fixtures of these tests

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

}  // namespace
}  // namespace quip::cli
