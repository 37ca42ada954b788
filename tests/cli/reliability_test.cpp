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

}  // namespace
}  // namespace quip::cli
