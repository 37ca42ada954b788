// The reference forward pass against llama.cpp's outputs, by the comparison
// rules of ../shared/README.md: teacher-forced
// log-probabilities of the reference's top 8 within the type's tolerance, and
// the same argmax wherever the reference's margin is clear.
#include "engine/forward_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

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

}  // namespace
}  // namespace quip::engine
