// quip-synth's models are real models to every layer: the GGUF reader, the
// tokenizer and the engine load them, and the tiny one runs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "engine/forward_ref.h"
#include "gguf/reader.h"
#include "support/run_quip.h"
#include "tokenizer/tokenizer.h"

namespace quip::engine {
namespace {

namespace fs = std::filesystem;

fs::path synth(const std::string& shape, const std::string& type) {
  const fs::path out = fs::temp_directory_path() /
                       ("quip-synth-" + std::to_string(::getpid()) + "-" + shape + ".gguf");
  testing::synthesize(
      out, shape,
      type.empty() ? std::vector<std::string>{} : std::vector<std::string>{"--type", type});
  return out;
}

TEST(Synth, TinyModelLoadsAndRuns) {
  for (const char* type : {"", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl",
                           "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs", "q4_k_m"}) {
    SCOPED_TRACE(type);
    const fs::path path = synth("tiny", type);
    auto f = gguf::GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto t = tokenizer::Tokenizer::load(*f);
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto m = Model::bind(*f);
    ASSERT_TRUE(m.ok()) << m.error().message;
    ReferenceForward fwd(*m);
    for (int32_t id : t->encode("Hello")) {
      for (float v : fwd.step(id)) ASSERT_TRUE(std::isfinite(v));
    }
    fs::remove(path);
  }
}

// One type for every matrix, as llama-quantize --pure: where the type's
// blocks fit tiny's rows (64 and 128 values) every matrix has it; the
// 256-element types take llama.cpp's fallback for them. general.file_type
// names the type asked for.
TEST(Synth, TinyInOneTypeHasItOrLlamaCppsFallbackOnEveryMatrix) {
  const struct {
    const char* type;
    const char* matrices;
    uint32_t file_type;
  } cases[] = {{"q4_1", "Q4_1", 3},  {"q5_1", "Q5_1", 9},      {"bf16", "BF16", 32},
               {"q5_k", "Q5_1", 16}, {"iq4_xs", "IQ4_NL", 30}, {"q2_k", "Q4_0", 10}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.type);
    const fs::path path = synth("tiny", c.type);
    auto f = gguf::GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto file_type = f->get<uint32_t>("general.file_type");
    ASSERT_TRUE(file_type.ok()) << file_type.error().message;
    EXPECT_EQ(*file_type, c.file_type);
    for (const gguf::TensorInfo& t : f->tensors()) {
      EXPECT_EQ(std::string(t.type.name), t.n_dims >= 2 ? c.matrices : "F32") << t.name;
    }
    fs::remove(path);
  }
}

// tiny has n_embd 64 and n_ff 128: no row is a whole 256-element
// super-block, so llama.cpp's Q4_K_M falls back everywhere: Q6_K (output,
// attn_v and ffn_down of layer 1, which use_more_bits picks of 2) becomes
// Q8_0, Q4_K becomes Q5_0. The mix without the fallback is tested in
// gguf/quant_mix_test.cpp.
TEST(Synth, TinyQ4_K_MHasLlamaCppsTypesPerTensor) {
  const fs::path path = synth("tiny", "q4_k_m");
  auto f = gguf::GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto file_type = f->get<uint32_t>("general.file_type");
  ASSERT_TRUE(file_type.ok()) << file_type.error().message;
  EXPECT_EQ(*file_type, 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  const std::map<std::string, std::string> expected = {
      {"token_embd.weight", "Q5_0"},        {"output.weight", "Q8_0"},
      {"output_norm.weight", "F32"},        {"blk.0.attn_norm.weight", "F32"},
      {"blk.0.attn_q.weight", "Q5_0"},      {"blk.0.attn_k.weight", "Q5_0"},
      {"blk.0.attn_v.weight", "Q5_0"},      {"blk.0.attn_output.weight", "Q5_0"},
      {"blk.0.ffn_norm.weight", "F32"},     {"blk.0.ffn_gate.weight", "Q5_0"},
      {"blk.0.ffn_up.weight", "Q5_0"},      {"blk.0.ffn_down.weight", "Q5_0"},
      {"blk.1.attn_norm.weight", "F32"},    {"blk.1.attn_q.weight", "Q5_0"},
      {"blk.1.attn_k.weight", "Q5_0"},      {"blk.1.attn_v.weight", "Q8_0"},
      {"blk.1.attn_output.weight", "Q5_0"}, {"blk.1.ffn_norm.weight", "F32"},
      {"blk.1.ffn_gate.weight", "Q5_0"},    {"blk.1.ffn_up.weight", "Q5_0"},
      {"blk.1.ffn_down.weight", "Q8_0"},
  };
  std::map<std::string, std::string> actual;
  for (const gguf::TensorInfo& t : f->tensors()) {
    actual[std::string(t.name)] = std::string(t.type.name);
  }
  EXPECT_EQ(actual, expected);
  fs::remove(path);
}

// Every type quip runs is accepted (with llama.cpp's fallback where its
// blocks do not fit a row); types quip cannot run, operand-only types and
// mixes other than q4_k_m, q5_k_m, q6_k and iq4_xs are refused.
TEST(Synth, RefusesTypesOutsideTheDocumentedSet) {
  for (const char* type :
       {"--type q4_k_s", "--type iq2_xs", "--type q8_k", "--type q8_1", "--type tq1_0",
        "--type nonsense", "--mix q4_0", "--mix q8_0", "--mix q4_k_s", "--mix nonsense"}) {
    const fs::path out =
        fs::temp_directory_path() / ("quip-synth-refused-" + std::to_string(::getpid()));
    const std::string cmd =
        std::string(QUIP_SYNTH_BINARY) + " tiny " + out.string() + " " + type + " 2>/dev/null";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << cmd;
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmd;
    EXPECT_FALSE(fs::exists(out)) << cmd;
  }
}

TEST(Synth, RealShapesHaveTheirParameterCounts) {
  // Qwen2.5-0.5B has 494,032,768 parameters (tied embeddings).
  const fs::path path = synth("qwen2.5-0.5b", "q4_0");
  auto f = gguf::GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  uint64_t n = 0, bytes = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    n += t.n_elements;
    bytes += t.n_bytes;
  }
  EXPECT_EQ(n, 494032768u);
  auto m = Model::bind(*f);
  ASSERT_TRUE(m.ok()) << m.error().message;
  // Tied: the embedding table is the output, read whole for every token.
  EXPECT_EQ(m->weight_bytes_per_token(), bytes);
  fs::remove(path);
}

// Untied (tiny has its own output): a token reads one row of the embedding
// table and every other tensor whole.
TEST(Synth, AStepReadsOneRowOfAnUntiedEmbedding) {
  const fs::path path = synth("tiny", "q8_0");
  auto f = gguf::GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  uint64_t bytes = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    bytes += t.name == "token_embd.weight" ? t.n_bytes / t.shape[1] : t.n_bytes;
  }
  auto m = Model::bind(*f);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->weight_bytes_per_token(), bytes);
  // One multiply-add per element of every matrix a token multiplies by.
  uint64_t layer_products = 0, output_products = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.n_dims < 2 || t.name == "token_embd.weight") continue;
    (t.name == "output.weight" ? output_products : layer_products) += t.n_elements;
  }
  const Model::MatrixWork work = m->matrix_work_per_token();
  EXPECT_EQ(work.layer_products, layer_products);
  EXPECT_EQ(work.output_products, output_products);
  EXPECT_EQ(work.quantized_products, layer_products + output_products);  // all Q8_0
  fs::remove(path);
}

// --mix gives llama.cpp's mix of the file type (gguf/quant_mix_test.cpp
// holds it to llama-quantize's choices), and general.file_type says which.
TEST(Synth, MixesNameTheirFileType) {
  const struct {
    const char* args;
    uint32_t file_type;
  } cases[] = {
      {"--mix q4_k_m", 15}, {"--type q5_k_m", 17}, {"--mix q6_k", 18}, {"--mix iq4_xs", 30}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const fs::path out =
        fs::temp_directory_path() / ("quip-synth-mix-" + std::to_string(::getpid()) + ".gguf");
    const std::string cmd = std::string(QUIP_SYNTH_BINARY) + " tiny " + out.string() + " " + c.args;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto f = gguf::GgufFile::open(out.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto file_type = f->get<uint32_t>("general.file_type");
    ASSERT_TRUE(file_type.ok()) << file_type.error().message;
    EXPECT_EQ(*file_type, c.file_type);
    auto m = Model::bind(*f);
    EXPECT_TRUE(m.ok()) << m.error().message;
    fs::remove(out);
  }
}

}  // namespace
}  // namespace quip::engine
