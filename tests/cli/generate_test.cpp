// `quip --raw` and `quip bench`, through the binary: stdout holds exactly
// the answer, --json holds what the reference outputs of llama.cpp hold,
// and bad input gets one line and its exit status.
//
// Expectations come from ../shared/models/reference.json (llama.cpp's prompt
// tokens, greedy tokens and log-probabilities) and from the library's own
// tokenizer for the text of the ids the command reports.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "gguf/reader.h"
#include "support/run_quip.h"
#include "support/shared.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {
namespace {

using testing::expect_failure;
using testing::run_quip;

// An F16 model quip matches llama.cpp on, greedy token for token.
constexpr const char* kModel = "tiny-llama-spm-e64-f16.gguf";

std::string model_path(const char* name = kModel) {
  return (testing::shared_dir() / "models" / name).string();
}

const nlohmann::json& first_completion(const char* name = kModel) {
  static nlohmann::json ref = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  for (const auto& m : ref.at("models")) {
    if (m.at("model") == name) return m.at("completions").at(0);
  }
  throw std::runtime_error("no reference");
}

nlohmann::json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  const testing::RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
  EXPECT_EQ(r.err, "");
  return nlohmann::json::parse(r.out);
}

TEST(GenerateCli, JsonHoldsLlamaCppsTokensAndLogprobs) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json& c = first_completion();
  const nlohmann::json j = run_json({"--raw", "-m", model_path(), "-n", "8", "--logprobs", "3",
                                     "-t", "2", c.at("text").get<std::string>()});
  EXPECT_EQ(j.at("prompt_tokens"), c.at("prompt_tokens"));
  const std::vector<int32_t> greedy = c.at("greedy");
  EXPECT_EQ(j.at("tokens").get<std::vector<int32_t>>(),
            std::vector<int32_t>(greedy.begin(), greedy.begin() + 8));
  ASSERT_EQ(j.at("steps").size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const auto& got = j.at("steps")[i];
    const auto& want = c.at("steps")[i];
    EXPECT_EQ(got.at("id"), want.at("id"));
    ASSERT_EQ(got.at("top").size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(got.at("top")[k][0], want.at("top")[k][0]) << "step " << i;
      EXPECT_NEAR(got.at("top")[k][1].get<double>(), want.at("top")[k][1].get<double>(), 0.02);
    }
  }
  for (const char* key : {"load_ms", "prompt_ms", "generation_ms"}) {
    EXPECT_GE(j.at("timings").at(key).get<double>(), 0.0) << key;
  }
  EXPECT_EQ(j.at("stop"), "length");
}

TEST(GenerateCli, StdoutHoldsExactlyTheAnswer) {
  QUIP_REQUIRE_SHARED();
  const std::string prompt = first_completion().at("text");
  const nlohmann::json j = run_json({"--raw", "-m", model_path(), "-n", "12", prompt});
  const std::vector<std::string> args = {"--raw", "-m", model_path(), "-n", "12", prompt};
  const testing::RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << testing::describe(args, r);
  EXPECT_EQ(r.err, "");
  auto file = gguf::GgufFile::open(model_path());
  ASSERT_TRUE(file.ok());
  auto tok = tokenizer::Tokenizer::load(*file);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(r.out, tok->decode(j.at("tokens").get<std::vector<int32_t>>(),
                               {.special = false, .strip_leading_space = false}));
  EXPECT_EQ(r.out, j.at("text"));
}

TEST(GenerateCli, TokenIdsPromptEqualsTextPrompt) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json& c = first_completion();
  std::string ids;
  for (int32_t t : c.at("prompt_tokens")) ids += std::to_string(t) + " ";
  const nlohmann::json a = run_json({"--raw", "-m", model_path(), "-n", "6", "--tokens", ids});
  const nlohmann::json b =
      run_json({"--raw", "-m", model_path(), "-n", "6", c.at("text").get<std::string>()});
  EXPECT_EQ(a.at("tokens"), b.at("tokens"));
  EXPECT_EQ(a.at("prompt_tokens"), c.at("prompt_tokens"));
}

// Sampling: the same seed gives the same tokens, on 1 thread or 2; another
// seed (almost surely) others.
TEST(GenerateCli, SeededSamplingIsReproducible) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> base = {"--raw",  "-m",      model_path(), "-n",       "24",
                                         "--temp", "1.5",     "--top-k",    "0",        "--top-p",
                                         "1",      "--min-p", "0",          "Once upon"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_json(args).at("tokens").get<std::vector<int32_t>>();
  };
  const auto a = with({"-s", "7", "-t", "1"});
  EXPECT_EQ(a, with({"-s", "7", "-t", "2"}));
  EXPECT_NE(a, with({"-s", "8", "-t", "1"}));
  const nlohmann::json j = run_json(base);
  EXPECT_TRUE(j.at("seed").is_number_unsigned());  // a fresh seed, reported
}

TEST(GenerateCli, ZeroTokensPrintsNothing) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"--raw", "-m", model_path(), "-n", "0", "hello"};
  const testing::RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
  EXPECT_EQ(r.out, "");
}

