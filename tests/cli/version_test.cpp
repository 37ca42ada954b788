// quip --version: the version CMake declares, the commit git names for the
// source folder, the build type, and the kernels the CPU (or QUIP_KERNELS)
// selects.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

using quip::testing::RunResult;

class Version : public testing_home::QuipHome {};

TEST_F(Version, SaysWhatWasBuiltAndWhatRunsIt) {
  const std::string out = run_ok({"--version"});
  const std::vector<std::string> lines = quip::testing::split_lines(out);
  ASSERT_EQ(lines.size(), 4u) << out;
  EXPECT_EQ(lines[0], "quip " QUIP_PROJECT_VERSION);
  EXPECT_EQ(lines[2].rfind("build " QUIP_CMAKE_BUILD_TYPE ", ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("kernels ", 0), 0u) << lines[3];
  EXPECT_EQ(run_ok({"-V"}), out);

  // The commit is git's for the source folder (when it is a checkout).
  ASSERT_EQ(lines[1].rfind("commit ", 0), 0u) << lines[1];
  const std::filesystem::path source = QUIP_SOURCE_DIR;
  if (std::filesystem::exists(source / ".git")) {
    const RunResult git = quip::testing::run_command(
        {"/usr/bin/env", "git", "-C", source.string(), "rev-parse", "--short=12", "HEAD"});
    ASSERT_EQ(git.status, 0) << git.err;
    const std::string head = git.out.substr(0, git.out.find('\n'));
    EXPECT_EQ(lines[1].substr(7, head.size()), head) << lines[1];
  }
}

TEST_F(Version, NamesTheKernelsQuipKernelsChooses) {
  const RunResult r = run_with_env({"QUIP_KERNELS=ref"}, {"--version"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_NE(r.out.find("\nkernels ref (detected: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace quip::cli
