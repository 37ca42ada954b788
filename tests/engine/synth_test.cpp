// quip-synth's models are real models to every layer: the GGUF reader, the
// tokenizer and the engine load them, and the tiny one runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/forward_ref.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::engine {
namespace {

namespace fs = std::filesystem;

fs::path synth(const std::string& shape, const std::string& type) {
  const fs::path out = fs::temp_directory_path() /
                       ("quip-synth-" + std::to_string(::getpid()) + "-" + shape + ".gguf");
  const std::string cmd = std::string(QUIP_SYNTH_BINARY) + " " + shape + " " + out.string() +
                          (type.empty() ? "" : " --type " + type);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

TEST(Synth, TinyModelLoadsAndRuns) {
  for (const char* type : {"", "f16", "q8_0", "q4_0"}) {
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

TEST(Synth, RealShapesHaveTheirParameterCounts) {
  // Qwen2.5-0.5B has 494,032,768 parameters (tied embeddings).
  const fs::path path = synth("qwen2.5-0.5b", "q4_0");
  auto f = gguf::GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  uint64_t n = 0;
  for (const gguf::TensorInfo& t : f->tensors()) n += t.n_elements;
  EXPECT_EQ(n, 494032768u);
  EXPECT_TRUE(Model::bind(*f).ok());
  fs::remove(path);
}

}  // namespace
}  // namespace quip::engine
