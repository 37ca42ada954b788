// RoPE-scaled files (linear and YaRN) of llama, qwen2 and qwen3 against
// llama.cpp. The files are quip-synth's (random weights, fixed seed, the
// same bytes everywhere) with the rope.scaling keys of long-context files;
// tests/data/rope_scaled/reference.json holds llama.cpp's outputs on them
// (tests/data/rope_scaled/README.md says how they were recorded).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/forward.h"
#include "engine/reference_outputs.h"
#include "support/shared.h"

namespace quip::engine {
namespace {

namespace fs = std::filesystem;

const std::string kFolder = std::string(QUIP_TEST_DATA_DIR) + "/rope_scaled";

// Random-weight files answer almost uniformly, so the comparison is held
// to far less than the F32 tolerance of ../shared/README.md: quip computes
// these F32 files as llama.cpp does, within the rounding of the file's six
// decimals (5e-7).
constexpr double kTolerance = 1e-5;

struct Synthesized {
  fs::path path;
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<Model> model;
};

// quip-synth's file of `shape`, with `scaling` ("" for none).
Synthesized synthesize(const std::string& shape, const std::string& scaling) {
  Synthesized s;
  s.path = fs::temp_directory_path() /
           ("quip-rope-" + std::to_string(::getpid()) + "-" + shape + ".gguf");
  const std::string cmd = std::string(QUIP_SYNTH_BINARY) + " " + shape + " " + s.path.string() +
                          (scaling.empty() ? "" : " --rope-scaling " + scaling);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto f = gguf::GgufFile::open(s.path.string());
  EXPECT_TRUE(f.ok()) << f.error().message;
  if (!f.ok()) return s;
  s.file = std::make_unique<gguf::GgufFile>(std::move(*f));
  auto m = Model::bind(*s.file);
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (m.ok()) s.model = std::make_unique<Model>(std::move(*m));
  return s;
}

reference::Comparison compare(const Model& model, const std::string& name) {
  return reference::compare_teacher_forced(
      name,
      [&] {
        ForwardOptions o;
        o.n_threads = 2;
        o.isa = kernels::detected_isa();
        auto fwd = std::make_shared<Forward>(model, o);
        return [fwd](std::span<const int32_t> tokens) { return fwd->eval(tokens); };
      },
      kFolder);
}

std::vector<std::string> cases() {
  const nlohmann::json ref =
      nlohmann::json::parse(testing::read_file(fs::path(kFolder) / "reference.json"));
  std::vector<std::string> names;
  for (const auto& m : ref.at("models")) names.push_back(m.at("model"));
  return names;
}

class RopeScaled : public ::testing::TestWithParam<std::string> {};

TEST_P(RopeScaled, MatchesLlamaCpp) {
  const auto& entry = reference::reference_entry(GetParam(), kFolder);
  const Synthesized s = synthesize(entry.at("shape"), entry.at("rope_scaling"));
  ASSERT_TRUE(s.model);
  const reference::Comparison c = compare(*s.model, GetParam());
  EXPECT_LE(c.worst, kTolerance) << "largest difference at " << c.where;
  EXPECT_EQ(c.argmax_misses, 0u);
  fs::remove(s.path);
}

// The same file without its scaling keys, and a YaRN file read as linear
// scaling by the same factor, miss the reference by far more than the
// tolerance: the cases test the scaling, not only the model.
TEST_P(RopeScaled, IsMissedWithoutTheScalingOrWithAnother) {
  const auto& entry = reference::reference_entry(GetParam(), kFolder);
  const std::string scaling = entry.at("rope_scaling");
  std::vector<std::string> others = {""};
  if (scaling.starts_with("yarn:")) {
    const std::string factor = scaling.substr(5, scaling.find(':', 5) - 5);
    others.push_back("linear:" + factor);
  }
  for (const std::string& other : others) {
    SCOPED_TRACE(other);
    const Synthesized s = synthesize(entry.at("shape"), other);
    ASSERT_TRUE(s.model);
    const double worst = compare(*s.model, GetParam()).worst;
    EXPECT_GT(worst, 100 * kTolerance);
    fs::remove(s.path);
  }
}

INSTANTIATE_TEST_SUITE_P(Synth, RopeScaled, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& ch : name) {
                             if (ch == '-' || ch == ' ' || ch == ':' || ch == '.') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace quip::engine
