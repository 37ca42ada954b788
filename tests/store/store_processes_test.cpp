// The store under real conditions, with real processes: eight recording at
// once (on a new database, and onto one conversation), writers killed with
// SIGKILL mid-write, a read-only folder or file, a full disk.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "store/store.h"
#include "store/store_helpers.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::store {
namespace {

namespace fs = std::filesystem;
using quip::testing::TempDir;
using testing::expect_one_line_about;
using testing::in_child;
using testing::sample_turn;
using testing::sql_value;

constexpr int kProcesses = 8;

// Writes `text` to `file`, for a child to tell the test what went wrong.
void note(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::app) << text << '\n';
}

// note() and a child's exit status.
int failed(const fs::path& file, const std::string& text) {
  note(file, text);
  return 1;
}

std::string read_notes(const fs::path& file) {
  std::error_code ec;
  return fs::exists(file, ec) ? quip::testing::read_file(file) : "";
}

// Starts kProcesses children that all wait on one pipe, so that they start
// their work at the same moment; runs `work(i)` in child i and returns the
// exit statuses.
std::vector<int> run_together(const std::function<int(int)>& work) {
  int gate[2];
  CHECK(::pipe(gate) == 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(work(i));
    }
    pids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // end of file: every child starts
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return statuses;
}

TEST(StoreProcesses, EightProcessesCreateAndRecordAtOnce) {
  TempDir dir;
  const fs::path file = dir / "data/quip.db";  // not there yet: all race to create it
  const fs::path notes = dir / "notes";
  constexpr int kEach = 6;
  const std::vector<int> statuses = run_together([&](int i) {
    auto s = Store::open(file);
    if (!s) return failed(notes, s.error().message);
    for (int k = 0; k < kEach; ++k) {
      TurnRecord t = sample_turn(k, "child-" + std::to_string(i));
      t.answer = "child " + std::to_string(i) + " turn " + std::to_string(k);
      auto r = s->record_turn(t);
      if (!r) return failed(notes, r.error().message);
    }
    return 0;
  });
  for (int st : statuses) EXPECT_EQ(st, 0) << read_notes(notes);

  auto s = Store::open_read_only(file);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto list = s->list(0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), size_t{kProcesses * kEach});
  std::set<std::string> answers;
  for (const ConversationSummary& c : *list) {
    auto turns = s->turns(c.id);
    ASSERT_TRUE(turns.ok());
    ASSERT_EQ(turns->size(), 1u);
    answers.insert(turns->at(0).answer);
  }
  EXPECT_EQ(answers.size(), size_t{kProcesses * kEach});
  EXPECT_EQ(sql_value(file, "PRAGMA integrity_check"), "ok");
}

TEST(StoreProcesses, EightProcessesAppendToOneConversation) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  const fs::path notes = dir / "notes";
  int64_t id = 0;
  {
    auto s = Store::open(file);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto first = s->record_turn(sample_turn(0));
    ASSERT_TRUE(first.ok());
    id = first->conversation;
  }  // closed before forking: a connection must not cross a fork
  constexpr int kEach = 12;
  const std::vector<int> statuses = run_together([&](int i) {
    auto s = Store::open(file);
    if (!s) return failed(notes, s.error().message);
    for (int k = 0; k < kEach; ++k) {
      TurnRecord t = sample_turn(k);
      t.conversation = id;
      t.answer = std::to_string(i) + ":" + std::to_string(k);
      auto r = s->record_turn(t);
      if (!r) return failed(notes, r.error().message);
      // A reader in the middle of the writes sees a consistent conversation.
      if (k == kEach / 2) {
        auto turns = s->turns(id);
        if (!turns) return failed(notes, turns.error().message);
      }
    }
    return 0;
  });
  for (int st : statuses) EXPECT_EQ(st, 0) << read_notes(notes);

  auto s = Store::open_read_only(file);
  ASSERT_TRUE(s.ok());
  auto turns = s->turns(id);
  ASSERT_TRUE(turns.ok()) << turns.error().message;
  ASSERT_EQ(turns->size(), size_t{1 + kProcesses * kEach});
  std::map<int, int> last_k;  // per process: its turns are in its own order
  for (size_t n = 0; n < turns->size(); ++n) {
    const TurnRecord& t = (*turns)[n];
    EXPECT_EQ(t.turn, static_cast<int>(n) + 1);  // 1..N: no gap, no duplicate
    EXPECT_EQ(t.parent_turn, static_cast<int>(n));
    if (n == 0) continue;
    const int i = std::stoi(t.answer.substr(0, t.answer.find(':')));
    const int k = std::stoi(t.answer.substr(t.answer.find(':') + 1));
    if (last_k.count(i)) {
      EXPECT_EQ(k, last_k[i] + 1) << t.answer;
    }
    last_k[i] = k;
  }
  EXPECT_EQ(last_k.size(), size_t{kProcesses});
}

