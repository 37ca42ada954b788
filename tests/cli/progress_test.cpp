// The progress line of a long prompt (cli/progress.h): shown on a terminal
// (stderr a pseudo-terminal here), erased before the answer and at the end,
// plain under NO_COLOR, and absent where stderr is a file or with --json;
// stdout is the answer either way.
#include "cli/progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::RunOptions;
using testing::RunResult;

constexpr const char* kModel = "tiny-llama-spm-e64-f16.gguf";
constexpr int kTimeoutMs = 60'000;

// quip with stderr on a pseudo-terminal (what a person at a terminal
// sees, escape sequences and all) and stdout in a file.
struct PtyRun {
  int status = -1;
  std::string out, err;
};

PtyRun run_on_pty(const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env) {
  PtyRun r;
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) {
    ADD_FAILURE() << "openpty: " << std::strerror(errno);
    return r;
  }
  testing::TempDir dir;
  const std::string out_path = (dir / "stdout").string();
  std::vector<std::string> argv_strings = {QUIP_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = testing::environment_with(env);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, slave, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, master);
  posix_spawn_file_actions_addclose(&actions, slave);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(slave);  // the child's copy is the only one: EIO once it exits
  if (rc != 0) {
    ::close(master);
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    return r;
  }
  // Read the terminal until the child's side closes (the pty's buffer is
  // small: a child that writes more than it holds would block).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      r.err.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EIO: no writer left
  }
  ::close(master);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  EXPECT_LT(std::chrono::steady_clock::now(), deadline);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  r.out = testing::read_file(out_path);
  return r;
}

class Progress : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::shared_dir().empty()) return;
    // A long prompt, several batches (Forward's 512 tokens) of it.
    std::string text;
    for (int i = 0; text.size() < 12'000; ++i) {
      text += "line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog.\n";
    }
    testing::write_bytes(prompt_file(), text);
  }

  fs::path prompt_file() const { return home_.path() / "prompt.txt"; }

  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"-m",
                                  (testing::shared_dir() / "models" / kModel).string(),
                                  "--raw",
                                  "-f",
                                  prompt_file().string(),
                                  "-n",
                                  "8",
                                  "--temp",
                                  "0",
                                  "--ctx-size",
                                  "8192",
                                  "--no-cache"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  std::vector<std::pair<std::string, std::string>> env(
      std::vector<std::pair<std::string, std::string>> extra = {}) const {
    std::vector<std::pair<std::string, std::string>> e = {{"QUIP_HOME", home_.path().string()},
                                                          {"QUIP_SESSION", "progress-test"},
                                                          {"QUIP_CONFIG", ""},
                                                          {"NO_COLOR", ""},
                                                          {"TERM", "xterm"},
                                                          {"QUIP_PROGRESS_AFTER_MS", "0"}};
    for (auto& x : extra) {
      for (auto& [n, v] : e) {
        if (n == x.first) v = x.second;
      }
    }
    return e;
  }

  size_t prompt_tokens() {
    RunOptions o;
    o.env = env();
    std::vector<std::string> a = args({"--print-prompt", "--json"});
    const RunResult r = testing::run_quip(a, o);
    EXPECT_EQ(r.status, kExitOk) << testing::describe(a, r);
    return r.status == kExitOk ? nlohmann::json::parse(r.out).at("tokens").size() : 0;
  }

  testing::TempDir home_;
};

// Whether `text` has an SGR sequence (ESC [ digits and semicolons m):
// colour or attributes. (Not std::regex: GCC 12's sanitizer build reports
// a false maybe-uninitialized inside <regex>, and warnings are errors.)
bool has_sgr(const std::string& text) {
  for (size_t at = text.find("\x1b["); at != std::string::npos; at = text.find("\x1b[", at + 1)) {
    const size_t end = text.find_first_not_of("0123456789;", at + 2);
    if (end != std::string::npos && text[end] == 'm') return true;
  }
  return false;
}

