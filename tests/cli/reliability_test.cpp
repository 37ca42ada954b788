// `quip PROMPT` against what a hostile tester tries: signals other than
// Ctrl-C, numbers out of range on the command line and in config.toml.
// Each case failed before its fix (issue 14, "Reliability").
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "store/store.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using testing::RunOptions;
using testing::RunResult;

constexpr const char* kModel = "tiny-qwen2-e64-f16.gguf";

std::string model_path(const char* name = kModel) {
  return (testing::shared_dir() / "models" / name).string();
}

class ReliabilityCli : public ::testing::Test {
 protected:
  RunOptions options() const {
    RunOptions o;
    o.env = {{"QUIP_HOME", home_.path().string()},
             {"QUIP_SESSION", "reliability-test"},
             {"QUIP_CONFIG", ""}};
    return o;
  }

  RunResult run(const std::vector<std::string>& args, RunOptions o) const {
    const RunOptions base = options();
    o.env.insert(o.env.end(), base.env.begin(), base.env.end());
    return testing::run_quip(args, o);
  }
  RunResult run(const std::vector<std::string>& args) const { return run(args, RunOptions{}); }

  // A usage error: status 2, nothing on stdout, one line on stderr that
  // names every one of `mentions`.
  void expect_usage_error(const std::vector<std::string>& args,
                          const std::vector<std::string>& mentions) const {
    const RunResult r = run(args);
    EXPECT_EQ(r.status, kExitUsage) << testing::describe(args, r);
    EXPECT_EQ(r.out, "") << testing::describe(args, r);
    EXPECT_EQ(testing::count_lines(r.err), 1u) << testing::describe(args, r);
    for (const std::string& m : mentions) {
      EXPECT_NE(r.err.find(m), std::string::npos) << "'" << m << "' in " << r.err;
    }
  }

  std::optional<store::TurnRecord> last_turn() const {
    auto s = store::Store::open_read_only(home_.path() / "data" / "quip.db");
    if (!s) return std::nullopt;
    auto last = s->last_turn_in_session("reliability-test");
    return last.ok() ? *last : std::nullopt;
  }

  testing::TempDir home_;
};

// SIGTERM (as `timeout` sends it) and SIGHUP (a closed terminal) stop the
// answer as Ctrl-C does: what was generated is printed and recorded as
// interrupted, and the exit status is 128 + the signal.
TEST_F(ReliabilityCli, TermAndHupRecordThePartialAnswer) {
  QUIP_REQUIRE_SHARED();
  for (int signo : {SIGTERM, SIGHUP, SIGINT}) {
    SCOPED_TRACE(signo);
    RunOptions o;
    o.signal_on_output = signo;
    const std::vector<std::string> args = {
        "-m", model_path(), "--ignore-eos", "--ctx-size", "100000", "-t", "1", "Tell me a story."};
    const RunResult r = run(args, o);
    EXPECT_FALSE(r.killed) << "quip must catch the signal, print what it has and exit";
    EXPECT_EQ(r.status, 128 + signo) << testing::describe(args, r);
    EXPECT_FALSE(r.out.empty());
    EXPECT_EQ(r.err, "");
    const auto last = last_turn();
    ASSERT_TRUE(last.has_value());
    EXPECT_TRUE(last->interrupted);
    EXPECT_EQ(last->answer, r.out);
    EXPECT_FALSE(last->answer_tokens.empty());
  }
}

