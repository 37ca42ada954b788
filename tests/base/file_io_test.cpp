// Opening only regular files, without ever blocking; reading streams to a
// bound. Each "never blocks" case runs in a child
// process with an alarm, so that a regression fails instead of hanging.
#include "base/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "support/run_quip.h"

namespace quip {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Runs `f` in a child killed after `seconds`; true when it returned true in
// time (false when it failed, blocked, or crashed).
bool in_time(const std::function<bool()>& f, unsigned seconds = 10) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    ::_exit(f() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(FileIo, OpensARegularFileForReading) {
  TempDir dir;
  testing::write_bytes(dir / "f", "hello");
  struct stat st {};
  auto fd = open_regular_file(dir / "f", &st);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_EQ(st.st_size, 5);
  EXPECT_EQ(::fcntl(fd->get(), F_GETFL) & O_NONBLOCK, 0) << "left non-blocking";
  char buf[8];
  EXPECT_EQ(::read(fd->get(), buf, sizeof buf), 5);
  auto text = read_regular_file(dir / "f", 100);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello");
}

TEST(FileIo, RefusesAFifoWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_TRUE(in_time([&] {
    auto fd = open_regular_file(dir / "fifo");
    return !fd.ok() &&
           fd.error().message.find("is a FIFO, expected a regular file") != std::string::npos;
  })) << "open_regular_file blocked on a FIFO or accepted it";
  EXPECT_TRUE(in_time([&] { return !read_regular_file(dir / "fifo", 100).ok(); }));
  EXPECT_TRUE(in_time([&] { return !check_regular_if_exists(dir / "fifo").ok(); }));
}

TEST(FileIo, RefusesDevicesAndFolders) {
  TempDir dir;
  const auto refused = [](const fs::path& p, const std::string& says) {
    auto fd = open_regular_file(p);
    if (fd.ok()) return ::testing::AssertionFailure() << p << " was accepted";
    if (fd.error().message.find(says) == std::string::npos) {
      return ::testing::AssertionFailure() << fd.error().message;
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(refused("/dev/zero", "is a character device, expected a regular file"));
  EXPECT_TRUE(refused(dir.path(), "is a directory, expected a file"));
  EXPECT_TRUE(refused(dir / "missing", "missing: cannot open: No such file"));
  EXPECT_TRUE(refused("", "empty file name"));
  EXPECT_TRUE(check_regular_if_exists(dir / "missing").ok());
  EXPECT_FALSE(check_regular_if_exists(dir.path()).ok());
}

TEST(FileIo, NamesWithControlCharactersArePrintable) {
  auto fd = open_regular_file("/nonexistent/\x1b]0;title\x07.gguf");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().message.find('\x1b'), std::string::npos) << fd.error().message;
  EXPECT_NE(fd.error().message.find("\\x1B]0;title\\x07.gguf"), std::string::npos);
}

TEST(FileIo, ReadBoundedStopsAtTheLimit) {
  // An endless source: /dev/zero gives 64 KiB per read, forever.
  const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(zero, 0);
  UniqueFd closer(zero);
  auto r = read_bounded(zero, "stdin", 1 << 20, " (set LIMIT)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "stdin: longer than 1 MiB (set LIMIT)");

  TempDir dir;
  testing::write_bytes(dir / "f", std::string(1000, 'x'));
  EXPECT_TRUE(read_regular_file(dir / "f", 1000).ok());
  auto big = read_regular_file(dir / "f", 999, " (hint)");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("longer than 999 B (hint)"), std::string::npos);
}

TEST(FileIo, HumanSizes) {
  EXPECT_EQ(human_size(0), "0 B");
  EXPECT_EQ(human_size(999), "999 B");
  EXPECT_EQ(human_size(1024), "1 KiB");
  EXPECT_EQ(human_size(uint64_t{64} << 20), "64 MiB");
  EXPECT_EQ(human_size(uint64_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace quip
