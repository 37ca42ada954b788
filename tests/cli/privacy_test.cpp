// What quip stores is the user's alone: under the usual umask (022), the
// data and cache folders are 0700 and the files in them 0600 (the database
// and the files SQLite keeps beside it, cache segments, the vocabulary
// index), and folders and files left open to others by an older quip are
// repaired by the next call, quietly.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"
#include "store/store.h"
#include "store/store_helpers.h"

namespace quip::cli {
namespace {

using testing_home::mode_of;
using testing_home::QuipHome;
using testing_home::qwen_model;
using testing_home::RunResult;
namespace fs = std::filesystem;

class Privacy : public QuipHome {
 protected:
  void SetUp() override { old_umask_ = ::umask(022); }  // inherited by quip
  void TearDown() override { ::umask(old_umask_); }

  // Every folder and file under `dir`, `dir` included.
  static std::vector<fs::path> everything_under(const fs::path& dir) {
    std::vector<fs::path> all = {dir};
    for (const auto& e : fs::recursive_directory_iterator(dir)) all.push_back(e.path());
    return all;
  }

  // Each folder under data/ and cache/ is 0700 and each file 0600.
  void expect_private() const {
    size_t files = 0;
    for (const fs::path& top : {data_dir(), cache_dir()}) {
      ASSERT_TRUE(fs::exists(top)) << top;
      for (const fs::path& p : everything_under(top)) {
        if (fs::is_directory(p)) {
          EXPECT_EQ(mode_of(p), 0700u) << p;
        } else {
          EXPECT_EQ(mode_of(p), 0600u) << p;
          ++files;
        }
      }
    }
    EXPECT_GE(files, 3u) << "the database, a cache segment and the vocabulary index";
  }

  // An older quip's modes: folders 0755, files 0644.
  void loosen() const {
    for (const fs::path& top : {data_dir(), cache_dir()}) {
      for (const fs::path& p : everything_under(top)) {
        ::chmod(p.c_str(), fs::is_directory(p) ? 0755 : 0644);
      }
    }
  }

  mode_t old_umask_ = 0;
};

TEST_F(Privacy, FoldersAre0700AndFiles0600) {
  QUIP_REQUIRE_SHARED();
  run_ok({"-m", qwen_model(), "-n", "3", "What is 1+1?"});
  ASSERT_TRUE(fs::exists(db_file()));
  EXPECT_EQ(mode_of(db_file()), 0600u);
  expect_private();
}

TEST_F(Privacy, TheDatabaseFilesBesideItAre0600) {
  // A connection holds the database open, so its -wal and -shm exist.
  auto store = store::Store::open(db_file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  ASSERT_TRUE(store->record_turn(store::testing::sample_turn(1)).ok());
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const fs::path p = db_file().string() + suffix;
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_EQ(mode_of(p), 0600u) << p;
  }
  EXPECT_EQ(mode_of(data_dir()), 0700u);
}

TEST_F(Privacy, AnOlderQuipsModesAreRepaired) {
  QUIP_REQUIRE_SHARED();
  run_ok({"-m", qwen_model(), "-n", "3", "What is 1+1?"});
  loosen();
  ASSERT_EQ(mode_of(db_file()), 0644u);
  run_ok({"-m", qwen_model(), "-n", "3", "What is 2+2?"});
  expect_private();
}

// Reading commands repair the database's modes too (they write nothing).
TEST_F(Privacy, ReadingTheDatabaseRepairsItsModes) {
  QUIP_REQUIRE_SHARED();
  run_ok({"-m", qwen_model(), "-n", "3", "What is 1+1?"});
  ::chmod(data_dir().c_str(), 0755);
  ::chmod(db_file().c_str(), 0644);
  run_ok({"log"});
  EXPECT_EQ(mode_of(data_dir()), 0700u);
  EXPECT_EQ(mode_of(db_file()), 0600u);
}

TEST_F(Privacy, CacheStatsRepairsTheCacheFolder) {
  QUIP_REQUIRE_SHARED();
  run_ok({"-m", qwen_model(), "-n", "3", "What is 1+1?"});
  loosen();
  run_ok({"cache", "stats"});
  for (const fs::path& p : everything_under(cache_dir() / "kv")) {
    EXPECT_EQ(mode_of(p), fs::is_directory(p) ? 0700u : 0600u) << p;
  }
}

}  // namespace
}  // namespace quip::cli