TEST_F(Progress, ShownOnATerminalAndErasedBeforeTheAnswer) {
  QUIP_REQUIRE_SHARED();
  const size_t total = prompt_tokens();
  ASSERT_GT(total, 1024u);  // several batches

  // The answer as a pipe gets it: stderr a file.
  RunOptions o;
  o.env = env();
  const RunResult plain = testing::run_quip(args(), o);
  ASSERT_EQ(plain.status, kExitOk) << testing::describe(args(), plain);
  EXPECT_EQ(plain.err, "");  // nothing of the line off a terminal

  const auto start = std::chrono::steady_clock::now();
  const PtyRun r = run_on_pty(args(), env());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  RecordProperty("pty_run_ms", std::to_string(ms));
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out, plain.out);  // stdout unchanged by it
  const std::string line = "quip: prompt ";
  const size_t last = r.err.rfind(line);
  ASSERT_NE(last, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/" + std::to_string(total) + " tokens"), std::string::npos) << r.err;
  // Updated in place, and erased after its last text: the terminal is
  // left clean.
  EXPECT_EQ(r.err.find('\n'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\r\x1b[K", last), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with("\r\x1b[K")) << r.err;
  EXPECT_TRUE(has_sgr(r.err)) << r.err;  // dim, NO_COLOR unset
}

TEST_F(Progress, PlainUnderNoColor) {
  QUIP_REQUIRE_SHARED();
  const PtyRun r = run_on_pty(args(), env({{"NO_COLOR", "1"}}));
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.err.find("quip: prompt "), std::string::npos) << r.err;
  EXPECT_FALSE(has_sgr(r.err)) << r.err;
}

TEST_F(Progress, DumbTerminalGetsSpacesNotEscapes) {
  QUIP_REQUIRE_SHARED();
  const PtyRun r = run_on_pty(args(), env({{"TERM", "dumb"}}));
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.err.find("quip: prompt "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with(" \r")) << r.err;
}

TEST_F(Progress, NoneWithJsonNorOnAShortWait) {
  QUIP_REQUIRE_SHARED();
  const PtyRun json = run_on_pty(args({"--json"}), env());
  ASSERT_EQ(json.status, kExitOk) << json.err;
  EXPECT_EQ(json.err, "");
  EXPECT_TRUE(nlohmann::json::accept(json.out)) << json.out;
  // A short prompt (one batch) with the default half second: nothing to
  // wait for. (The long one takes about that long on a busy machine, so it
  // could show.)
  std::vector<std::string> short_args = args();
  short_args[3] = "--tokens";  // instead of -f FILE
  short_args[4] = "1 2 3";
  const PtyRun quick = run_on_pty(short_args, env({{"QUIP_PROGRESS_AFTER_MS", ""}}));
  ASSERT_EQ(quick.status, kExitOk) << quick.err;
  EXPECT_EQ(quick.err, "");
}

// The line itself, with the clock in the test's hands.
TEST(ProgressLine, TextAndTiming) {
  EXPECT_EQ(PromptProgress::text(1536, 4096, 512, 11.2),
            "quip: prompt 1536/4096 tokens (512 cached), 12 s left");
  EXPECT_EQ(PromptProgress::text(10, 4096, 0, std::nullopt), "quip: prompt 10/4096 tokens");
  EXPECT_EQ(PromptProgress::text(10, 4096, 0, 150.0), "quip: prompt 10/4096 tokens, 3 min left");

  std::ostringstream err;
  PromptProgress::Options o;
  o.dim = false;
  const auto t0 = PromptProgress::Clock::time_point{};
  {
    PromptProgress p(err, o);
    p.update(512, 4096, 512, t0);           // evaluation begins
    p.update(1024, 4096, 512, t0 + 200ms);  // under half a second: nothing yet
    EXPECT_EQ(err.str(), "");
    p.update(1536, 4096, 512, t0 + 1000ms);  // 1024 tokens a second
    EXPECT_EQ(err.str(), "\r\x1b[Kquip: prompt 1536/4096 tokens (512 cached), 3 s left");
    p.update(2048, 4096, 512, t0 + 1100ms);  // too soon after the last
    EXPECT_EQ(err.str().find("2048"), std::string::npos);
  }
  EXPECT_TRUE(err.str().ends_with("\r\x1b[K"));  // erased when it goes
}

}  // namespace
}  // namespace quip::cli