// Eight processes continue turn 1 of one conversation at once, as eight
// `quip --cid ID` calls that all read turn 1 before any recorded: one turn
// follows turn 1 in the conversation, the others are branches after turn 1,
// and no turn claims a parent it was not computed from.
TEST(StoreProcesses, EightContinuationsOfOneTurnBranch) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  const fs::path notes = dir / "notes";
  int64_t id = 0;
  {
    auto s = Store::open(file);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto first = s->record_turn(sample_turn(0));
    ASSERT_TRUE(first.ok());
    id = first->conversation;
  }
  const std::vector<int> statuses = run_together([&](int i) {
    auto s = Store::open(file);
    if (!s) return failed(notes, s.error().message);
    TurnRecord t = sample_turn(i + 1);
    t.conversation = id;
    t.answer = "from turn 1, call " + std::to_string(i);
    auto r = s->record_continuation(t, 1, false);
    if (!r) return failed(notes, r.error().message);
    return 0;
  });
  for (int st : statuses) EXPECT_EQ(st, 0) << read_notes(notes);

  auto s = Store::open_read_only(file);
  ASSERT_TRUE(s.ok());
  auto list = s->list(0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), size_t{kProcesses});
  std::set<std::string> answers;
  for (const ConversationSummary& c : *list) {
    auto turns = s->turns(c.id);
    ASSERT_TRUE(turns.ok());
    ASSERT_EQ(turns->size(), 2u) << "conversation " << c.id;
    EXPECT_EQ(turns->at(0).answer, "answer 0");
    EXPECT_EQ(turns->at(1).parent_turn, 1);
    answers.insert(turns->at(1).answer);
    if (c.id != id) {
      EXPECT_EQ(c.forked_from, std::make_optional(std::pair<int64_t, int>(id, 1)));
    }
  }
  EXPECT_EQ(answers.size(), size_t{kProcesses});  // each call's turn, once
  auto forks = s->forks_of(id);
  ASSERT_TRUE(forks.ok());
  EXPECT_EQ(forks->size(), size_t{kProcesses - 1});
}

// A turn whose fields all derive from `n`, so that a partly written one
// would show.
TurnRecord checkable_turn(int n) {
  TurnRecord t = sample_turn(n);
  t.answer = std::to_string(n);
  t.prompt_tokens.assign(3000, n);
  t.answer_tokens.assign(static_cast<size_t>(n % 7) * 100, -n);
  return t;
}

void expect_whole(const TurnRecord& t) {
  const int n = std::stoi(t.answer);
  const TurnRecord want = checkable_turn(n);
  EXPECT_EQ(t.prompt_tokens, want.prompt_tokens) << n;
  EXPECT_EQ(t.answer_tokens, want.answer_tokens) << n;
  EXPECT_EQ(t.messages_json, want.messages_json) << n;
}

TEST(StoreProcesses, AWriterKilledMidWriteLeavesTheDatabaseConsistent) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  for (int round = 0; round < 10; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // New conversations, appends and forks, as fast as it can, until killed.
      auto s = Store::open(file);
      if (!s) ::_exit(1);
      int64_t last = 0;
      for (int n = round * 100000;; ++n) {
        TurnRecord t = checkable_turn(n);
        t.conversation = n % 3 == 0 ? 0 : last;
        auto r = s->record_turn(t);
        if (!r) ::_exit(2);
        last = r->conversation;
        if (n % 5 == 0 && !s->fork(last, 1, "forks").ok()) ::_exit(3);
      }
    }
    // The first rounds kill during creation and migration, the later ones
    // during turns.
    std::this_thread::sleep_for(std::chrono::milliseconds(round < 3 ? round * 2 : 15 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own: " << WEXITSTATUS(status);

    if (!fs::exists(file)) continue;  // killed before SQLite created it
    EXPECT_EQ(sql_value(file, "PRAGMA integrity_check"), "ok") << "round " << round;
    auto s = Store::open(file);  // what the next call does: must work
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto list = s->list(0);
    ASSERT_TRUE(list.ok()) << list.error().message;
    for (const ConversationSummary& c : *list) {
      auto turns = s->turns(c.id);
      ASSERT_TRUE(turns.ok()) << turns.error().message;
      ASSERT_FALSE(turns->empty()) << "conversation " << c.id << " without turns";
      for (size_t n = 0; n < turns->size(); ++n) {
        EXPECT_EQ((*turns)[n].turn, static_cast<int>(n) + 1);
        expect_whole((*turns)[n]);
      }
    }
  }
  auto s = Store::open(file);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->list(0)->size(), 10u);  // the writers got somewhere
}

