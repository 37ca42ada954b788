// The trained models of ../shared/real against llama.cpp (real/reference.json,
// the comparison rules of ../shared/README.md): teacher-forced
// log-probabilities, and free-running greedy tokens where the margins allow.
// Every model the json lists is checked, so held-out files of the same kinds
// are tested by adding them there.
#include <gtest/gtest.h>

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

constexpr const char* kFolder = "real";

std::vector<std::string> real_models() {
  const auto json = testing::shared_dir() / kFolder / "reference.json";
  if (testing::shared_dir().empty() || !std::filesystem::exists(json)) return {"missing.gguf"};
  std::vector<std::string> names;
  const nlohmann::json ref = nlohmann::json::parse(testing::read_file(json));
  for (const auto& m : ref.at("models")) {
    names.push_back(m.at("model"));
  }
  return names;
}

class RealModels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (testing::shared_dir().empty()) return;  // the test skips or fails on it
    auto file = gguf::GgufFile::open((testing::shared_dir() / kFolder / GetParam()).string());
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::make_unique<gguf::GgufFile>(std::move(*file));
    auto model = Model::bind(*file_);
    ASSERT_TRUE(model.ok()) << model.error().message;
    model_ = std::make_unique<Model>(std::move(*model));
  }

  std::function<reference::Evaluator()> evaluators() const {
    return [this] {
      ForwardOptions o;
      o.n_threads = 2;
      auto fwd = std::make_shared<Forward>(*model_, o);
      return [fwd](std::span<const int32_t> tokens) { return fwd->eval(tokens); };
    };
  }

  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<Model> model_;
};

TEST_P(RealModels, MatchesLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  const double tol = reference::tolerance_for(*file_);
  const reference::Comparison c =
      reference::compare_teacher_forced(GetParam(), evaluators(), kFolder);
  RecordProperty("max_abs_logprob_error", std::to_string(c.worst));
  EXPECT_LE(c.worst, tol) << "largest difference at " << c.where;
  EXPECT_EQ(c.argmax_misses, 0u);
}

TEST_P(RealModels, GreedyDecodingMatchesLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  if (reference::tolerance_for(*file_) != 0.02) GTEST_SKIP() << "not an exact-greedy format";
  EXPECT_EQ(reference::compare_greedy(GetParam(), evaluators(), kFolder), "");
}

INSTANTIATE_TEST_SUITE_P(Shared, RealModels, ::testing::ValuesIn(real_models()),
                         reference::ModelTestName());

}  // namespace
}  // namespace quip::engine
