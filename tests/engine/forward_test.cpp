// The forward pass against llama.cpp's outputs for every shared model (the
// comparison rules of ../shared/README.md), and its own properties: batched
// equals token by token, thread counts agree, a saved and restored KV cache
// continues exactly, and the SIMD kernels agree with the reference ones.
#include "engine/forward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/forward_ref.h"
#include "engine/generate.h"
#include "engine/reference_outputs.h"
#include "support/shared.h"

namespace quip::engine {
namespace {

bool exact_greedy_expected(const std::string& file) {
  return reference::tolerance_for(file) == 0.02;
}

// A model is named by its file in ../shared/models, or as "archs/FILE".
std::string folder_of(const std::string& name) {
  return name.starts_with("archs/") ? "archs" : "models";
}
std::string file_of(const std::string& name) {
  return name.substr(name.find('/') + 1);
}

const nlohmann::json& entry_for(const std::string& name) {
  return reference::reference_entry(file_of(name), folder_of(name));
}

struct Loaded {
  gguf::GgufFile file;
  Model model;
};

std::unique_ptr<Loaded> load(const std::string& name) {
  auto file =
      gguf::GgufFile::open((testing::shared_dir() / folder_of(name) / file_of(name)).string());
  if (!file.ok()) throw std::runtime_error(file.error().message);
  auto loaded = std::make_unique<Loaded>(Loaded{std::move(*file), Model{}});
  auto model = Model::bind(loaded->file);
  if (!model.ok()) throw std::runtime_error(model.error().message);
  loaded->model = std::move(*model);
  return loaded;
}

size_t argmax(std::span<const float> v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

ForwardOptions options(int threads, kernels::Isa isa = kernels::detected_isa()) {
  ForwardOptions o;
  o.n_threads = threads;
  o.isa = isa;
  return o;
}

class SharedModels : public ::testing::TestWithParam<std::string> {};

// Teacher-forced: the prompt as one batch (as llama.cpp evaluates it), then
// the reference's tokens one at a time.
TEST_P(SharedModels, MatchesLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  const double tol = reference::tolerance_for(GetParam());
  const reference::Comparison c = reference::compare_teacher_forced(GetParam(), [&] {
    auto fwd = std::make_shared<Forward>(loaded->model, options(2));
    return [fwd](std::span<const int32_t> tokens) { return fwd->eval(tokens); };
  });
  const double worst = c.worst;
  const std::string& where = c.where;
  const size_t argmax_misses = c.argmax_misses;
  RecordProperty("max_abs_logprob_error", std::to_string(worst));
  EXPECT_LE(worst, tol) << "largest difference at " << where;
  EXPECT_EQ(argmax_misses, 0u);
}

// Free-running greedy decoding reproduces llama.cpp's tokens for the
// formats where that is expected, up to the first step whose reference
// margin is too thin to call.
TEST_P(SharedModels, GreedyDecodingMatchesLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  if (!exact_greedy_expected(GetParam())) GTEST_SKIP() << "not an exact-greedy format";
  const auto loaded = load(GetParam());
  EXPECT_EQ(reference::compare_greedy(
                GetParam(),
                [&] {
                  auto fwd = std::make_shared<Forward>(loaded->model, options(2));
                  return [fwd](std::span<const int32_t> tokens) { return fwd->eval(tokens); };
                }),
            "");
}

// The .gguf files of a folder of ../shared, sorted.
std::vector<std::string> model_files(const char* folder) {
  std::vector<std::string> names;
  const auto dir = testing::shared_dir() / folder;
  if (!std::filesystem::exists(dir)) return {"missing.gguf"};
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".gguf") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> shared_models() {
  return model_files("models");
}

INSTANTIATE_TEST_SUITE_P(Shared, SharedModels, ::testing::ValuesIn(shared_models()),
                         reference::ModelTestName());

// The architectures of ../shared/archs: those quip runs match llama.cpp's
// outputs; the others are refused by name at load. (The scalar reference
// forward takes the same steps, but like for most shared models it drifts
// past the tolerance on the long prompts, which llama.cpp evaluates in
// batches.)
class ArchModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchModels, MatchLlamaCppOrAreRefusedByName) {
  QUIP_REQUIRE_SHARED();
  auto file = gguf::GgufFile::open((testing::shared_dir() / "archs" / GetParam()).string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto model = Model::bind(*file);
  if (!model.ok()) {
    EXPECT_NE(model.error().message.find("not supported"), std::string::npos)
        << model.error().message;
    return;
  }
  const double tol = reference::tolerance_for(*file);
  const reference::Comparison engine = reference::compare_teacher_forced(
      GetParam(),
      [&] {
        auto fwd = std::make_shared<Forward>(*model, options(2));
        return [fwd](std::span<const int32_t> tokens) { return fwd->eval(tokens); };
      },
      "archs");
  EXPECT_LE(engine.worst, tol) << "engine: largest difference at " << engine.where;
  EXPECT_EQ(engine.argmax_misses, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shared, ArchModels, ::testing::ValuesIn(model_files("archs")),
                         reference::ModelTestName());

// A prompt of a model's own reference, long enough for several batches.
std::vector<int32_t> long_prompt(const std::string& model) {
  std::vector<int32_t> tokens;
  for (const auto& c : entry_for(model).at("completions")) {
    for (int32_t t : c.at("prompt_tokens")) tokens.push_back(t);
    for (int32_t t : c.at("greedy")) tokens.push_back(t);
  }
  return tokens;
}

class Properties : public ::testing::TestWithParam<std::string> {};

TEST_P(Properties, BatchedEqualsTokenByToken) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  const std::vector<int32_t> tokens = long_prompt(GetParam());
  ForwardOptions small = options(2);
  small.max_batch = 7;             // batches that end mid-prompt
  small.llama_cpp_orders = false;  // one float order for every token (see ForwardOptions)
  ForwardOptions alone = options(1);
  alone.llama_cpp_orders = false;
  Forward batched(loaded->model, small), single(loaded->model, alone);
  const std::span<const float> logits = batched.eval(tokens, true);
  const std::vector<float> all(logits.begin(), logits.end());
  const size_t n_vocab = loaded->model.hparams().n_vocab;
  double worst = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<double> a = log_softmax(single.eval({&tokens[t], 1}));
    const std::vector<double> b = log_softmax({all.data() + t * n_vocab, n_vocab});
    for (size_t i = 0; i < n_vocab; ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  EXPECT_LE(worst, 1e-4);
}

// Greedy decoding after a prompt, `n` tokens.
std::vector<int32_t> greedy(Forward& fwd, std::span<const int32_t> prompt, size_t n) {
  std::vector<int32_t> out;
  std::span<const float> logits = fwd.eval(prompt);
  while (out.size() < n) {
    out.push_back(static_cast<int32_t>(argmax(logits)));
    logits = fwd.eval({&out.back(), 1});
  }
  return out;
}

TEST_P(Properties, OneAndTwoThreadsGiveTheSameLogits) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  const std::vector<int32_t> tokens = long_prompt(GetParam());
  Forward one(loaded->model, options(1)), two(loaded->model, options(2));
  const std::span<const float> a = one.eval(tokens, true);
  const std::vector<float> first(a.begin(), a.end());
  const std::span<const float> b = two.eval(tokens, true);
  ASSERT_EQ(first.size(), b.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), b.begin()));  // bit for bit
  Forward g1(loaded->model, options(1)), g2(loaded->model, options(2));
  EXPECT_EQ(greedy(g1, tokens, 16), greedy(g2, tokens, 16));
}

// Save -> restore -> continue gives what an uninterrupted run gives.
TEST_P(Properties, RestoredCacheContinuesExactly) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  const std::vector<int32_t> tokens = long_prompt(GetParam());
  const size_t cut = tokens.size() / 2;
  Forward whole(loaded->model, options(2));
  const std::span<const float> expected_span = whole.eval(tokens);
  const std::vector<float> expected(expected_span.begin(), expected_span.end());

