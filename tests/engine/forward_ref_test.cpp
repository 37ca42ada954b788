// The reference forward pass against llama.cpp's outputs, by the comparison
// rules of ../shared/README.md: teacher-forced
// log-probabilities of the reference's top 8 within the type's tolerance, and
// the same argmax wherever the reference's margin is clear.
#include "engine/forward_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "support/shared.h"

namespace quip::engine {
namespace {

double tolerance_for(const std::string& file) {
  for (const char* t : {"q2_k", "q3_k"}) {
    if (file.find(t) != std::string::npos) return 0.25;
  }
  for (const char* t : {"f16", "bf16", "q8_0", "llama-2-tiny"}) {
    if (file.find(t) != std::string::npos) return 0.02;
  }
  return 0.1;
}

class ReferenceModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceModels, TeacherForcedLogprobsMatchLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  static const nlohmann::json ref = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  const nlohmann::json* entry = nullptr;
  for (const auto& m : ref.at("models")) {
    if (m.at("model") == GetParam()) entry = &m;
  }
  ASSERT_NE(entry, nullptr);
  auto file = gguf::GgufFile::open((testing::shared_dir() / "models" / GetParam()).string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto model = Model::bind(*file);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const double tol = tolerance_for(GetParam());

  double worst = 0;
  std::string where;
  size_t argmax_misses = 0;
  for (const auto& c : entry->at("completions")) {
    ReferenceForward fwd(*model);
    std::span<const float> logits;
    for (int32_t t : c.at("prompt_tokens")) logits = fwd.step(t);
    const auto& steps = c.at("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      if (i > 0) logits = fwd.step(steps[i - 1].at("id").get<int32_t>());
      const std::vector<double> lp = log_softmax(logits);
      const auto& top = steps[i].at("top");
      for (const auto& pair : top) {
        const auto id = pair[0].get<size_t>();
        const double want = pair[1].get<double>();
        if (std::abs(lp[id] - want) > worst) {
          worst = std::abs(lp[id] - want);
          where = "prompt '" + c.at("text").get<std::string>().substr(0, 20) + "' step " +
                  std::to_string(i) + " token " + std::to_string(id);
        }
      }
      const double gap = top[0][1].get<double>() - top[1][1].get<double>();
      if (gap > 0.05) {
        const auto argmax =
            static_cast<size_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
        if (argmax != top[0][0].get<size_t>()) ++argmax_misses;
      }
    }
  }
  RecordProperty("max_abs_logprob_error", std::to_string(worst));
  EXPECT_LE(worst, tol) << "largest difference at " << where;
  EXPECT_EQ(argmax_misses, 0u);
}

// The models this reference matches llama.cpp on so far. The others need
// more of ggml's exact float order (the dot products of the remaining types,
// the batched prompt paths: repacked Q4_0/IQ4_NL/Q4_K/Q2_K gemm, llamafile
// sgemm for Q8_0/Q5_0/F16/BF16) before they stay within the tolerances; see
// the comments in forward_ref.cpp. (The models are so sensitive that
// llama.cpp's own outputs for the F16 and Q8_0 files of one model differ by
// 0.2 to 0.9 in log-probability.)
std::vector<std::string> reference_models() {
  return {"llama-2-tiny-random.gguf",       "tiny-llama-spm-e64-f16.gguf",
          "tiny-llama-spm-e64-iq4_nl.gguf", "tiny-llama-spm-e64-q8_0.gguf",
          "tiny-llama-spm-e64-q4_1.gguf",   "tiny-llama-spm-e64-q5_1.gguf",
          "tiny-qwen2-e64-f16.gguf"};
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferenceModels, ::testing::ValuesIn(reference_models()),
                         [](const auto& param_info) {
                           std::string n = param_info.param.substr(0, param_info.param.size() - 5);
                           for (char& ch : n) {
                             if (ch == '-' || ch == '.') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace quip::engine
