// What Model::bind reads and refuses: keys that change the computation are
// read where quip computes them, and otherwise errors naming the key, never
// silently ignored.
#include "engine/model.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace quip::engine {
namespace {

// A one-layer model of `arch` (llama, gemma2, gemma3, glm4 or qwen3vl: n_embd 64, 4
// heads, 2 key/value heads) with zero weights, its metadata extended by
// `extra`; without `counts`, `extra` writes the block, head and FFN counts.
std::vector<std::byte> tiny_model(const std::string& arch,
                                  const std::function<void(gguf::GgufWriter&)>& extra,
                                  bool counts = true) {
  gguf::GgufWriter w;
  w.set("general.architecture", arch);
  w.set(arch + ".embedding_length", uint32_t{64});
  if (counts) {  // else `extra` writes them
    w.set(arch + ".block_count", uint32_t{1});
    w.set(arch + ".feed_forward_length", uint32_t{128});
    w.set(arch + ".attention.head_count", uint32_t{4});
    w.set(arch + ".attention.head_count_kv", uint32_t{2});
  }
  w.set(arch + ".context_length", uint32_t{256});
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
  if (arch == "glm4") {  // one ffn_up holding the gate's rows and the up's
    zeros("blk.0.ffn_up.weight", {64, 256});
  } else {
    zeros("blk.0.ffn_gate.weight", {64, 128});
    zeros("blk.0.ffn_up.weight", {64, 128});
  }
  zeros("blk.0.ffn_down.weight", {128, 64});
  if (arch.starts_with("gemma") || arch == "glm4") {  // the norms of the branch outputs
    zeros("blk.0.post_attention_norm.weight", {64});
    zeros("blk.0.post_ffw_norm.weight", {64});
  }
  if (arch == "gemma3" || arch == "qwen3vl" || arch == "qwen3moe") {
    zeros("blk.0.attn_q_norm.weight", {16});
    zeros("blk.0.attn_k_norm.weight", {16});
  }
  return w.bytes();
}

// Binds the model; its hyper-parameters, or the error.
Result<Hparams> bind_hparams(const std::string& arch,
                             const std::function<void(gguf::GgufWriter&)>& extra,
                             bool counts = true) {
  const std::vector<std::byte> bytes = tiny_model(arch, extra, counts);
  auto f = gguf::GgufFile::parse("m.gguf", bytes);
  if (!f) return Error{"parse: " + f.error().message};
  auto m = Model::bind(*f);
  if (!m) return m.error();
  return m->hparams();
}

// Binds the model; "" when it binds, else the error.
std::string bind_error(const std::function<void(gguf::GgufWriter&)>& extra) {
  auto hp = bind_hparams("llama", extra);
  return hp ? "" : hp.error().message;
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
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", std::string("dynamic")); },
       "llama.rope.scaling.type", "'dynamic'"},
      {[](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", std::string("llama3x")); },
       "llama.rope.scaling.type", "'llama3x'"},
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

// A tensor quip does not read would change the result (llama.cpp refuses
// such files too): it is named, never skipped. Each family reads what its
// llama.cpp loader reads: llama no Q/K norms and no output bias (qwen2's),
// no LongRoPE factors (phi3's), no blocks beyond block_count.
TEST(ModelBind, RefusesTensorsItDoesNotReadNamingThem) {
  for (const auto& [name, shape] :
       {std::pair{"blk.0.attn_q_norm.weight", std::vector<uint64_t>{16}},
        std::pair{"output.bias", std::vector<uint64_t>{32}},
        std::pair{"rope_factors_long.weight", std::vector<uint64_t>{8}},
        std::pair{"blk.1.attn_norm.weight", std::vector<uint64_t>{64}}}) {
    SCOPED_TRACE(name);
    const std::string error = bind_error([&, name = name, shape = shape](gguf::GgufWriter& w) {
      w.add_zero_tensor(name, /*F32*/ 0, shape, shape[0] * 4);
    });
    EXPECT_NE(error.find(std::string("tensor '") + name + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("not supported"), std::string::npos) << error;
  }
  // The same file without the extra tensor binds, and so does one with the
  // biases llama's loader reads.
  EXPECT_EQ(bind_error([](gguf::GgufWriter&) {}), "");
  EXPECT_EQ(bind_error([](gguf::GgufWriter& w) {
              for (const auto& [name, n] :
                   {std::pair{"blk.0.attn_q.bias", 64}, std::pair{"blk.0.attn_output.bias", 64},
                    std::pair{"blk.0.ffn_gate.bias", 128}, std::pair{"blk.0.ffn_up.bias", 128},
                    std::pair{"blk.0.ffn_down.bias", 64}}) {
                w.add_zero_tensor(name, /*F32*/ 0, {uint64_t(n)}, uint64_t(n) * 4);
              }
            }),
            "");
}

// Linear scaling turns every angle by 1 / factor, type none by nothing
// whatever the factor; attn_factor scales cos and sin.
TEST(ModelBind, ReadsLinearRopeScalingAndTheAttentionFactor) {
  const auto rope = [](const std::function<void(gguf::GgufWriter&)>& extra) {
    auto hp = bind_hparams("llama", extra);
    EXPECT_TRUE(hp) << hp.error().message;
    return hp ? hp->rope : RopeFrequencies{};
  };
  EXPECT_EQ(rope([](gguf::GgufWriter&) {}).freq_scale, 1.0f);
  EXPECT_EQ(rope([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", 8.0f); }).freq_scale,
            0.125f);
  EXPECT_EQ(rope([](gguf::GgufWriter& w) {
              w.set("llama.rope.scaling.type", std::string("linear"));
              w.set("llama.rope.scale_linear", 4.0f);
            }).freq_scale,
            0.25f);
  EXPECT_EQ(rope([](gguf::GgufWriter& w) {
              w.set("llama.rope.scaling.type", std::string("none"));
              w.set("llama.rope.scaling.factor", 8.0f);
            }).freq_scale,
            1.0f);
  EXPECT_EQ(rope([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.attn_factor", 0.5f); }).mscale,
            0.5f);
  const std::string negative =
      bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", -2.0f); });
  EXPECT_NE(negative.find("llama.rope.scaling.factor"), std::string::npos) << negative;
}

// YaRN: the scale, the ramp between the pairs whose wavelengths span 32
// and 1 rotations over the original context (for 16 rotated dimensions
// and base 10000 over 32768 positions: 16 ln(32768 / 2 pi b) / 2 ln 10000
// = 4.42 for b = 32 and 7.43 for b = 1, so pairs 4 to 8), and a magnitude
// that llama.cpp divides out again.
TEST(ModelBind, ReadsYarnScaling) {
  auto hp = bind_hparams("llama", [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.type", std::string("yarn"));
    w.set("llama.rope.scaling.factor", 4.0f);
    w.set("llama.rope.scaling.original_context_length", uint32_t{32768});
  });
  ASSERT_TRUE(hp) << hp.error().message;
  EXPECT_EQ(hp->rope.freq_scale, 0.25f);
  EXPECT_EQ(hp->rope.ext_factor, 1.0f);
  EXPECT_EQ(hp->rope.corr_low, 4.0f);
  EXPECT_EQ(hp->rope.corr_high, 8.0f);
  EXPECT_NEAR(hp->rope.mscale, 1.0f, 1e-6);
  // Linear scaling has no ramp.
  auto linear =
      bind_hparams("llama", [](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", 4.0f); });
  ASSERT_TRUE(linear) << linear.error().message;
  EXPECT_EQ(linear->rope.ext_factor, 0.0f);
}

// The Gemmas' sliding windows, rotations, soft caps and scales, as
// llama.cpp's loaders read them, with and without their keys.
// glm4 rotates by sections (multimodal RoPE) when the first two of
// rope.dimension_sections are set: refused by name until quip computes it;
// sections of zeros are plain rotation.
TEST(ModelBind, Glm4RefusesMultimodalRotationSections) {
  const auto sections = [](std::vector<int32_t> values) {
    return bind_hparams("glm4", [values](gguf::GgufWriter& w) {
      w.set("glm4.rope.dimension_sections", gguf::make_array(values));
    });
  };
  ASSERT_TRUE(bind_hparams("glm4", [](gguf::GgufWriter&) {}).ok());
  EXPECT_TRUE(sections({0, 0, 0, 0}).ok());
  const auto refused = sections({8, 12, 12, 0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("glm4.rope.dimension_sections"), std::string::npos)
      << refused.error().message;
  // llama's loader does not read the key, so neither does quip's llama.
  EXPECT_TRUE(
      bind_hparams("llama", [](gguf::GgufWriter& w) {
        w.set("llama.rope.dimension_sections", gguf::make_array(std::vector<int32_t>{8, 12}));
      }).ok());
}

// qwen3vl requires its rotation sections, as llama.cpp's loader: which
// pairs a text token turns as position 0 follows from them.
TEST(ModelBind, Qwen3vlRequiresItsRotationSections) {
  const auto missing = bind_hparams("qwen3vl", [](gguf::GgufWriter&) {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("qwen3vl.rope.dimension_sections"), std::string::npos)
      << missing.error().message;
  const auto read = bind_hparams("qwen3vl", [](gguf::GgufWriter& w) {
    w.set("qwen3vl.rope.dimension_sections", gguf::make_array(std::vector<int32_t>{2, 3, 3, 0}));
  });
  ASSERT_TRUE(read.ok()) << read.error().message;
  // Sectors 0-7 over the 8 pairs of a 16-wide head: t at 0 and 3, h at 1,
  // 4 and 7, w at 2 and 5; sector 6 is in none of them (6 >= 3 * 2).
  EXPECT_EQ(read->pairs_at_origin(), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 0}));
  EXPECT_FALSE(bind_hparams("qwen3vl", [](gguf::GgufWriter& w) {
                 w.set("qwen3vl.rope.dimension_sections",
                       gguf::make_array(std::vector<int32_t>{16, 8, 0, 0}));
               }).ok());  // more than the head
}

// Head and FFN counts may be one per block (llama.cpp's get_key_or_arr).
// The families quip runs build every layer from layer 0's, as llama.cpp's
// loaders for them do: equal values bind, differing ones are refused by
// name, and so is an array of another length.
TEST(ModelBind, ReadsPerLayerCountsOnlyWhereTheyAgree) {
  const auto counts = [](std::vector<uint32_t> n_ff, std::vector<int32_t> n_head_kv,
                         uint32_t blocks = 1) {
    return bind_hparams(
        "llama",
        [=](gguf::GgufWriter& w) {
          w.set("llama.block_count", blocks);
          w.set("llama.feed_forward_length", gguf::make_array(n_ff));
          w.set("llama.attention.head_count", uint32_t{4});
          w.set("llama.attention.head_count_kv", gguf::make_array(n_head_kv));
        },
        /*counts=*/false);
  };
  const auto same = counts({128}, {2});
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->n_ff, 128u);
  EXPECT_EQ(same->n_head_kv, 2u);
  for (const auto& [result, what] :
       {std::pair{counts({128, 128}, {2}), "'llama.feed_forward_length' is not one integer per"},
        std::pair{counts({128, 256}, {2, 2}, 2),
                  "per-layer llama.feed_forward_length (128 in layer 0, 256 in layer 1)"},
        std::pair{counts({128, 128}, {2, 4}, 2),
                  "per-layer llama.attention.head_count_kv (2 in layer 0, 4 in layer 1)"}}) {
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
  }
}

// A mixture of experts needs its counts: both keys, and no more experts
// used per token than there are.
TEST(ModelBind, RefusesBrokenExpertCounts) {
  const auto bind_moe = [](std::optional<uint32_t> count, std::optional<uint32_t> used) {
    return bind_hparams("qwen3moe", [=](gguf::GgufWriter& w) {
      if (count) w.set("qwen3moe.expert_count", *count);
      if (used) w.set("qwen3moe.expert_used_count", *used);
    });
  };
  for (const auto& [result, what] :
       {std::pair{bind_moe(std::nullopt, 2u), "qwen3moe.expert_count"},
        std::pair{bind_moe(4u, std::nullopt), "qwen3moe.expert_used_count"},
        std::pair{bind_moe(4u, 8u), "qwen3moe.expert_used_count 8 must be 1 to"},
        std::pair{bind_moe(4u, 0u), "qwen3moe.expert_used_count 0 must be 1 to"},
        // Counts that agree get as far as the tensors, which this file lacks.
        std::pair{bind_moe(4u, 2u), "blk.0.ffn_gate_inp.weight"}}) {
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
  }
  // Expert groups (DeepSeek-V3's routing), which llama.cpp reads in every
  // family, are refused by name rather than routed without.
  auto grouped = bind_hparams("qwen3moe", [](gguf::GgufWriter& w) {
    w.set("qwen3moe.expert_count", uint32_t{8});
    w.set("qwen3moe.expert_used_count", uint32_t{2});
    w.set("qwen3moe.expert_group_count", uint32_t{4});
  });
  ASSERT_FALSE(grouped.ok());
  EXPECT_NE(grouped.error().message.find("expert groups (qwen3moe.expert_group_count 4)"),
            std::string::npos)
      << grouped.error().message;
}

// deepseek2's keys: latent attention's ranks and widths, which must make
// the cache shape llama.cpp derives from them, and its routing keys; each
// error names the key. Keys that agree get as far as the tensors.
TEST(ModelBind, Deepseek2RefusesBrokenLatentAndExpertKeys) {
  using Overrides = std::map<std::string, gguf::OwnedValue>;
  const auto bind = [](const Overrides& overrides) {
    return bind_hparams(
        "deepseek2",
        [&](gguf::GgufWriter& w) {
          Overrides keys = {{"block_count", uint32_t{1}},
                            {"feed_forward_length", uint32_t{128}},
                            {"attention.head_count", uint32_t{4}},
                            {"attention.head_count_kv", uint32_t{1}},
                            {"expert_count", uint32_t{8}},
                            {"expert_used_count", uint32_t{2}},
                            {"expert_feed_forward_length", uint32_t{32}},
                            {"expert_shared_count", uint32_t{1}},
                            {"expert_gating_func", uint32_t{2}},
                            {"attention.q_lora_rank", uint32_t{32}},
                            {"attention.kv_lora_rank", uint32_t{48}},
                            {"attention.key_length", uint32_t{64}},
                            {"attention.value_length", uint32_t{48}},
                            {"attention.key_length_mla", uint32_t{32}},
                            {"attention.value_length_mla", uint32_t{16}},
                            {"rope.dimension_count", uint32_t{16}}};
          for (const auto& [key, value] : overrides) keys[key] = value;
          for (const auto& [key, value] : keys) {
            // An empty string: the key left out.
            const auto* text = std::get_if<std::string>(&value);
            if (text == nullptr || !text->empty()) w.set("deepseek2." + key, value);
          }
        },
        /*counts=*/false);
  };
  const std::string absent;
  for (const auto& [overrides, what] :
       {std::pair{Overrides{{"attention.kv_lora_rank", absent}},
                  "deepseek2.attention.kv_lora_rank"},
        std::pair{Overrides{{"attention.key_length_mla", absent}},
                  "without deepseek2.attention.key_length_mla (the older attn_kv_b form)"},
        std::pair{Overrides{{"attention.head_count_kv", uint32_t{2}}}, "needs one KV head"},
        std::pair{Overrides{{"attention.key_length", uint32_t{48}}}, "needs one KV head"},
        std::pair{Overrides{{"attention.value_length", uint32_t{64}}}, "needs one KV head"},
        std::pair{Overrides{{"attention.key_length_mla", uint32_t{16}}}, "needs one KV head"},
        std::pair{Overrides{{"expert_gating_func", uint32_t{4}}},
                  "expert gating function 4 (deepseek2.expert_gating_func)"},
        std::pair{Overrides{{"expert_shared_count", absent}}, "deepseek2.expert_shared_count"},
        std::pair{Overrides{{"expert_shared_count", uint32_t{0}}},
                  "deepseek2.expert_shared_count 0"},
        std::pair{Overrides{{"leading_dense_block_count", uint32_t{2}}},
                  "deepseek2.leading_dense_block_count 2 is more than the 1 layers"},
        std::pair{Overrides{{"expert_weights_scale", std::numeric_limits<float>::infinity()}},
                  "deepseek2.expert_weights_scale is not a finite number"},
        std::pair{Overrides{}, "tensor 'blk.0.attn_q_a.weight' not found"}}) {
    const auto result = bind(overrides);
    ASSERT_FALSE(result.ok()) << what;
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
  }
}

// qwen35's Gated DeltaNet keys: each required, the shapes its fused kernel
// computes, and which layers are recurrent (attention.recurrent_layers,
// else all but every full_attention_interval-th, 4 by default), shown by
// the tensor the one layer is then missing first.
TEST(ModelBind, Qwen35ReadsItsDeltaNetKeysAndRefusesBrokenOnes) {
  using Overrides = std::map<std::string, gguf::OwnedValue>;
  const auto bind = [](const Overrides& overrides) {
    return bind_hparams("qwen35", [&](gguf::GgufWriter& w) {
      Overrides keys = {
          {"ssm.conv_kernel", uint32_t{4}},
          {"ssm.inner_size", uint32_t{64}},
          {"ssm.state_size", uint32_t{16}},
          {"ssm.time_step_rank", uint32_t{4}},
          {"ssm.group_count", uint32_t{2}},
          {"full_attention_interval", uint32_t{1}},
          {"rope.dimension_sections", gguf::make_array(std::vector<int32_t>{3, 3, 2, 0})}};
      for (const auto& [key, value] : overrides) keys[key] = value;
      for (const auto& [key, value] : keys) {
        const auto* text = std::get_if<std::string>(&value);  // "": left out
        if (text == nullptr || !text->empty()) w.set("qwen35." + key, value);
      }
    });
  };
  const std::string absent;
  const char* broken = "not supported (value heads a multiple of the key heads";
  for (const auto& [overrides, what] :
       {std::pair{Overrides{{"ssm.state_size", absent}}, "qwen35.ssm.state_size"},
        std::pair{Overrides{{"ssm.group_count", absent}}, "qwen35.ssm.group_count"},
        std::pair{Overrides{{"ssm.time_step_rank", uint32_t{3}}}, broken},
        std::pair{Overrides{{"ssm.inner_size", uint32_t{48}}}, broken},
        std::pair{
            Overrides{{"ssm.state_size", uint32_t{4096}}, {"ssm.inner_size", uint32_t{16384}}},
            broken},
        std::pair{Overrides{{"ssm.conv_kernel", uint32_t{0}}}, broken},
        std::pair{Overrides{{"full_attention_interval", uint32_t{0}}},
                  "qwen35.full_attention_interval must not be 0"},
        std::pair{
            Overrides{{"attention.recurrent_layers", gguf::make_array(std::vector<uint32_t>{1})}},
            "'qwen35.attention.recurrent_layers' is not one bool per block (1)"},
        std::pair{Overrides{{"rope.dimension_sections", absent}}, "qwen35.rope.dimension_sections"},
        // Sections whose sum overflows an int32 (found by fuzz_gguf_reader).
        std::pair{Overrides{{"rope.dimension_sections",
                             gguf::make_array(std::vector<int32_t>{2147483647, 1, 0, 0})}},
                  "qwen35.rope.dimension_sections add up to 2147483648"},
        // Layer 0 recurrent: its delta net's tensors.
        std::pair{Overrides{{"full_attention_interval", absent}},
                  "tensor 'blk.0.attn_qkv.weight' not found"},
        std::pair{
            Overrides{{"attention.recurrent_layers", gguf::make_array(std::vector<bool>{true})}},
            "tensor 'blk.0.attn_qkv.weight' not found"},
        // Layer 0 attention: its queries carry the gate's rows too.
        std::pair{
            Overrides{{"attention.recurrent_layers", gguf::make_array(std::vector<bool>{false})}},
            "tensor 'blk.0.attn_q.weight' has shape 64 x 64, expected 64 x 128"},
        std::pair{Overrides{},
                  "tensor 'blk.0.attn_q.weight' has shape 64 x 64, expected 64 x 128"}}) {
    const auto result = bind(overrides);
    ASSERT_FALSE(result.ok()) << what;
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
  }
}

// gemma4's per-layer shapes: its keys, refused by name where missing or
// inconsistent, before any tensor is read (3 blocks; the tensors are
// tiny_model's one block's, so a file that passes the keys fails on them).
TEST(ModelBind, Gemma4ReadsItsLayerShapesAndRefusesBrokenOnes) {
  using Overrides = std::map<std::string, gguf::OwnedValue>;
  const auto bind = [](const Overrides& overrides) {
    return bind_hparams(
        "gemma4",
        [&](gguf::GgufWriter& w) {
          Overrides keys = {
              {"block_count", uint32_t{3}},
              {"feed_forward_length", gguf::make_array(std::vector<uint32_t>{128, 128, 256})},
              {"attention.head_count", uint32_t{4}},
              {"attention.head_count_kv", gguf::make_array(std::vector<uint32_t>{2, 1, 2})},
              {"attention.sliding_window", uint32_t{8}},
              {"attention.sliding_window_pattern",
               gguf::make_array(std::vector<bool>{true, false, true})},
              {"attention.key_length", uint32_t{32}},
              {"attention.value_length", uint32_t{32}},
              {"attention.key_length_swa", uint32_t{16}},
              {"attention.value_length_swa", uint32_t{16}},
              {"embedding_length_per_layer_input", uint32_t{0}},
              {"attention.shared_kv_layers", uint32_t{1}}};
          for (const auto& [key, value] : overrides) keys[key] = value;
          for (const auto& [key, value] : keys) {
            const auto* text = std::get_if<std::string>(&value);  // "": left out
            if (text == nullptr || !text->empty()) w.set("gemma4." + key, value);
          }
        },
        /*counts=*/false);
  };
  const std::string absent;
  for (const auto& [overrides, what] :
       {std::pair{Overrides{{"attention.sliding_window_pattern", absent}},
                  "'gemma4.attention.sliding_window_pattern' is not one bool per block (3)"},
        std::pair{Overrides{{"attention.sliding_window_pattern",
                             gguf::make_array(std::vector<uint32_t>{1, 0, 1})}},
                  "'gemma4.attention.sliding_window_pattern' is not one bool per block (3)"},
        std::pair{Overrides{{"attention.sliding_window", absent}},
                  "key 'gemma4.attention.sliding_window' not found"},
        std::pair{Overrides{{"attention.key_length_swa", absent}},
                  "key 'gemma4.attention.key_length_swa' not found"},
        std::pair{Overrides{{"embedding_length_per_layer_input", absent}},
                  "key 'gemma4.embedding_length_per_layer_input' not found"},
        std::pair{Overrides{{"attention.value_length_swa", uint32_t{8}}},
                  "gemma4 needs values as wide as keys"},
        std::pair{Overrides{{"attention.value_length", uint32_t{16}}},
                  "value heads of 16 (gemma4.attention.value_length) differ from key heads of 32"},
        std::pair{
            Overrides{{"attention.head_count_kv", gguf::make_array(std::vector<uint32_t>{2, 1})}},
            "'gemma4.attention.head_count_kv' is not one integer per block (3)"},
        std::pair{Overrides{{"attention.head_count_kv",
                             gguf::make_array(std::vector<uint32_t>{2, 3, 2})}},
                  "is not a multiple of head_count_kv"},
        std::pair{Overrides{{"attention.shared_kv_layers", uint32_t{2}}},
                  "leaves fewer than 2 of the 3 layers with keys and values"},
        // Layer 2 (sliding) would read layer 0's cache: of another kind,
        // or with other KV heads.
        std::pair{Overrides{{"attention.sliding_window_pattern",
                             gguf::make_array(std::vector<bool>{false, true, true})}},
                  "layer 2 would read the keys and values of layer 0, which is not of its kind"},
        std::pair{Overrides{{"attention.head_count_kv",
                             gguf::make_array(std::vector<uint32_t>{1, 1, 2})}},
                  "layer 2 would read the keys and values of layer 0, which is not of its kind"},
        // The keys pass: tiny_model's one block lacks gemma4's norms.
        std::pair{Overrides{}, "tensor 'blk.0.attn_q_norm.weight' not found"}}) {
    const auto result = bind(overrides);
    ASSERT_FALSE(result.ok()) << what;
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
  }
}

// llama's layers are a mixture of experts exactly where the file counts
// experts (Mixtral); expert_count 0 is the dense llama.
TEST(ModelBind, LlamaHasExpertsWhereTheFileCountsThem) {
  auto dense =
      bind_hparams("llama", [](gguf::GgufWriter& w) { w.set("llama.expert_count", uint32_t{0}); });
  ASSERT_TRUE(dense.ok()) << dense.error().message;
  EXPECT_EQ(dense->n_expert, 0u);
  auto mixtral = bind_hparams("llama", [](gguf::GgufWriter& w) {
    w.set("llama.expert_count", uint32_t{8});
    w.set("llama.expert_used_count", uint32_t{2});
  });
  ASSERT_FALSE(mixtral.ok());  // its expert tensors, which this dense file lacks
  EXPECT_NE(mixtral.error().message.find("blk.0.ffn_gate_inp.weight"), std::string::npos)
      << mixtral.error().message;
}

TEST(ModelBind, ReadsTheGemmasWindowsSoftCapsAndScales) {
  auto g2 = bind_hparams("gemma2", [](gguf::GgufWriter& w) {
    w.set("gemma2.rope.freq_base", 20000.0f);
    w.set("gemma2.rope.scaling.factor", 2.0f);
  });
  ASSERT_TRUE(g2) << g2.error().message;
  EXPECT_EQ(g2->window, 4096u);  // gemma2's defaults
  EXPECT_EQ(g2->window_pattern, 2u);
  EXPECT_EQ(g2->attn_softcap, 50.0f);
  EXPECT_EQ(g2->final_softcap, 30.0f);
  EXPECT_TRUE(g2->rope_sliding == g2->rope);  // inherited
  EXPECT_EQ(g2->rope.freq_scale, 0.5f);
  EXPECT_EQ(g2->embedding_scale, 8.0f);  // sqrt(64)
  EXPECT_EQ(g2->query_scale, 0.25f);     // 1 / sqrt(16)
  EXPECT_TRUE(g2->slides(0));
  EXPECT_FALSE(g2->slides(1));

  auto g3 = bind_hparams("gemma3", [](gguf::GgufWriter& w) {
    w.set("gemma3.rope.freq_base", 1e6f);
    w.set("gemma3.rope.scaling.factor", 8.0f);
    w.set("gemma3.attention.sliding_window", uint32_t{512});
    w.set("gemma3.attention.sliding_window_pattern", uint32_t{3});
    w.set("gemma3.attn_logit_softcapping", 50.0f);  // gemma3 does not read it
  });
  ASSERT_TRUE(g3) << g3.error().message;
  EXPECT_EQ(g3->window, 512u);
  EXPECT_EQ(g3->attn_softcap, 0.0f);
  EXPECT_EQ(g3->final_softcap, 0.0f);
  EXPECT_EQ(g3->rope.base, 1e6f);
  EXPECT_EQ(g3->rope.freq_scale, 0.125f);
  EXPECT_EQ(g3->rope_sliding.base, 10000.0f);  // gemma3's sliding default, unscaled
  EXPECT_EQ(g3->rope_sliding.freq_scale, 1.0f);
  EXPECT_TRUE(g3->slides(0) && g3->slides(1) && !g3->slides(2) && g3->slides(3));
  EXPECT_TRUE(g3->rope_of(2) == g3->rope);

  // Without a window key gemma3 has none.
  auto plain = bind_hparams("gemma3", [](gguf::GgufWriter&) {});
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->window, 0u);
  EXPECT_FALSE(plain->slides(0));

  // Sliding layers of other head sizes would need per-layer cache widths.
  auto swa_heads = bind_hparams("gemma3", [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window", uint32_t{512});
    w.set("gemma3.attention.key_length_swa", uint32_t{32});
  });
  ASSERT_FALSE(swa_heads);
  EXPECT_NE(swa_heads.error().message.find("gemma3.attention.key_length_swa"), std::string::npos);
  EXPECT_NE(swa_heads.error().message.find("not supported"), std::string::npos);
}

// A key of the wrong type is an error too, not a default.
TEST(ModelBind, RopeScalingKeysOfTheWrongTypeAreErrors) {
  EXPECT_NE(bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", 3.0f); }), "");
  EXPECT_NE(
      bind_error([](gguf::GgufWriter& w) { w.set("llama.rope.scaling.factor", std::string("2")); }),
      "");
}

// The keys of windows, soft caps and YaRN: a wrong type or a value that
// is not a number is an error naming the key, never a default.
TEST(ModelBind, BrokenWindowSoftCapAndYarnKeysAreErrors) {
  const struct {
    std::string arch;
    std::function<void(gguf::GgufWriter&)> extra;
    std::string key;
  } cases[] = {
      {"gemma2", [](gguf::GgufWriter& w) { w.set("gemma2.attention.sliding_window", 16.0f); },
       "gemma2.attention.sliding_window"},
      {"gemma3",
       [](gguf::GgufWriter& w) {
         w.set("gemma3.attention.sliding_window", uint32_t{16});
         w.set("gemma3.attention.sliding_window_pattern", std::string("6"));
       },
       "gemma3.attention.sliding_window_pattern"},
      {"gemma3",
       [](gguf::GgufWriter& w) {
         w.set("gemma3.attention.sliding_window", uint32_t{16});
         w.set("gemma3.rope.freq_base_swa", uint32_t{10000});
       },
       "gemma3.rope.freq_base_swa"},
      {"gemma2", [](gguf::GgufWriter& w) { w.set("gemma2.attn_logit_softcapping", true); },
       "gemma2.attn_logit_softcapping"},
      {"gemma2",
       [](gguf::GgufWriter& w) {
         w.set("gemma2.final_logit_softcapping", std::numeric_limits<float>::infinity());
       },
       "soft-capping"},
      {"llama",
       [](gguf::GgufWriter& w) {
         w.set("llama.rope.scaling.type", std::string("yarn"));
         w.set("llama.rope.scaling.factor", 4.0f);
         w.set("llama.rope.scaling.original_context_length", std::string("4096"));
       },
       "llama.rope.scaling.original_context_length"},
      {"llama",
       [](gguf::GgufWriter& w) {
         w.set("llama.rope.scaling.attn_factor", std::numeric_limits<float>::quiet_NaN());
       },
       "llama.rope.scaling.attn_factor"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    auto hp = bind_hparams(c.arch, c.extra);
    ASSERT_FALSE(hp);
    EXPECT_NE(hp.error().message.find(c.key), std::string::npos) << hp.error().message;
    EXPECT_EQ(hp.error().message.find('\n'), std::string::npos) << hp.error().message;
  }
}

}  // namespace
}  // namespace quip::engine
