// Settings that used to be dropped in silence: a config.toml that is a
// folder (or anything but a file) was ignored, and QUIP_HOME= (empty) fell
// back to the real home folders, writing a script's or a test's
// conversations into the user's own. Both are usage errors now, as are the
// other quip variables set to nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

using testing_home::llama_model;
using testing_home::QuipHome;
using testing_home::RunResult;
namespace fs = std::filesystem;

TEST_F(QuipHome, AConfigFileThatIsAFolderIsAnError) {
  QUIP_REQUIRE_SHARED();
  fs::create_directories(home() / "config" / "config.toml");
  expect_failure({"-m", llama_model(), "hi"}, kExitUsage,
                 "config.toml: is a directory, expected a file");
  expect_failure({"cache", "stats"}, kExitUsage, "config.toml: is a directory");
  fs::create_directories(home() / "folder");
  expect_failure({"-m", llama_model(), "--config", (home() / "folder").string(), "hi"}, kExitUsage,
                 "folder: is a directory");
}

TEST_F(QuipHome, ADanglingConfigLinkIsAnError) {
  QUIP_REQUIRE_SHARED();
  fs::create_directories(home() / "config");
  fs::create_symlink(home() / "gone.toml", home() / "config" / "config.toml");
  expect_failure({"-m", llama_model(), "hi"}, kExitUsage, "config.toml: cannot open");
}

// run_quip drops a variable set to "", so these go through env(1).
TEST_F(QuipHome, AnEmptyQuipHomeIsAUsageError) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::vector<std::string>> commands = {{"-m", llama_model(), "-n", "1", "hi"},
                                                          {"log"},
                                                          {"show", "1"},
                                                          {"cache", "stats"},
                                                          {"cache", "clear"},
                                                          {"tokenize", "-m", llama_model(), "hi"}};
  for (const auto& args : commands) {
    // HOME points at a folder of the test's: nothing may be written there.
    const RunResult r =
        run_with_env({"QUIP_HOME=", "HOME=" + (home() / "real-home").string()}, args);
    EXPECT_EQ(r.status, kExitUsage) << quip::testing::describe(args, r);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "quip: QUIP_HOME is set but empty: give it a value, or unset it\n");
  }
  EXPECT_FALSE(fs::exists(home() / "real-home")) << "wrote into the real home folders";
  // Help still works.
  EXPECT_EQ(run_with_env({"QUIP_HOME="}, {"--help"}).status, kExitOk);
}

TEST_F(QuipHome, OtherEmptyQuipVariablesAreUsageErrors) {
  QUIP_REQUIRE_SHARED();
  for (const char* name : {"QUIP_CONFIG", "QUIP_SESSION", "QUIP_MAX_INPUT"}) {
    const RunResult r = run_with_env({std::string(name) + "="}, {"-m", llama_model(), "hi"});
    EXPECT_EQ(r.status, kExitUsage) << name << ": " << r.err;
    EXPECT_EQ(r.err,
              std::string("quip: ") + name + " is set but empty: give it a value, or unset it\n");
  }
}

}  // namespace
}  // namespace quip::cli
