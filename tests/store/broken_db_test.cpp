// A catalogue of broken database files: each is refused with one line naming
// the file, or read as far as it is sound; none crashes (the ASan+UBSan
// build runs this catalogue too), and none is "repaired" by overwriting it.
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <random>

#include "store/store.h"
#include "store/store_helpers.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::store {
namespace {

namespace fs = std::filesystem;
using quip::testing::read_file;
using quip::testing::TempDir;
using quip::testing::write_bytes;
using testing::expect_one_line_about;
using testing::sample_turn;
using testing::sql_value;

// A healthy database of several pages: five conversations of three turns.
void make_database(const fs::path& file) {
  auto s = Store::open(file);
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (int c = 0; c < 5; ++c) {
    int64_t id = 0;
    for (int t = 0; t < 3; ++t) {
      TurnRecord turn = sample_turn(c * 3 + t);
      turn.conversation = id;
      turn.prompt_tokens.assign(300, c * 3 + t);
      auto r = s->record_turn(turn);
      ASSERT_TRUE(r.ok()) << r.error().message;
      id = r->conversation;
    }
  }
}  // closing the last connection moves everything into the main file

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string b(n, '\0');
  for (char& c : b) c = static_cast<char>(rng() & 0xFF);
  return b;
}

// Every operation on `file`: each succeeds or fails with one line naming the
// file (or "no conversation N"). Returns whether any failed.
bool exercise(const fs::path& file) {
  bool failed = false;
  auto check = [&](const Error& e) {
    failed = true;
    if (e.message.starts_with("no conversation ")) return;
    expect_one_line_about(e, file);
  };
  for (bool writable : {false, true}) {
    auto s = writable ? Store::open(file) : Store::open_read_only(file);
    if (!s) {
      check(s.error());
      continue;
    }
    if (auto list = s->list(0); !list) check(list.error());
    for (int64_t id = 1; id <= 6; ++id) {
      if (auto f = s->find(id); !f) check(f.error());
      if (auto t = s->turns(id); !t) check(t.error());
    }
    if (auto l = s->last_turn_in_session("session-a"); !l) check(l.error());
    if (writable) {
      TurnRecord t = sample_turn(1);
      t.conversation = 2;
      if (auto r = s->record_turn(t); !r) check(r.error());
      if (auto r = s->fork(1, 1, "x"); !r) check(r.error());
      if (auto r = s->remove(3); !r) check(r.error());
    }
  }
  return failed;
}

// A file that is not a database at all is refused on open, untouched.
void expect_refused(const fs::path& file, const std::string& reason) {
  const std::string before = read_file(file);
  for (bool writable : {false, true}) {
    auto s = writable ? Store::open(file) : Store::open_read_only(file);
    ASSERT_FALSE(s.ok()) << file;
    expect_one_line_about(s.error(), file);
    EXPECT_NE(s.error().message.find(reason), std::string::npos) << s.error().message;
  }
  EXPECT_EQ(read_file(file), before) << "the file was changed";
}

TEST(BrokenStoreDb, GarbageIsNotADatabase) {
  TempDir dir;
  write_bytes(dir / "random.db", random_bytes(8192, 1));
  expect_refused(dir / "random.db", "file is not a database");
  write_bytes(dir / "text.db", "just some text\n");
  expect_refused(dir / "text.db", "file is not a database");
  write_bytes(dir / "one-byte.db", "S");
  expect_refused(dir / "one-byte.db", "file is not a database");
  // The magic string, then nonsense (page size 0x4242, ...).
  write_bytes(dir / "magic.db", std::string("SQLite format 3\0", 16) + std::string(4080, 'B'));
  expect_refused(dir / "magic.db", "file is not a database");
}

