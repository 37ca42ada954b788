// llama.cpp's Q4_K_M type mix: the layers use_more_bits picks, the mix of
// real shapes (with and without the fallback for rows that are not whole
// super-blocks), and the types of the Q4_K_M files llama.cpp wrote.
#include "gguf/quant_mix.h"

#include <gtest/gtest.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/keys.h"
#include "gguf/reader.h"
#include "support/shared.h"

namespace quip::gguf {
namespace {

std::set<uint32_t> more_bits_layers(uint32_t n_layer) {
  std::set<uint32_t> layers;
  for (uint32_t i = 0; i < n_layer; ++i) {
    if (use_more_bits(i, n_layer)) layers.insert(i);
  }
  return layers;
}

TEST(QuantMix, UseMoreBitsPicksTheEndsAndEveryThirdLayer) {
  // n/8 and 7n/8 in integers; then (i - n/8) % 3 == 2 between them.
  EXPECT_EQ(more_bits_layers(24), (std::set<uint32_t>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23}));
  EXPECT_EQ(more_bits_layers(16), (std::set<uint32_t>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(more_bits_layers(28),
            (std::set<uint32_t>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}));
  EXPECT_EQ(more_bits_layers(2), (std::set<uint32_t>{1}));
}

// Qwen2.5-0.5B: n_embd 896 (not a multiple of 256), n_ff 4864 (= 19 * 256),
// 24 layers, tied output. Only ffn_down, whose rows are n_ff long, stays a
// K-quant; the embedding, tied to the output, falls from Q6_K to Q8_0.
TEST(QuantMix, Qwen2_5_0_5BFallsBackWhereRowsAre896) {
  const auto type = [](const char* name, uint32_t layer, uint64_t n_in, uint32_t n_dims = 2) {
    return q4_k_m_type({name, layer, n_dims, n_in}, 24, /*has_output=*/false);
  };
  EXPECT_EQ(type("token_embd.weight", 0, 896), GgmlType::Q8_0);  // tied: the output's Q6_K
  EXPECT_EQ(type("output_norm.weight", 0, 896, 1), GgmlType::F32);
  for (uint32_t l = 0; l < 24; ++l) {
    SCOPED_TRACE(l);
    const bool more = more_bits_layers(24).contains(l);
    EXPECT_EQ(type("attn_norm.weight", l, 896, 1), GgmlType::F32);
    EXPECT_EQ(type("attn_q.bias", l, 896, 1), GgmlType::F32);
    EXPECT_EQ(type("attn_q.weight", l, 896), GgmlType::Q5_0);
    EXPECT_EQ(type("attn_k.weight", l, 896), GgmlType::Q5_0);
    EXPECT_EQ(type("attn_v.weight", l, 896), more ? GgmlType::Q8_0 : GgmlType::Q5_0);
    EXPECT_EQ(type("attn_output.weight", l, 896), GgmlType::Q5_0);
    EXPECT_EQ(type("ffn_gate.weight", l, 896), GgmlType::Q5_0);
    EXPECT_EQ(type("ffn_up.weight", l, 896), GgmlType::Q5_0);
    EXPECT_EQ(type("ffn_down.weight", l, 4864), more ? GgmlType::Q6_K : GgmlType::Q4_K);
  }
}

// Llama 3.2 1B: n_embd 2048, n_ff 8192, 16 layers, tied: no fallback.
TEST(QuantMix, Llama3_2_1BIsQ4_KWithQ6_KWhereMoreBitsHelp) {
  const auto type = [](const char* name, uint32_t layer, uint64_t n_in) {
    return q4_k_m_type({name, layer, 2, n_in}, 16, /*has_output=*/false);
  };
  EXPECT_EQ(type("token_embd.weight", 0, 2048), GgmlType::Q6_K);
  for (uint32_t l = 0; l < 16; ++l) {
    SCOPED_TRACE(l);
    const GgmlType more = more_bits_layers(16).contains(l) ? GgmlType::Q6_K : GgmlType::Q4_K;
    EXPECT_EQ(type("attn_q.weight", l, 2048), GgmlType::Q4_K);
    EXPECT_EQ(type("attn_k.weight", l, 2048), GgmlType::Q4_K);
    EXPECT_EQ(type("attn_v.weight", l, 2048), more);
    EXPECT_EQ(type("attn_output.weight", l, 2048), GgmlType::Q4_K);
    EXPECT_EQ(type("ffn_gate.weight", l, 2048), GgmlType::Q4_K);
    EXPECT_EQ(type("ffn_up.weight", l, 2048), GgmlType::Q4_K);
    EXPECT_EQ(type("ffn_down.weight", l, 8192), more);
  }
}

TEST(QuantMix, OutputAndEmbeddingDependOnTying) {
  const auto type = [](const char* name, bool has_output) {
    return q4_k_m_type({name, 0, 2, 3584}, 28, has_output);
  };
  EXPECT_EQ(type("output.weight", true), GgmlType::Q6_K);
  EXPECT_EQ(type("token_embd.weight", true), GgmlType::Q4_K);  // untied: an ordinary weight
  EXPECT_EQ(type("token_embd.weight", false), GgmlType::Q6_K);
}

TEST(QuantMix, RowsNotWholeBlocksOf32BecomeF16) {
  EXPECT_EQ(q4_k_m_type({"blk.0.attn_q.weight", 0, 2, 48}, 2, true), GgmlType::F16);
  EXPECT_EQ(q4_k_m_type({"output.weight", 0, 2, 80}, 2, true), GgmlType::F16);
  EXPECT_EQ(q4_k_m_type({"blk.0.attn_q.weight", 0, 2, 96}, 2, true), GgmlType::Q5_0);
  EXPECT_EQ(q4_k_m_type({"output.weight", 0, 2, 96}, 2, true), GgmlType::Q8_0);
}

// llama.cpp's tensor_type_fallback (llama-quant.cpp), which llama-quantize
// applies with --pure too.
TEST(QuantMix, FallbackTypesAreLlamaCpps) {
  const std::pair<GgmlType, GgmlType> expected[] = {
      {GgmlType::IQ4_XS, GgmlType::IQ4_NL}, {GgmlType::Q2_K, GgmlType::Q4_0},
      {GgmlType::Q3_K, GgmlType::Q4_0},     {GgmlType::Q4_K, GgmlType::Q5_0},
      {GgmlType::Q5_K, GgmlType::Q5_1},     {GgmlType::Q6_K, GgmlType::Q8_0},
  };
  for (auto [wanted, smaller] : expected) {
    EXPECT_EQ(fallback_type(wanted, 512), wanted) << traits(wanted).name;
    EXPECT_EQ(fallback_type(wanted, 64), smaller) << traits(wanted).name;
    EXPECT_EQ(fallback_type(wanted, 48), GgmlType::F16) << traits(wanted).name;
  }
  EXPECT_EQ(fallback_type(GgmlType::Q4_1, 64), GgmlType::Q4_1);
  EXPECT_EQ(fallback_type(GgmlType::Q4_1, 48), GgmlType::F16);
  EXPECT_EQ(fallback_type(GgmlType::BF16, 7), GgmlType::BF16);
}

// N of "blk.N.", or 0.
uint32_t layer_of(std::string_view name) {
  uint32_t layer = 0;
  if (name.starts_with("blk.")) std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return layer;
}

// llama.cpp's own Q4_K_M files (n_embd 256, n_ff 768, 2 layers; the llama
// one tied, the qwen2 one not): every tensor has the type q4_k_m_type gives.
TEST(QuantMixSharedModels, MatchesLlamaCppQ4_K_MFiles) {
  QUIP_REQUIRE_SHARED();
  for (const char* name : {"tiny-llama-spm-e256-q4_k_m.gguf", "tiny-qwen2-e256-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    auto f = GgufFile::open((testing::shared_dir() / "models" / name).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto arch = f->get<std::string_view>(keys::kArchitecture);
    ASSERT_TRUE(arch.ok()) << arch.error().message;
    auto n_layer = f->get_uint(keys::arch_key(*arch, keys::kBlockCount));
    ASSERT_TRUE(n_layer.ok()) << n_layer.error().message;
    bool has_output = false;
    for (const TensorInfo& t : f->tensors()) has_output |= t.name == "output.weight";
    size_t k_quants = 0;
    for (const TensorInfo& t : f->tensors()) {
      const GgmlType expected = q4_k_m_type({t.name, layer_of(t.name), t.n_dims, t.shape[0]},
                                            static_cast<uint32_t>(*n_layer), has_output);
      EXPECT_EQ(traits(expected).name, t.type.name) << t.name;
      k_quants += expected == GgmlType::Q4_K || expected == GgmlType::Q6_K;
    }
    EXPECT_GT(k_quants, 10u);
  }
}

// What llama-quantize (build 9749, without --pure) wrote for each tensor of
// quip-synth's F16 files (tests/data/quant_mix/, with how they were made):
// Qwen2.5-0.5B, whose rows of 896 fall back, and Llama 3.2 1B, whose rows
// are whole super-blocks, in every dense file type quip-synth mixes; the
// tiny mixtures of experts in Q4_K_M and MXFP4_MOE.
TEST(QuantMix, EveryMixIsLlamaQuantizesOnRealShapes) {
  const struct {
    const char* shape;
    MixModel model;
    std::vector<const char*> mixes;
  } shapes[] = {{"qwen2.5-0.5b", {24, false, 7}, {"Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"}},
                {"llama-3.2-1b", {16, false, 4}, {"Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"}},
                // 8 experts: llama.cpp's rules for Mixtral-like models too.
                {"tiny-qwen3moe", {2, true, 2, 8}, {"Q4_K_M", "MXFP4_MOE"}},
                {"tiny-gpt-oss", {4, true, 2, 8}, {"Q4_K_M", "MXFP4_MOE"}}};
  for (const auto& shape : shapes) {
    for (const char* mix_name : shape.mixes) {
      const std::optional<FileMix> mix = file_mix_from_name(mix_name);
      ASSERT_TRUE(mix) << mix_name;
      const std::string file = std::string(shape.shape) + "-" + mix_name + ".txt";
      SCOPED_TRACE(file);
      std::istringstream lines(
          testing::read_file(std::filesystem::path(QUIP_TEST_DATA_DIR) / "quant_mix" / file));
      size_t tensors = 0;
      for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string name, type;
        uint64_t n_in = 0, n_matrices = 1;  // the experts, on a 3-D tensor's line
        uint32_t n_dims = 0;
        ASSERT_TRUE(fields >> name >> n_in >> n_dims >> type) << line;
        fields >> n_matrices;
        EXPECT_EQ(
            traits(mix_type(*mix, {name, layer_of(name), n_dims, n_in, n_matrices}, shape.model))
                .name,
            type)
            << name;
        ++tensors;
      }
      EXPECT_GT(tensors, 25u);
    }
  }
}

TEST(QuantMix, FileMixNamesAreLlamaQuantizes) {
  EXPECT_EQ(file_mix_from_name("q4_k_m"), FileMix::Q4_K_M);
  EXPECT_EQ(file_mix_from_name("Q5_K_M"), FileMix::Q5_K_M);
  EXPECT_EQ(file_mix_from_name("iq4_xs"), FileMix::IQ4_XS);
  EXPECT_EQ(file_mix_from_name("MXFP4_MOE"), FileMix::MXFP4_MOE);
  EXPECT_EQ(static_cast<uint32_t>(FileMix::MXFP4_MOE), 38u);  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  EXPECT_EQ(static_cast<uint32_t>(FileMix::Q6_K), 18u);       // LLAMA_FTYPE_MOSTLY_Q6_K
  EXPECT_FALSE(file_mix_from_name("q4_k_s"));
  EXPECT_FALSE(file_mix_from_name("q4_k_m "));
  EXPECT_FALSE(file_mix_from_name(""));
}

}  // namespace
}  // namespace quip::gguf