// Runs `fn` in a child without the power to ignore file permissions (root
// drops to nobody), so that read-only files and folders are read-only.
int unprivileged(const std::function<int()>& fn) {
  return in_child([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 99;
    return fn();
  });
}

TEST(StoreProcesses, AReadOnlyFolderOrFileIsAClearError) {
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);  // nobody may enter (the temp root is root's)
  const fs::path ro_dir = dir / "ro";
  const fs::path notes = dir / "notes";
  fs::create_directories(ro_dir);
  int64_t id = 0;
  {
    auto s = Store::open(ro_dir / "quip.db");
    ASSERT_TRUE(s.ok());
    id = s->record_turn(sample_turn(1))->conversation;
  }
  fs::permissions(ro_dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  fs::create_directories(dir / "rw");
  std::filesystem::copy_file(ro_dir / "quip.db", dir / "rw/quip.db");
  fs::permissions(ro_dir / "quip.db", fs::perms::all);  // writable, but its folder is not
  fs::permissions(dir / "rw", fs::perms::all);
  fs::permissions(dir / "rw/quip.db",
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::create_directories(dir / "noaccess");
  fs::permissions(dir / "noaccess", fs::perms::owner_all);

  const int status = unprivileged([&] {
    int failures = 0;
    auto expect_error = [&](const fs::path& file, const Result<Store>& r) {
      if (r.ok()) {
        note(notes, file.string() + ": opened for writing");
        ++failures;
        return;
      }
      note(notes, r.error().message);
      // One line, naming the file or the folder it could not create.
      if (r.error().message.find(file.parent_path().string()) == std::string::npos ||
          r.error().message.find('\n') != std::string::npos) {
        ++failures;
      }
    };
    // A new database in a folder it may not write; one in a folder it may
    // not create; a writable one in a read-only folder; a read-only file.
    expect_error(ro_dir / "new.db", Store::open(ro_dir / "new.db"));
    expect_error(dir / "noaccess/sub/quip.db", Store::open(dir / "noaccess/sub/quip.db"));
    expect_error(ro_dir / "quip.db", Store::open(ro_dir / "quip.db"));
    expect_error(dir / "rw/quip.db", Store::open(dir / "rw/quip.db"));
    // Reading still works from a read-only folder (log, show, export).
    auto ro = Store::open_read_only(ro_dir / "quip.db");
    if (!ro) return failed(notes, "read-only open: " + ro.error().message);
    auto turns = ro->turns(id);
    if (!turns || turns->size() != 1) return failed(notes, "cannot read the turns");
    return failures;
  });
  EXPECT_EQ(status, 0) << read_notes(notes);
  const std::string messages = read_notes(notes);
  EXPECT_NE(messages.find("cannot create the folder"), std::string::npos) << messages;
  EXPECT_NE(messages.find(ro_dir.string() + " is not writable (Permission denied)"),
            std::string::npos)
      << messages;
  EXPECT_NE(messages.find("the file is read-only"), std::string::npos) << messages;
  fs::permissions(ro_dir, fs::perms::owner_all);  // so that TempDir can remove it
}

TEST(StoreProcesses, AFullDiskIsAClearErrorAndLosesNothingStored) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  const fs::path notes = dir / "notes";
  int64_t id = 0;
  {
    auto s = Store::open(file);
    ASSERT_TRUE(s.ok());
    id = s->record_turn(sample_turn(1))->conversation;
  }
  // A file size limit makes writes past it fail as on a full disk (a short
  // write, then EFBIG); SIGXFSZ would otherwise kill the process.
  const int status = in_child([&] {
    auto s = Store::open(file);
    if (!s) return failed(notes, s.error().message);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
    TurnRecord big = sample_turn(2);
    big.conversation = id;
    big.prompt_tokens.assign(1 << 20, 7);  // 4 MiB
    auto r = s->record_turn(big);
    if (r) return 3;
    note(notes, r.error().message);
    return 0;
  });
  ASSERT_EQ(status, 0) << read_notes(notes);
  const std::string message = read_notes(notes);
  EXPECT_NE(message.find(file.string() + ": cannot record the turn: "), std::string::npos)
      << message;
  EXPECT_EQ(quip::testing::count_lines(message), 1u) << message;

  EXPECT_EQ(sql_value(file, "PRAGMA integrity_check"), "ok");
  auto s = Store::open(file);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto turns = s->turns(id);
  ASSERT_TRUE(turns.ok());
  EXPECT_EQ(turns->size(), 1u);  // the failed turn is not there, the first is
  TurnRecord next = sample_turn(3);
  next.conversation = id;
  auto r = s->record_turn(next);
  ASSERT_TRUE(r.ok()) << r.error().message;  // and the next call works
  EXPECT_EQ(r->turn, 2);
}

}  // namespace
}  // namespace quip::store