  Forward first(loaded->model, options(2));
  first.eval(std::span(tokens).first(cut + 3));
  first.cache().truncate(cut);  // a prefix of what was evaluated
  std::vector<uint8_t> saved;
  first.cache().save(0, cut, saved);
  EXPECT_EQ(saved.size(), cut * first.cache().position_bytes());

  Forward resumed(loaded->model, options(2));
  ASSERT_TRUE(resumed.cache().restore(saved, cut).ok());
  const std::span<const float> got = resumed.eval(std::span(tokens).subspan(cut));
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got.begin()));
  // And a continuation of the truncated cache itself.
  const std::span<const float> again = first.eval(std::span(tokens).subspan(cut));
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), again.begin()));

  Forward wrong(loaded->model, options(1));
  EXPECT_FALSE(wrong.cache().restore(std::span(saved).first(saved.size() - 1), cut).ok());
}

// A caller that stops during a long prompt (Ctrl-C) is heard between
// batches; what was evaluated stays in the cache, and a later call that goes
// on from it gives the uninterrupted answer.
TEST_P(Properties, StoppedPromptKeepsWhatItEvaluated) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  const std::vector<int32_t> tokens = long_prompt(GetParam());
  ASSERT_GT(tokens.size(), 15u);
  ForwardOptions small = options(2);
  small.max_batch = 7;
  GenerateOptions go;
  go.max_tokens = 8;
  go.n_ctx = tokens.size() + 16;

  Forward whole(loaded->model, small);
  const Generation expected = generate(whole, tokens, go, [](int32_t) { return true; });
  ASSERT_EQ(expected.tokens.size(), 8u);

  Forward fwd(loaded->model, small);
  int asked = 0;
  GenerateOptions stopping = go;
  stopping.keep_going = [&] { return ++asked <= 2; };  // two batches, then stop
  bool answered = false;
  const Generation stopped =
      generate(fwd, tokens, stopping, [&](int32_t) { return answered = true; });
  EXPECT_EQ(stopped.stop, StopReason::Caller);
  EXPECT_TRUE(stopped.tokens.empty());
  EXPECT_FALSE(answered);
  EXPECT_EQ(stopped.evaluated_tokens, 14u);
  EXPECT_EQ(fwd.position(), 14u);

  const Generation resumed = generate(fwd, tokens, go, [](int32_t) { return true; });
  EXPECT_EQ(resumed.cached_tokens, 14u);
  EXPECT_EQ(resumed.evaluated_tokens, tokens.size() - 14);
  EXPECT_EQ(resumed.tokens, expected.tokens);
}

