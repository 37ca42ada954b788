// What Model::bind refuses: keys that change the computation in ways quip
// does not implement are errors naming the key, never silently ignored.
#include "engine/model.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace quip::engine {
namespace {

// A one-layer llama (n_embd 64, 4 heads, 2 key/value heads) with zero
// weights, its metadata extended by `extra`.
std::vector<std::byte> tiny_llama(const std::function<void(gguf::GgufWriter&)>& extra) {
  gguf::GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("llama.embedding_length", uint32_t{64});
  w.set("llama.block_count", uint32_t{1});
  w.set("llama.feed_forward_length", uint32_t{128});
  w.set("llama.attention.head_count", uint32_t{4});
  w.set("llama.attention.head_count_kv", uint32_t{2});
  w.set("llama.context_length", uint32_t{256});
  extra(w);
  const auto zeros = [&](const char* name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    w.add_zero_tensor(name, /*F32*/ 0, shape, n * 4);
  };
  zeros("token_embd.weight", {64, 32});
  zeros("output_norm.weight", {64});
  zeros("blk.0.attn_norm.weight", {64});
  zeros("blk.0.attn_q.weight", {64, 64});
  zeros("blk.0.attn_k.weight", {64, 32});
  zeros("blk.0.attn_v.weight", {64, 32});
  zeros("blk.0.attn_output.weight", {64, 64});
  zeros("blk.0.ffn_norm.weight", {64});
  zeros("blk.0.ffn_gate.weight", {64, 128});
  zeros("blk.0.ffn_up.weight", {64, 128});
  zeros("blk.0.ffn_down.weight", {128, 64});
  return w.bytes();
}

// Binds the model; "" when it binds, else the error.
std::string bind_error(const std::function<void(gguf::GgufWriter&)>& extra) {
  const std::vector<std::byte> bytes = tiny_llama(extra);
  auto f = gguf::GgufFile::parse("m.gguf", bytes);
  if (!f) return "parse: " + f.error().message;
  auto m = Model::bind(*f);
  return m ? "" : m.error().message;
}

TEST(ModelBind, BindsWithoutScalingAndWithItsNoOpForms) {
  EXPECT_EQ(bind_error([](gguf::GgufWriter&) {}), "");
  EXPECT_EQ(bind_error(
                [](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", std::string("none")); }),
            "");
  EXPECT_EQ(bind_error([](gguf::GgufWriter& w) {
              w.set("llama.rope.scaling.type", std::string("linear"));
              w.set("llama.rope.scaling.factor", 1.0f);
              w.set("llama.rope.scaling.attn_factor", 1.0f);
            }),
            "");
  // llama.cpp reads a factor of 0 as none.
  EXPECT_EQ(bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", 0.0f); }), "");
  EXPECT_EQ(
      bind_error([](gguf::GgufWriter& w) { w.set("llama.attention.value_length", uint32_t{16}); }),
      "");
}

TEST(ModelBind, RefusesRopeScalingItDoesNotComputeNamingTheKey) {
  const struct {
    std::function<void(gguf::GgufWriter&)> extra;
    std::string key, value;
  } cases[] = {
      {[](gguf::GgufWriter& w) {
         w.set("llama.rope.scaling.type", std::string("yarn"));
         w.set("llama.rope.scaling.factor", 4.0f);
       },
       "llama.rope.scaling.type", "'yarn'"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", std::string("longrope")); },
       "llama.rope.scaling.type", "'longrope'"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", std::string("llama3x")); },
       "llama.rope.scaling.type", "'llama3x'"},
      {[](gguf::GgufWriter& w) {
         w.set("llama.rope.scaling.type", std::string("linear"));
         w.set("llama.rope.scaling.factor", 2.0f);
       },
       "llama.rope.scaling.factor", "2.0"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", 8.0f); },
       "llama.rope.scaling.factor", "8.0"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scale_linear", 2.0f); },
       "llama.rope.scale_linear", "2.0"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.attn_factor", 0.5f); },
       "llama.rope.scaling.attn_factor", "0.5"},
      {[](gguf::GgufWriter& w) { w.set("llama.attention.value_length", uint32_t{8}); },
       "llama.attention.value_length", "8"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    const std::string error = bind_error(c.extra);
    EXPECT_NE(error.find(c.key), std::string::npos) << error;
    EXPECT_NE(error.find(c.value), std::string::npos) << error;
    EXPECT_NE(error.find("not supported"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

// A key of the wrong type is an error too, not a default.
TEST(ModelBind, RopeScalingKeysOfTheWrongTypeAreErrors) {
  EXPECT_NE(bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", 3.0f); }), "");
  EXPECT_NE(
      bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", std::string("2")); }),
      "");
}

}  // namespace
}  // namespace quip::engine
