// The reference forward pass against llama.cpp's outputs, by the comparison
// rules of ../shared/README.md: teacher-forced
// log-probabilities of the reference's top 8 within the type's tolerance, and
// the same argmax wherever the reference's margin is clear.
#include "engine/forward_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/forward.h"
#include "engine/reference_outputs.h"
#include "support/shared.h"

namespace quip::engine {
namespace {

class ReferenceModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceModels, TeacherForcedLogprobsMatchLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  auto file = gguf::GgufFile::open((testing::shared_dir() / "models" / GetParam()).string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto model = Model::bind(*file);
  ASSERT_TRUE(model.ok()) << model.error().message;
  // One token at a time: the reference has no batches.
  const reference::Comparison c = reference::compare_teacher_forced(GetParam(), [&] {
    auto fwd = std::make_shared<ReferenceForward>(*model);
    return [fwd](std::span<const int32_t> tokens) {
      std::span<const float> logits;
      for (int32_t t : tokens) logits = fwd->step(t);
      return logits;
    };
  });
  RecordProperty("max_abs_logprob_error", std::to_string(c.worst));
  EXPECT_LE(c.worst, reference::tolerance_for(GetParam())) << "largest difference at " << c.where;
  EXPECT_EQ(c.argmax_misses, 0u);
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
          "tiny-llama-spm-e64-q4_0.gguf",   "tiny-llama-spm-e64-q5_0.gguf",
          "tiny-qwen2-e64-f16.gguf"};
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferenceModels, ::testing::ValuesIn(reference_models()),
                         reference::ModelTestName());

// The F16 architecture files, whose llama.cpp prompts are batched in an
// order this reference does not follow (F16 gemm), are held to the fast
// engine in one-token orders instead, which is held to llama.cpp
// (forward_test.cpp): the same steps, so the same log-probabilities. (For
// K-quants the reference's products are not in ggml's Q8_K order.)
class ReferenceArchs : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceArchs, EqualsTheEngineTokenByToken) {
  QUIP_REQUIRE_SHARED();
  auto file = gguf::GgufFile::open((testing::shared_dir() / "archs" / GetParam()).string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto model = Model::bind(*file);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ForwardOptions alone;
  alone.llama_cpp_orders = false;
  Forward engine(*model, alone);
  ReferenceForward ref(*model);
  double worst = 0;
  // The tokens of llama.cpp's first completion and more of the second,
  // past the sliding windows (16 and 24 positions) of these models. (The
  // mixtures of experts choose by a clear margin only along such streams:
  // on others, the two forwards' float orders may choose apart.)
  std::vector<int32_t> tokens;
  for (const auto& c : reference::reference_entry(GetParam(), "archs").at("completions")) {
    for (int32_t t : c.at("prompt_tokens")) tokens.push_back(t);
    for (int32_t t : c.at("greedy")) tokens.push_back(t);
  }
  ASSERT_GE(tokens.size(), 40u);
  for (size_t i = 0; i < 40; ++i) {
    const int32_t token = tokens[i];
    const std::vector<double> a = log_softmax(engine.eval({&token, 1}));
    const std::vector<double> b = log_softmax(ref.step(token));
    for (size_t v = 0; v < a.size(); ++v) worst = std::max(worst, std::abs(a[v] - b[v]));
  }
  // gpt-oss's logits are steep enough that the reference's double sums
  // (1e-7 apart from the engine's float ones in its routers' weights) move
  // them by up to 0.008; it is held to llama.cpp's F16 tolerance instead.
  // (Without its sinks, or with plain SwiGLU, the reference is 17 to 21
  // away.)
  EXPECT_LE(worst, GetParam().find("gpt-oss") != std::string::npos ? 0.02 : 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferenceArchs,
                         ::testing::Values("tiny-deepseek2-e64-f16.gguf",
                                           "tiny-gemma2-e96-f16.gguf", "tiny-gemma3-e64-f16.gguf",
                                           "tiny-gpt-oss-e64-f16.gguf",
                                           "tiny-qwen3moe-e64-f16.gguf"),
                         reference::ModelTestName());

}  // namespace
}  // namespace quip::engine