TEST(GenerateCli, BadInputGetsOneLineAndItsStatus) {
  QUIP_REQUIRE_SHARED();
  const std::string m = model_path();
  expect_failure({"--raw", "hello"}, kExitUsage);                                    // no model
  expect_failure({"--raw", "-m", m}, kExitUsage);                                    // no prompt
  expect_failure({"--raw", "-m", m, "--tokens", "1 x 3"}, kExitUsage);               // not an id
  expect_failure({"--raw", "-m", m, "--tokens", "99999999"}, kExitUsage);            // out of range
  expect_failure({"--raw", "-m", m, "--temp", "-1", "hi"}, kExitUsage);              // bad sampler
  expect_failure({"--raw", "-m", m, "--top-p", "1.5", "hi"}, kExitUsage);            // bad sampler
  expect_failure({"--raw", "-m", m, "-t", "0", "hi"}, kExitUsage);                   // bad threads
  expect_failure({"--raw", "-m", m, "--ctx-size", "3", "a b c d e f"}, kExitUsage);  // no room
  expect_failure({"--raw", "-m", "/nonexistent.gguf", "hi"}, kExitBadData);
  const testing::RunResult r = expect_failure({"--raw", "-m", m, "--tokens", "1 x"}, kExitUsage);
  EXPECT_NE(r.err.find("'x'"), std::string::npos) << r.err;
}

TEST(GenerateCli, StopsAtTheContextEnd) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json j = run_json(
      {"--raw", "-m", model_path(), "--ctx-size", "10", "--ignore-eos", "Once upon a time"});
  EXPECT_EQ(j.at("stop"), "context");
  EXPECT_EQ(j.at("prompt_tokens").size() + j.at("tokens").size(), 10u);
}

// Ctrl-C: generation stops at once, what was generated is printed, exit
// status 130.
TEST(GenerateCli, InterruptPrintsWhatWasGeneratedAndExits130) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"--raw",        "-m",         model_path(),
                                         "--ignore-eos", "--ctx-size", "100000",
                                         "-t",           "1",          "Once upon a time"};
  testing::RunOptions options;
  options.signal_on_output = SIGINT;
  const testing::RunResult r = run_quip(args, options);
  EXPECT_EQ(r.status, kExitInterrupted) << testing::describe(args, r);
  EXPECT_FALSE(r.killed) << "quip must catch SIGINT, print what it has and exit";
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(r.err, "");
}

TEST(BenchCli, ReportsPromptAndGenerationSpeed) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"bench", "-m", model_path(), "-p", "16", "-n",
                                         "4",     "-r", "2",          "-t", "2",  "--json"};
  const testing::RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << testing::describe(args, r);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].at("test"), "pp16");
  EXPECT_EQ(j[1].at("test"), "tg4");
  for (const auto& t : j) {
    EXPECT_GT(t.at("tokens_per_s").get<double>(), 0.0);
    EXPECT_EQ(t.at("samples").size(), 2u);
    EXPECT_EQ(t.at("threads"), 2);
  }
  // Generation's weights against the stream bandwidth: an untied model
  // reads every tensor but the embedding table, of which one row, per token.
  auto f = gguf::GgufFile::open(model_path());
  ASSERT_TRUE(f.ok()) << f.error().message;
  uint64_t per_token = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    per_token += t.name == "token_embd.weight" ? t.n_bytes / t.shape[1] : t.n_bytes;
  }
  const nlohmann::json& tg = j[1];
  EXPECT_EQ(tg.at("weight_bytes_per_token").get<uint64_t>(), per_token);
  EXPECT_NEAR(tg.at("weights_gb_per_s").get<double>(),
              static_cast<double>(per_token) * tg.at("tokens_per_s").get<double>() / 1e9, 1e-9);
  EXPECT_GT(tg.at("stream_gb_per_s").get<double>(), 0.0);
  // The prompt's matrix products: fewer than the parameters (no embedding
  // table, the output once per batch); F16 weights have no int8 peak.
  const nlohmann::json& pp = j[0];
  EXPECT_GT(pp.at("matrix_products_per_token").get<double>(), 0.0);
  EXPECT_LT(pp.at("matrix_products_per_token").get<double>(), pp.at("params").get<double>());
  EXPECT_FALSE(pp.contains("int8_peak_g_per_s"));
  const std::vector<std::string> q8 = {
      "bench", "-m", model_path("tiny-llama-spm-e64-q8_0.gguf"), "-p", "16", "-n", "0", "--json"};
  const testing::RunResult r8 = run_quip(q8);
  ASSERT_EQ(r8.status, kExitOk) << testing::describe(q8, r8);
  EXPECT_GT(nlohmann::json::parse(r8.out)[0].at("int8_peak_g_per_s").get<double>(), 0.0);
  expect_failure({"bench", "-m", model_path(), "-p", "0", "-n", "0"}, kExitUsage);
}

}  // namespace
}  // namespace quip::cli
