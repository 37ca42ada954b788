// Running the quip binary from tests: exit status, stdout and stderr
// captured through files (no pipe to deadlock on however much it prints).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quip::testing {

// A folder under the system temp folder, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int status = -1;         // the exit status, or 128 + signal number
  bool killed = false;     // ended by a signal rather than exit()
  bool timed_out = false;  // killed after RunOptions::timeout_ms
  std::string out;         // empty when stdout went elsewhere
  std::string err;
};

struct RunOptions {
  std::string stdin_from = "/dev/null";
  std::string stdout_to;  // a file to send stdout to instead of capturing it
  // A signal to send the process (if not 0) once it has written something
  // to stdout (a file here, so not with stdout_to).
  int signal_on_output = 0;
  // Environment variables to set (or, with an empty value, to remove) on top
  // of this process's own, e.g. {{"QUIP_HOME", dir}}.
  std::vector<std::pair<std::string, std::string>> env = {};
  // Kill the process (SIGKILL) if it runs longer than this (0: no limit),
  // setting RunResult::timed_out: a hang fails the test instead of hanging it.
  int timeout_ms = 0;
  // stdout is a pipe whose reader has already gone: every write fails with
  // EPIPE (or kills with SIGPIPE), as with `quip ... | head -c 0`.
  bool stdout_closed_pipe = false;
  // stderr goes where stdout goes (2>&1): RunResult::out holds both.
  bool stderr_to_stdout = false;
};

// Runs QUIP_BINARY with `args`; a start failure is a test failure.
RunResult run_quip(const std::vector<std::string>& args, const RunOptions& options = {});

// This process's environment with `changes` applied, as "NAME=value"
// strings: a variable changed to an empty value is removed.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& changes);

// Runs command[0] (a path) with the arguments that follow, as run_quip does.
RunResult run_command(const std::vector<std::string>& command, const RunOptions& options = {});

// Runs QUIP_SYNTH_BINARY to write SHAPE's random-weight model, with
// quip-synth's `flags`, to `path`. A failure is a test failure; returns
// whether the file was written.
bool synthesize(const std::filesystem::path& path, const std::string& shape,
                const std::vector<std::string>& flags = {});

// Runs quip and checks the error contract: exit status `status`, nothing on
// stdout, exactly one line on stderr. Returns the run for further checks.
RunResult expect_failure(const std::vector<std::string>& args, int status,
                         const RunOptions& options = {});

// "quip 'arg' ...", the exit status and stderr, for failure messages.
std::string describe(const std::vector<std::string>& args, const RunResult& r);

size_t count_lines(std::string_view text);
std::vector<std::string> split_lines(const std::string& text);

// Writes `bytes` to `path` (a test failure if it cannot).
void write_bytes(const std::filesystem::path& path, std::string_view bytes);

}  // namespace quip::testing