// Numbers on the command line are taken as written or refused with the
// value and the allowed range (exit status 2), never clamped, wrapped or
// read as "unlimited"; -1 means what llama.cpp's -1 means.
TEST_F(ReliabilityCli, NumbersOutOfRangeAreUsageErrors) {
  QUIP_REQUIRE_SHARED();
  struct Case {
    std::vector<std::string> flag;
    std::vector<std::string> mentions;
  };
  const Case cases[] = {
      {{"-s", "-2"}, {"--seed -2", "[-1, 9223372036854775807]"}},
      {{"-s", "99999999999999999999"}, {"99999999999999999999", "[-1, 9223372036854775807]"}},
      {{"-s", "seven"}, {"'seven'", "not an integer"}},
      {{"--ctx-size", "-5"}, {"--ctx-size -5", "[0, 2147483647]"}},
      {{"--ctx-size", "4294967297"}, {"4294967297", "[0, 2147483647]"}},
      {{"-n", "-2"}, {"--n-predict -2", "[-1, 2147483647]", "-1: no limit"}},
      {{"-n", "99999999999"}, {"99999999999", "[-1, 2147483647]"}},
      {{"-n", "0x10"}, {"'0x10'", "not an integer"}},
      {{"--top-k", "99999999999"}, {"--top-k 99999999999", "[0, 2147483647]"}},
      {{"-t", "0"}, {"--threads 0", "[1, 1024]"}},
      {{"--temp", "nan"}, {"--temp nan", "[0, 100]"}},
      {{"--temp", "-0.5"}, {"--temp -0.5", "[0, 100]"}},
      {{"--temp", "1e999"}, {"--temp 1e999", "[0, 100]"}},
      {{"--temp", "hot"}, {"--temp 'hot' is not a number"}},
      {{"--top-p", "0"}, {"--top-p 0", "(0, 1]"}},
      {{"--top-p", "1.5"}, {"--top-p 1.5", "(0, 1]"}},
      {{"--top-p", "nan"}, {"--top-p nan", "(0, 1]"}},
      {{"--min-p", "-0.1"}, {"--min-p -0.1", "[0, 1]"}},
      {{"--min-p", "inf"}, {"--min-p inf", "[0, 1]"}},
      {{"--repeat-penalty", "0"}, {"--repeat-penalty 0", "(0, 100]"}},
      {{"--repeat-penalty", "-1"}, {"--repeat-penalty -1", "(0, 100]"}},
      {{"--repeat-penalty", "nan"}, {"--repeat-penalty nan", "(0, 100]"}},
      {{"--logprobs", "99999999999"}, {"--logprobs", "[0, 1000]"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--raw", "-m", model_path()};
    args.insert(args.end(), c.flag.begin(), c.flag.end());
    args.push_back("hi");
    expect_usage_error(args, c.mentions);
  }
  EXPECT_FALSE(fs::exists(home_.path() / "data" / "quip.db")) << "a refused call recorded a turn";

  // The documented meanings: -n -1 runs to the end of the context, -s -1 is
  // a fresh seed (reported), --ctx-size 0 is the model's context.
  const auto json = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--raw", "-m", model_path(), "--json"});
    args.push_back("Once upon a time");
    const RunResult r = run(args);
    EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
    return r.status == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json unlimited = json({"-n", "-1", "--ignore-eos", "--ctx-size", "12"});
  EXPECT_EQ(unlimited.at("stop"), "context");
  EXPECT_EQ(unlimited.at("prompt_tokens").size() + unlimited.at("tokens").size(), 12u);
  const nlohmann::json fresh = json({"-n", "1", "-s", "-1", "--temp", "1"});
  EXPECT_LT(fresh.at("seed").get<uint64_t>(), uint64_t{1} << 32);  // a random_device draw
  const nlohmann::json big = json({"-n", "1", "-s", "9223372036854775807", "--temp", "1"});
  EXPECT_EQ(big.at("seed").get<uint64_t>(), uint64_t{9223372036854775807});
  const nlohmann::json model_ctx = json({"-n", "1", "--ctx-size", "0"});
  EXPECT_EQ(model_ctx.at("tokens").size(), 1u);
}

// The same settings from config.toml: refused with the file, the line and
// the key, before anything runs; and flags are checked even when the config
// would give a valid value.
TEST_F(ReliabilityCli, ConfigNumbersOutOfRangeNameTheFileAndKey) {
  QUIP_REQUIRE_SHARED();
  fs::create_directories(home_.path() / "config");
  const fs::path config = home_.path() / "config" / "config.toml";
  const std::pair<const char*, const char*> cases[] = {
      {"top_p = 0\n", "top_p: 0 is not in (0, 1]"},
      {"top_k = 99999999999\n", "top_k: 99999999999 is not in [0, 2147483647]"},
      {"n_predict = -2\n", "n_predict: -2 is not in [-1, 2147483647]"},
      {"ctx_size = 4294967297\n", "ctx_size: 4294967297 is not in [0, 2147483647]"},
      {"ctx_size = -5\n", "ctx_size: -5 is not in"},
      {"seed = -2\n", "seed: -2 is not in [-1, 9223372036854775807]"},
      {"temp = nan\n", "temp: nan is not in [0, 100]"},
      {"min_p = inf\n", "min_p: inf is not in [0, 1]"},
      {"repeat_penalty = 0\n", "repeat_penalty: 0 is not in (0, 100]"},
      {"[models.m]\npath = \"x.gguf\"\ntop_p = 0.0\n", ":3: models.m.top_p: 0 is not in (0, 1]"},
  };
  for (const auto& [text, expected] : cases) {
    testing::write_bytes(config, text);
    expect_usage_error({"--raw", "-m", model_path(), "hi"}, {config.string() + ":", expected});
  }
  testing::write_bytes(config, "seed = -1\nn_predict = -1\nctx_size = 0\n");  // the meanings
  const RunResult ok = run({"--raw", "-m", model_path(), "-n", "2", "hi"});
  EXPECT_EQ(ok.status, kExitOk) << ok.err;
}

// The prefix cache never changes an answer: the same call twice, the
// second with its whole prompt in the cache, gives exactly the steps of the
// first (the same tokens and bit-identical log-probabilities), on a chaotic
// Q4_K_M model where evaluating the last prompt token again alone moved the
// first step by up to 1.66. The prompts are longer than 64 tokens, where the
// first call's batch attends in tiles, in other float orders than a lone
// token.
TEST_F(ReliabilityCli, AWholePromptFromTheCacheAnswersAsTheCallThatStoredIt) {
  QUIP_REQUIRE_SHARED();
  const std::string story =
      "Once upon a time, in a village by the sea, there lived an old fisherman who told "
      "stories to anyone who would listen, and the children of the village listened. Every "
      "evening they gathered on the shore, and he spoke of storms and whales and a lighthouse "
      "keeper who never slept. The keeper, he said, had counted every ship that ever passed "
      "the rocks, and on the night of the great storm he counted one too many.";
  struct Case {
    const char* model;
    std::vector<std::string> mode;
  };
  for (const Case& c : {Case{"tiny-llama-spm-e256-q4_k_m.gguf", {"--raw"}},
                        Case{"tiny-qwen2-e256-q4_k_m.gguf", {"--raw"}},
                        Case{"tiny-qwen2-e256-q4_k_m.gguf", {"--system", story}}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.mode[0]);
    std::vector<std::string> args = {"-m", model_path(c.model), "-n",     "8",  "--logprobs",
                                     "5",  "--ignore-eos",      "--json", "-t", "2"};
    args.insert(args.end(), c.mode.begin(), c.mode.end());
    args.push_back(story);
    const RunResult first = run(args);
    const RunResult second = run(args);
    ASSERT_EQ(first.status, kExitOk) << first.err;
    ASSERT_EQ(second.status, kExitOk) << second.err;
    const nlohmann::json a = nlohmann::json::parse(first.out);
    const nlohmann::json b = nlohmann::json::parse(second.out);
    ASSERT_GT(a.at("prompt_tokens").size(), 64u);
    EXPECT_EQ(a.at("usage").at("cached_tokens"), 0);
    EXPECT_EQ(b.at("usage").at("cached_tokens"), b.at("prompt_tokens").size());
    EXPECT_EQ(b.at("usage").at("evaluated_tokens"), 0);
    EXPECT_EQ(a.at("tokens"), b.at("tokens"));
    ASSERT_EQ(a.at("steps").size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(a.at("steps")[i], b.at("steps")[i]) << "step " << i;  // the same doubles
    }
  }
}

}  // namespace
}  // namespace quip::cli
