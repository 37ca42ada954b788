// `quip cache clear` and `quip cache stats` through the binary: clear
// removes quip's files only and says what it removed; stats reports a
// zero-length or truncated segment that no call would otherwise notice.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
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

class CacheCmd : public QuipHome {
 protected:
  // Fills the cache; returns the model folder under cache/kv.
  fs::path fill() {
    run_ok({"--raw", "-m", llama_model(), "-n", "2", "Once upon a time"});
    for (const auto& e : fs::directory_iterator(cache_dir() / "kv")) return e.path();
    ADD_FAILURE() << "no model folder";
    return {};
  }
  static size_t count_files(const fs::path& dir) {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
    return n;
  }
};

TEST_F(CacheCmd, ClearRemovesOnlyQuipsFilesAndSaysWhat) {
  QUIP_REQUIRE_SHARED();
  const fs::path model = fill();
  const size_t segments = count_files(model);
  ASSERT_GT(segments, 0u);
  quip::testing::write_bytes(model / "00000000000000aa.kv", "");  // quip's, broken
  quip::testing::write_bytes(cache_dir() / "kv" / "my-notes.txt", "mine");
  quip::testing::write_bytes(model / "keep.me", "mine");
  ASSERT_EQ(::mkfifo((model / "00000000000000bb.kv").c_str(), 0600), 0);
  const RunResult r = run({"cache", "clear"});
  EXPECT_FALSE(r.timed_out);
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(r.out.starts_with("removed " + std::to_string(segments + 1) + " files (")) << r.out;
  EXPECT_NE(r.out.find(") from " + (cache_dir() / "kv").string() + "\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("quip cache: warning: left 3 entries that quip did not write"), 0u) << r.err;
  EXPECT_TRUE(fs::exists(cache_dir() / "kv" / "my-notes.txt"));
  EXPECT_TRUE(fs::exists(model / "keep.me"));
  EXPECT_TRUE(fs::exists(fs::symlink_status(model / "00000000000000bb.kv")));
  EXPECT_FALSE(fs::exists(model / "00000000000000aa.kv"));
  EXPECT_EQ(count_files(model), 1u);  // keep.me
}

TEST_F(CacheCmd, StatsReportsZeroLengthAndTruncatedSegments) {
  QUIP_REQUIRE_SHARED();
  const fs::path model = fill();
  quip::testing::write_bytes(model / "00000000000000aa.kv", "");
  quip::testing::write_bytes(model / "00000000000000bb.kv", "QUIP-KV");
  const std::string text = run_ok({"cache", "stats"});
  EXPECT_NE(text.find("broken  2 ('quip cache prune' removes them)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("00000000000000aa.kv: zero-length\n"), std::string::npos) << text;
  EXPECT_NE(text.find("00000000000000bb.kv: truncated (7 bytes)\n"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(run_ok({"cache", "stats", "--json"}));
  EXPECT_EQ(j.at("broken").size(), 2u);
  run_ok({"cache", "prune"});
  EXPECT_FALSE(fs::exists(model / "00000000000000aa.kv"));
  EXPECT_FALSE(fs::exists(model / "00000000000000bb.kv"));
  EXPECT_EQ(run_ok({"cache", "stats"}).find("broken"), std::string::npos);
}

}  // namespace
}  // namespace quip::cli
