// Trained models fetched by scripts/fetch_models.sh (the demo model,
// SmolLM2-135M-Instruct in Q4_1, and Gemma 3 270M in Q4_K_M) answer byte
// for byte as llama.cpp does.
//
// Expectations: tests/data/MODEL/golden.json, llama.cpp build 9749's
// greedy texts for chat prompts (llama-server's /v1/chat/completions, which
// renders the model's template with llama.cpp's own Jinja engine) and for
// raw prompts (llama-completion); each folder's README.md says how they
// were recorded. A held-out model is tested by adding its folder here.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

using testing::describe;
using testing::run_quip;

nlohmann::json golden(const std::string& folder) {
  return nlohmann::json::parse(
      testing::read_file(std::filesystem::path(QUIP_TEST_DATA_DIR) / folder / "golden.json"));
}

// The quip command line of one golden case.
std::vector<std::string> command(const std::filesystem::path& model, const nlohmann::json& c) {
  std::vector<std::string> args = {
      "-m", model.string(), "-n", std::to_string(c.at("n_predict").get<int>()), "--temp",
      "0",  "-t",           "2"};
  if (c.at("kind") == "raw") args.emplace_back("--raw");
  if (c.contains("system")) {
    args.emplace_back("--system");
    args.push_back(c.at("system").get<std::string>());
  }
  args.push_back(c.at("prompt").get<std::string>());
  return args;
}

class GoldenModels : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenModels, GreedyAnswersAreLlamaCpps) {
  const nlohmann::json g = golden(GetParam());
  QUIP_REQUIRE_FETCHED_MODEL(model, g.at("model").get<std::string>());
  ASSERT_GE(g.at("cases").size(), 4u);
  for (const auto& c : g.at("cases")) {
    testing::TempDir home;
    const std::vector<std::string> args = command(model, c);
    // Once computing everything, once with the whole prompt in the prefix
    // cache: the cache must not change an answer.
    for (const char* pass : {"first call", "prompt restored from the cache"}) {
      testing::RunOptions options;
      options.env = {{"QUIP_HOME", home.path().string()}};
      const testing::RunResult r = run_quip(args, options);
      ASSERT_EQ(r.status, 0) << describe(args, r);
      EXPECT_EQ(r.out, c.at("text").get<std::string>()) << pass << ": " << describe(args, r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fetched, GoldenModels, ::testing::Values("smollm2", "gemma3-270m"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(DemoModel, FollowUpRestoresTheFirstTurn) {
  QUIP_REQUIRE_DEMO_MODEL(model);
  testing::TempDir home;
  testing::RunOptions env;
  env.env = {{"QUIP_HOME", home.path().string()}, {"QUIP_SESSION", "demo-model-test"}};
  const testing::RunResult first =
      run_quip({"-m", model.string(), "-n", "16", "--json", "What is 1+1?"}, env);
  ASSERT_EQ(first.status, 0) << first.err;
  const auto one = nlohmann::json::parse(first.out);
  const testing::RunResult second =
      run_quip({"-c", "-n", "16", "--json", "And what is that times ten?"}, env);
  ASSERT_EQ(second.status, 0) << second.err;
  const auto two = nlohmann::json::parse(second.out);
  EXPECT_EQ(two.at("conversation"), one.at("conversation"));
  EXPECT_EQ(two.at("turn"), 2);
  // Everything of turn 1 (its prompt and its answer) came from the cache.
  const size_t turn1 = one.at("prompt_tokens").size() + one.at("tokens").size();
  EXPECT_GE(two.at("usage").at("cached_tokens").get<size_t>(), turn1 - 1);
  EXPECT_LT(two.at("usage").at("evaluated_tokens").get<size_t>(),
            two.at("prompt_tokens").size() - turn1 + 2);
}

}  // namespace
}  // namespace quip::cli
