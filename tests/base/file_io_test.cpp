// Opening only regular files, without ever blocking; reading streams to a
// bound; private folders and files. Each "never blocks" case runs in a child
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

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
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

// Under the usual umask, what quip creates is 0700 (folders) and 0600
// (files), and looser modes left by older versions are repaired.
class PrivateModes : public ::testing::Test {
 protected:
  void SetUp() override { old_umask_ = ::umask(022); }
  void TearDown() override { ::umask(old_umask_); }
  mode_t old_umask_ = 0;
};

TEST_F(PrivateModes, FoldersAreCreated0700) {
  TempDir dir;
  ASSERT_TRUE(make_private_dir(dir / "a" / "b" / "c").ok());
  EXPECT_EQ(mode_of(dir / "a"), 0700u);
  EXPECT_EQ(mode_of(dir / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(dir / "a" / "b" / "c"), 0700u);
  testing::write_bytes(dir / "file", "x");
  EXPECT_FALSE(make_private_dir(dir / "file").ok()) << "a file where a folder should be";
}

TEST_F(PrivateModes, LooseFoldersAndFilesAreRepaired) {
  TempDir dir;
  fs::create_directories(dir / "cache" / "kv" / "model");
  for (const char* p : {"cache", "cache/kv", "cache/kv/model"}) ::chmod((dir / p).c_str(), 0755);
  ::chmod(dir.path().c_str(), 0755);
  // The folder and the parents it names as quip's, and no further.
  ASSERT_TRUE(make_private_dir(dir / "cache" / "kv" / "model", 2).ok());
  EXPECT_EQ(mode_of(dir / "cache" / "kv" / "model"), 0700u);
  EXPECT_EQ(mode_of(dir / "cache" / "kv"), 0700u);
  EXPECT_EQ(mode_of(dir / "cache"), 0700u);
  EXPECT_EQ(mode_of(dir.path()), 0755u) << "a folder that is not quip's was changed";

  testing::write_bytes(dir / "db", "x");
  ::chmod((dir / "db").c_str(), 0644);
  make_private(dir / "db");
  EXPECT_EQ(mode_of(dir / "db"), 0600u);
  make_private(dir / "missing");  // quiet
}

TEST_F(PrivateModes, SharedStickyFoldersAreNeverChanged) {
  TempDir dir;
  fs::create_directories(dir / "shared" / "quip");
  ::chmod((dir / "shared").c_str(), 01777);
  ASSERT_TRUE(make_private_dir(dir / "shared" / "quip", 1).ok());
  EXPECT_EQ(mode_of(dir / "shared"), 01777u);
  EXPECT_EQ(mode_of(dir / "shared" / "quip"), 0700u);
}

}  // namespace
}  // namespace quip
