#include "support/run_quip.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/text.h"
#include "support/shared.h"

extern char** environ;

namespace quip::testing {

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool changed =
        std::any_of(changes.begin(), changes.end(), [&](const auto& c) { return c.first == name; });
    if (!changed) env.emplace_back(entry);
  }
  for (const auto& [name, value] : changes) {
    if (!value.empty()) env.push_back(name + "=" + value);
  }
  return env;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("quip-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

RunResult run_quip(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> command = {QUIP_BINARY};
  command.insert(command.end(), args.begin(), args.end());
  return run_command(command, options);
}

bool synthesize(const std::filesystem::path& path, const std::string& shape,
                const std::vector<std::string>& flags) {
  std::vector<std::string> command = {QUIP_SYNTH_BINARY, shape, path.string()};
  command.insert(command.end(), flags.begin(), flags.end());
  const RunResult r = run_command(command);
  EXPECT_EQ(r.status, 0) << "quip-synth " << shape << ": " << r.err;
  return r.status == 0;
}

RunResult run_command(const std::vector<std::string>& command, const RunOptions& options) {
  RunResult r;
  TempDir dir;
  const std::string out_path =
      options.stdout_to.empty() ? (dir / "stdout").string() : options.stdout_to;
  const std::string err_path = (dir / "stderr").string();

  std::vector<std::string> argv_strings = command;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, options.stdin_from.c_str(), O_RDONLY, 0);
  int broken_pipe[2] = {-1, -1};
  if (options.stdout_closed_pipe) {
    if (::pipe(broken_pipe) != 0) {
      ADD_FAILURE() << "pipe: " << std::strerror(errno);
      return r;
    }
    ::close(broken_pipe[0]);  // no reader, ever
    posix_spawn_file_actions_adddup2(&actions, broken_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, broken_pipe[1]);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (options.stderr_to_stdout) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  pid_t pid;
  std::vector<std::string> env_strings = environment_with(options.env);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  // The child starts with default signal dispositions (SIGPIPE included),
  // whatever this process does with them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (broken_pipe[1] >= 0) ::close(broken_pipe[1]);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    return r;
  }
  if (options.signal_on_output != 0) {
    std::error_code ec;
    for (int waited = 0; waited < 60'000; waited += 5) {
      if (std::filesystem::file_size(out_path, ec) > 0 && !ec) break;
      int ignored;
      if (::waitpid(pid, &ignored, WNOHANG) == pid) {
        ADD_FAILURE() << argv[0] << " exited before writing anything";
        return r;
      }
      ::usleep(5000);
    }
    ::kill(pid, options.signal_on_output);
  }
  int wstatus = 0;
  if (options.timeout_ms > 0) {
    for (int waited = 0;; waited += 5) {
      const pid_t done = ::waitpid(pid, &wstatus, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) {
        ADD_FAILURE() << "waitpid: " << std::strerror(errno);
        return r;
      }
      if (waited >= options.timeout_ms) {
        ::kill(pid, SIGKILL);
        r.timed_out = true;
        while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      ::usleep(5000);
    }
  } else {
    while (::waitpid(pid, &wstatus, 0) < 0) {
      if (errno != EINTR) {
        ADD_FAILURE() << "waitpid: " << std::strerror(errno);
        return r;
      }
    }
  }
  if (WIFEXITED(wstatus)) {
    r.status = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    r.status = 128 + WTERMSIG(wstatus);
    r.killed = true;
  }
  if (options.stdout_to.empty() && !options.stdout_closed_pipe) r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

std::string describe(const std::vector<std::string>& args, const RunResult& r) {
  std::string s = "quip";
  for (const std::string& a : args) s += " '" + printable(a) + "'";
  return s + "\n  exit status " + std::to_string(r.status) + (r.timed_out ? " (timed out)" : "") +
         "\n  stderr: " + r.err;
}

RunResult expect_failure(const std::vector<std::string>& args, int status,
                         const RunOptions& options) {
  const RunResult r = run_quip(args, options);
  EXPECT_EQ(r.status, status) << describe(args, r);
  EXPECT_EQ(r.out, "") << describe(args, r);
  EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
  EXPECT_TRUE(r.err.ends_with("\n")) << describe(args, r);
  return r;
}

size_t count_lines(std::string_view text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  // fwrite's buffer must not be null, even for 0 bytes.
  const size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int closed = std::fclose(f);
  ASSERT_EQ(written, bytes.size()) << path;
  ASSERT_EQ(closed, 0) << path;
}

}  // namespace quip::testing
