// The server's continuous batching (serve/batcher.h): calls generating on
// several threads at once, their steps decoded together, get exactly the
// tokens each gets alone, and steps do carry several of them.
#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "support/shared.h"

namespace quip::serve {
namespace {

std::shared_ptr<const session::LoadedModel> load(const std::string& file) {
  auto m = session::load_model((testing::shared_dir() / "models" / file).string());
  if (!m.ok()) throw std::runtime_error(m.error().message);
  return std::make_shared<const session::LoadedModel>(std::move(*m));
}

engine::GenerateOptions greedy(size_t n) {
  engine::GenerateOptions o;
  o.max_tokens = static_cast<int64_t>(n);
  o.n_ctx = 512;
  o.sampler.temperature = 0;
  return o;
}

// Prompts of different lengths, from the vocabulary's ordinary ids.
std::vector<std::vector<int32_t>> prompts(size_t n) {
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> p;
    for (size_t t = 0; t < 3 + 9 * i; ++t) p.push_back(static_cast<int32_t>(100 + 37 * t + i));
    out.push_back(std::move(p));
  }
  return out;
}

TEST(Batcher, CallsDecodedTogetherGetTheirAnswersAlone) {
  QUIP_REQUIRE_SHARED();
  const auto model = load("tiny-llama-spm-e64-q4_0.gguf");
  constexpr size_t kCalls = 6, kTokens = 24;
  const auto ps = prompts(kCalls);
  engine::ForwardOptions fo;
  fo.n_threads = 1;
  fo.isa = kernels::detected_isa();

  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : ps) {
    engine::Forward fwd(model->model, fo);
    alone.push_back(engine::generate(fwd, p, greedy(kTokens), [](int32_t) { return true; }).tokens);
    ASSERT_EQ(alone.back().size(), kTokens);
  }

  std::vector<size_t> steps;
  std::mutex steps_mu;

  Batcher batcher(model, fo, [&](size_t rows) {
    std::lock_guard lock(steps_mu);
    steps.push_back(rows);
  });
  std::vector<std::vector<int32_t>> together(kCalls);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      engine::Forward fwd(model->model, fo);
      engine::GenerateOptions o = greedy(kTokens);
      o.stepper = &batcher;
      together[i] = engine::generate(fwd, ps[i], o, [](int32_t) { return true; }).tokens;
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kCalls; ++i) EXPECT_EQ(together[i], alone[i]) << "call " << i;
  // Every token after the first of each answer was one row of one step (the
  // last token's logits are not asked for).
  size_t rows = 0;
  for (size_t n : steps) rows += n;
  EXPECT_EQ(rows, kCalls * (kTokens - 1));
  EXPECT_LT(steps.size(), rows) << "no step decoded two calls together";
  EXPECT_LE(*std::max_element(steps.begin(), steps.end()), kCalls);
}

// A call that stops early (a client gone) leaves the steps; the others go on.
TEST(Batcher, ACallThatStopsLeavesTheOthersGoing) {
  QUIP_REQUIRE_SHARED();
  const auto model = load("tiny-llama-spm-e64-q4_0.gguf");
  engine::ForwardOptions fo;
  fo.isa = kernels::detected_isa();
  const auto ps = prompts(3);
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : ps) {
    engine::Forward fwd(model->model, fo);
    alone.push_back(engine::generate(fwd, p, greedy(40), [](int32_t) { return true; }).tokens);
  }
  Batcher batcher(model, fo);
  std::vector<engine::Generation> out(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      engine::Forward fwd(model->model, fo);
      engine::GenerateOptions o = greedy(40);
      o.stepper = &batcher;
      size_t n = 0;
      out[i] = engine::generate(fwd, ps[i], o, [&](int32_t) { return i != 1 || ++n < 5; });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(out[1].stop, engine::StopReason::Caller);
  EXPECT_EQ(out[1].tokens.size(), 5u);
  EXPECT_EQ(out[1].tokens, std::vector<int32_t>(alone[1].begin(), alone[1].begin() + 5));
  EXPECT_EQ(out[0].tokens, alone[0]);
  EXPECT_EQ(out[2].tokens, alone[2]);
}

}  // namespace
}  // namespace quip::serve