// Sequences decoded together in one step (Forward::decode, a server's
// continuous batching) get, bit for bit, the logits each gets decoded alone
// on its own Forward: at other positions (one past the 256 where a lone
// token's attention splits), joining and leaving between steps.
class DecodeTogether : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeTogether, EqualsDecodingAlone) {
  QUIP_REQUIRE_SHARED();
  const auto loaded = load(GetParam());
  std::vector<int32_t> tokens = long_prompt(GetParam());
  while (tokens.size() < 300) tokens.insert(tokens.end(), tokens.begin(), tokens.end());
  const size_t n_vocab = loaded->model.hparams().n_vocab;
  struct Sequence {
    std::vector<int32_t> prompt;
    size_t joins, leaves;  // the steps it is decoded in: [joins, leaves)
  };
  const Sequence sequences[] = {{{tokens.begin(), tokens.begin() + 5}, 0, 12},
                                {{tokens.begin() + 3, tokens.begin() + 40}, 0, 6},
                                {{tokens.begin(), tokens.begin() + 300}, 2, 12},
                                {{tokens.begin() + 7, tokens.begin() + 8}, 4, 9}};
  constexpr size_t kSteps = 12;
  // Alone: each sequence's greedy tokens and the logits of each step.
  std::vector<std::vector<int32_t>> drawn;
  std::vector<std::vector<std::vector<float>>> expected;
  for (const Sequence& s : sequences) {
    Forward fwd(loaded->model, options(1));
    std::span<const float> logits = fwd.eval(s.prompt);
    drawn.emplace_back(), expected.emplace_back();
    for (size_t step = s.joins; step < s.leaves; ++step) {
      drawn.back().push_back(static_cast<int32_t>(argmax(logits)));
      logits = fwd.eval({&drawn.back().back(), 1});
      expected.back().emplace_back(logits.begin(), logits.end());
    }
  }
  // Together: the same prompts on their own Forwards, the steps in one.
  ASSERT_TRUE(Forward(loaded->model, options(2)).decodes_rows());
  Forward shared(loaded->model, options(2));
  std::vector<std::unique_ptr<Forward>> own;
  for (const Sequence& s : sequences) {
    own.push_back(std::make_unique<Forward>(loaded->model, options(2)));
    own.back()->eval(s.prompt);
  }
  size_t rows_stepped = 0;
  for (size_t step = 0; step < kSteps; ++step) {
    std::vector<Forward::Row> rows;
    std::vector<size_t> who;
    for (size_t i = 0; i < std::size(sequences); ++i) {
      if (step < sequences[i].joins || step >= sequences[i].leaves) continue;
      rows.push_back({&own[i]->cache(), drawn[i][step - sequences[i].joins]});
      who.push_back(i);
    }
    const std::span<const float> logits = shared.decode(rows);
    ASSERT_EQ(logits.size(), rows.size() * n_vocab);
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t i = who[r];
      const std::vector<float>& want = expected[i][step - sequences[i].joins];
      EXPECT_TRUE(std::equal(want.begin(), want.end(), logits.begin() + r * n_vocab))
          << "sequence " << i << ", step " << step;
      EXPECT_EQ(own[i]->position(), sequences[i].prompt.size() + step - sequences[i].joins + 1);
    }
    rows_stepped += rows.size();
  }
  EXPECT_EQ(rows_stepped, 12u + 6 + 10 + 5);
}