TEST(BrokenStoreDb, AnotherProgramsDatabaseIsRefusedUntouched) {
  TempDir dir;
  const fs::path file = dir / "other.db";
  sql_value(file, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
  expect_refused(file, "not a quip conversation database");
  EXPECT_EQ(sql_value(file, "SELECT COUNT(*) FROM sqlite_schema"), "1");

  const fs::path tagged = dir / "tagged.db";
  sql_value(tagged, "PRAGMA application_id = 1234");
  expect_refused(tagged, "not a quip conversation database");
  const fs::path versioned = dir / "versioned.db";
  sql_value(versioned, "PRAGMA user_version = 1");  // a version, no quip tag
  expect_refused(versioned, "not a quip conversation database");
}

TEST(BrokenStoreDb, AFolderWhereTheFileShouldBe) {
  TempDir dir;
  fs::create_directories(dir / "quip.db");
  for (bool writable : {false, true}) {
    auto s = writable ? Store::open(dir / "quip.db") : Store::open_read_only(dir / "quip.db");
    ASSERT_FALSE(s.ok());
    expect_one_line_about(s.error(), dir / "quip.db");
  }
  // A file where its folder should be.
  write_bytes(dir / "file", "x");
  auto s = Store::open(dir / "file/quip.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
  EXPECT_NE(s.error().message.find((dir / "file").string()), std::string::npos);
}

TEST(BrokenStoreDb, TruncatedFilesAreErrorsNotCrashes) {
  TempDir dir;
  make_database(dir / "good.db");
  const std::string good = read_file(dir / "good.db");
  ASSERT_GE(good.size(), 4u * 4096) << "the sample should span several pages";
  int detected = 0, cases = 0;
  for (size_t size : {size_t{0}, size_t{50}, size_t{100}, size_t{4095}, size_t{4096},
                      size_t{4097}, good.size() / 2, good.size() - 4096, good.size() - 1}) {
    const fs::path file = dir / ("cut-" + std::to_string(size) + ".db");
    write_bytes(file, good.substr(0, size));
    SCOPED_TRACE(file.string());
    if (exercise(file)) ++detected;
    ++cases;
  }
  // All but the empty file (an empty database) lose pages that the schema
  // or the turns need.
  EXPECT_GE(detected, cases - 1);
}

// A damaged schema makes SQLite quote it, line breaks and all: the error
// is still one line (found by fuzz_store).
TEST(BrokenStoreDb, ADamagedSchemaIsAOneLineError) {
  TempDir dir;
  make_database(dir / "good.db");
  std::string bad = read_file(dir / "good.db");
  const size_t at = bad.find("model_fingerprint TEXT NOT NULL");
  ASSERT_NE(at, std::string::npos);
  bad[at + std::string("model_finger").size()] = '[';  // an unterminated [identifier
  write_bytes(dir / "bad.db", bad);
  EXPECT_TRUE(exercise(dir / "bad.db"));
}

TEST(BrokenStoreDb, FlippedBytesAreErrorsNotCrashes) {
  TempDir dir;
  make_database(dir / "good.db");
  const std::string good = read_file(dir / "good.db");
  std::mt19937 rng(7);
  int detected = 0;
  constexpr int kCases = 120;
  for (int i = 0; i < kCases; ++i) {
    std::string bad = good;
    // Half the cases in the first page (header and schema), where a flip
    // matters most; the rest anywhere.
    const size_t at = i % 2 == 0 ? rng() % 4096 : rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    const fs::path file = dir / ("flip-" + std::to_string(i) + ".db");
    write_bytes(file, bad);
    SCOPED_TRACE(file.string() + " byte " + std::to_string(at));
    if (exercise(file)) ++detected;
    fs::remove(file);
    fs::remove(file.string() + "-wal");
    fs::remove(file.string() + "-shm");
  }
  EXPECT_GT(detected, 0);  // some flips must have been noticed
}

TEST(BrokenStoreDb, GarbageBesideTheDatabaseIsIgnored) {
  // A -wal or -shm file of garbage (a crash of something else, a copy gone
  // wrong): SQLite checks the log's checksums and rebuilds the index, so the
  // committed turns read as they were.
  TempDir dir;
  const fs::path file = dir / "quip.db";
  make_database(file);
  write_bytes(file.string() + "-wal", random_bytes(10000, 2));
  write_bytes(file.string() + "-shm", random_bytes(32768, 3));
  auto s = Store::open(file);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto list = s->list(0);
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->size(), 5u);
  EXPECT_EQ(s->turns(1)->size(), 3u);
}

// Rows that the schema's checks would refuse, written with those checks off
// (as a bug or another tool might): reading them is an error that says
// which turn and what is wrong, not a crash or a wrapped-around number.
TEST(BrokenStoreDb, RowsWithImpossibleValuesAreReported) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  {
    auto s = Store::open(file);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s->record_turn(sample_turn(1)).ok());
    ASSERT_TRUE(s->record_turn(sample_turn(2)).ok());
  }
  auto run = [&](const std::string& update) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, ("PRAGMA ignore_check_constraints = 1; " + update).c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  };
  run("UPDATE turns SET prompt_tokens = x'0102030405' WHERE conversation = 1");
  auto s = Store::open(file);
  ASSERT_TRUE(s.ok());
  auto turns = s->turns(1);
  ASSERT_FALSE(turns.ok());
  expect_one_line_about(turns.error(), file);
  EXPECT_NE(turns.error().message.find("conversation 1 turn 1: prompt tokens: 5 bytes"),
            std::string::npos)
      << turns.error().message;
  EXPECT_TRUE(s->turns(2).ok());  // the other conversation is fine

  run("UPDATE turns SET turn = 4294967297 WHERE conversation = 2");
  auto big = s->turns(2);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("turn number 4294967297 is out of range"),
            std::string::npos)
      << big.error().message;
  auto list = s->list(0);
  EXPECT_TRUE(list.ok());  // listing does not read the turns themselves
  // Appending after the impossible turn is refused, not wrapped around.
  TurnRecord t = sample_turn(3);
  t.conversation = 2;
  auto r = s->record_turn(t);
  ASSERT_FALSE(r.ok());
  expect_one_line_about(r.error(), file);
}

}  // namespace
}  // namespace quip::store
