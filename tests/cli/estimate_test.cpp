// quip --estimate: the prompt's tokens (as --print-prompt counts them), what
// the prefix cache would restore (as the real call then restores), the
// memory, and a time once a call has measured a speed; and that it changes
// nothing (no cache file, no turn).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using testing::RunOptions;
using testing::RunResult;

constexpr const char* kModel = "tiny-llama-spm-e64-q8_0.gguf";
constexpr const char* kStory =
    "Once upon a time, in a village by the sea, there lived an old fisherman who told "
    "stories to anyone who would listen, and the children of the village listened.";

class Estimate : public ::testing::Test {
 protected:
  RunResult run(std::vector<std::string> args) {
    RunOptions o;
    o.env = {{"QUIP_HOME", home_.path().string()},
             {"QUIP_SESSION", "estimate-test"},
             {"QUIP_CONFIG", ""}};
    o.timeout_ms = 60'000;
    std::vector<std::string> a = {
        "-m", (testing::shared_dir() / "models" / kModel).string(), "--raw", "--temp", "0", "-n",
        "4"};
    a.insert(a.end(), args.begin(), args.end());
    return testing::run_quip(a, o);
  }

  nlohmann::json run_json(std::vector<std::string> args) {
    args.push_back("--json");
    const RunResult r = run(args);
    EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
    return r.status == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  // Every file under QUIP_HOME with its size and modification time, but
  // SQLite's -wal and -shm files, which any reader of a WAL database
  // opens (quip log does too).
  std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> files() const {
    std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> out;
    for (const auto& e : fs::recursive_directory_iterator(home_.path())) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.ends_with("-wal") || name.ends_with("-shm")) continue;
      out[e.path().string()] = {e.file_size(), e.last_write_time()};
    }
    return out;
  }

  testing::TempDir home_;
};

TEST_F(Estimate, CountsTheTokensAndSaysThereIsNoSpeedYet) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json prompt = run_json({"--print-prompt", kStory});
  const nlohmann::json e = run_json({"--estimate", kStory});
  EXPECT_EQ(e.at("prompt_tokens"), prompt.at("tokens").size());
  EXPECT_EQ(e.at("cached_tokens"), 0);
  EXPECT_EQ(e.at("evaluated_tokens"), prompt.at("tokens").size());
  EXPECT_GT(e.at("memory").at("kv_bytes").get<uint64_t>(), 0u);
  EXPECT_GT(e.at("memory").at("scratch_bytes").get<uint64_t>(), 0u);
  EXPECT_GT(e.at("memory").at("total_bytes").get<uint64_t>(), 0u);
  EXPECT_EQ(e.at("memory").at("weights_bytes").get<uint64_t>(),
            fs::file_size(testing::shared_dir() / "models" / kModel));
  EXPECT_TRUE(e.at("speed").at("prompt_tokens_per_s").is_null());
  EXPECT_TRUE(e.at("time").at("total_s").is_null());

  const RunResult human = run({"--estimate", kStory});
  ASSERT_EQ(human.status, kExitOk) << human.err;
  EXPECT_EQ(human.err, "");
  const std::vector<std::string> lines = testing::split_lines(human.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "prompt: " + std::to_string(prompt.at("tokens").size()) + " tokens");
  EXPECT_NE(human.out.find("\ntime: no measured speed yet\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("\nmemory: "), std::string::npos) << human.out;
  // Nothing was recorded or cached.
  EXPECT_TRUE(files().empty());
}

TEST_F(Estimate, CachedTokensAreWhatTheNextCallRestores) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json first = run_json({kStory});
  ASSERT_FALSE(first.empty());
  const auto before = files();

  // The same prompt again, whole; and a longer one that starts with it.
  const std::string longer = std::string(kStory) + " One day a stranger came.";
  const nlohmann::json same = run_json({"--estimate", kStory});
  const nlohmann::json follow = run_json({"--estimate", longer});
  EXPECT_EQ(files(), before);  // the estimates changed nothing
  EXPECT_GT(follow.at("cached_tokens").get<size_t>(), 0u);

  const nlohmann::json again = run_json({kStory});
  EXPECT_EQ(same.at("cached_tokens"), again.at("usage").at("cached_tokens"));
  EXPECT_EQ(same.at("evaluated_tokens"), again.at("usage").at("evaluated_tokens"));
  const nlohmann::json next = run_json({longer});
  EXPECT_EQ(follow.at("cached_tokens"), next.at("usage").at("cached_tokens"));
  EXPECT_EQ(follow.at("prompt_tokens"), next.at("usage").at("prompt_tokens"));
}

TEST_F(Estimate, HasATimeAfterACall) {
  QUIP_REQUIRE_SHARED();
  ASSERT_FALSE(run_json({"--no-cache", kStory}).empty());
  const nlohmann::json e = run_json({"--estimate", "--no-cache", kStory});
  EXPECT_GT(e.at("speed").at("prompt_tokens_per_s").get<double>(), 0);
  EXPECT_GT(e.at("speed").at("generation_tokens_per_s").get<double>(), 0);
  EXPECT_GT(e.at("time").at("prompt_s").get<double>(), 0);
  EXPECT_GE(e.at("time").at("generation_s").get<double>(), 0);
  EXPECT_GE(e.at("time").at("total_s").get<double>(), e.at("time").at("prompt_s").get<double>());
  const RunResult human = run({"--estimate", "--no-cache", kStory});
  ASSERT_EQ(human.status, kExitOk) << human.err;
  EXPECT_EQ(human.out.find("no measured speed"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("\ntime: "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(" for the prompt"), std::string::npos) << human.out;
}

TEST_F(Estimate, APromptBeyondTheContextIsAUsageError) {
  QUIP_REQUIRE_SHARED();
  const RunResult r = run({"--estimate", "--ctx-size", "8", kStory});
  EXPECT_EQ(r.status, kExitUsage) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--ctx-size"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace quip::cli