INSTANTIATE_TEST_SUITE_P(Shared, DecodeTogether,
                         ::testing::Values("tiny-qwen2-e256-q4_k_m.gguf",
                                           "tiny-llama-spm-e64-q4_0.gguf",
                                           "tiny-qwen3-e64-bf16.gguf", "tiny-llama3-e64-q8_0.gguf",
                                           "archs/tiny-gemma3-e64-f16.gguf",
                                           "archs/tiny-gemma2-e96-f16.gguf",
                                           "archs/tiny-qwen3moe-e256-q4_k_m.gguf",
                                           // latent attention, attention sinks, LongRoPE
                                           "archs/tiny-deepseek2-e64-f16.gguf",
                                           "archs/tiny-gpt-oss-e64-mxfp4.gguf",
                                           "archs/tiny-phi3-e96-f16.gguf"),
                         reference::ModelTestName());

// The SIMD tables against the reference one, through the whole model.
TEST_P(Properties, SimdKernelsAgreeWithTheReference) {
  QUIP_REQUIRE_SHARED();
  if (kernels::detected_isa() == kernels::Isa::Reference) GTEST_SKIP() << "no SIMD on this CPU";
  const auto loaded = load(GetParam());
  const std::vector<int32_t> tokens = long_prompt(GetParam());
  Forward ref(loaded->model, options(2, kernels::Isa::Reference));
  Forward simd(loaded->model, options(2));
  const std::vector<double> a = log_softmax(ref.eval(tokens));
  const std::vector<double> b = log_softmax(simd.eval(tokens));
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  // Not tighter: the tiny random models amplify rounding. Summing the same
  // products in another order moves their log-probabilities by up to 0.18
  // (measured); a wrong kernel moves them by whole units.
  EXPECT_LE(worst, 0.3);
}

INSTANTIATE_TEST_SUITE_P(Shared, Properties,
                         ::testing::Values("tiny-qwen2-e256-q4_k_m.gguf",
                                           "tiny-llama-spm-e64-q4_0.gguf",
                                           "tiny-qwen3-e64-bf16.gguf", "tiny-llama3-e64-q8_0.gguf",
                                           // sliding windows over several batches
                                           "archs/tiny-gemma3-e64-f16.gguf",
                                           "archs/tiny-gemma2-e96-f16.gguf",
                                           // a mixture of experts
                                           "archs/tiny-qwen3moe-e256-q4_k_m.gguf"),
                         reference::ModelTestName());

}  // namespace
}  // namespace quip::engine
