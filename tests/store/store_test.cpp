// The conversation store through its API in one process: what a turn keeps,
// numbering, titles, forks, sessions, listing, removal, read-only use and
// schema versions. Several processes at once, kills, full and read-only
// disks: store_processes_test.cpp. Broken files: broken_db_test.cpp.
#include "store/store.h"

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>

#include "store/store_helpers.h"
#include "support/run_quip.h"

namespace quip::store {
namespace {

namespace fs = std::filesystem;
using quip::testing::TempDir;
using testing::expect_one_line_about;
using testing::sample_turn;
using testing::sql_value;

Store open_ok(const fs::path& file) {
  auto s = Store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  CHECK(s.ok());
  return std::move(*s);
}

TurnRecord record_ok(Store& s, TurnRecord t) {
  auto r = s.record_turn(std::move(t));
  if (!r) ADD_FAILURE() << r.error().message;
  CHECK(r.ok());
  return std::move(*r);
}

void expect_same_content(const TurnRecord& a, const TurnRecord& b) {
  EXPECT_EQ(a.time_ms, b.time_ms);
  EXPECT_EQ(a.model_path, b.model_path);
  EXPECT_EQ(a.model_fingerprint, b.model_fingerprint);
  EXPECT_EQ(a.sampler_json, b.sampler_json);
  EXPECT_EQ(a.messages_json, b.messages_json);
  EXPECT_EQ(a.answer, b.answer);
  EXPECT_EQ(a.timings_json, b.timings_json);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.answer_tokens, b.answer_tokens);
  EXPECT_EQ(a.interrupted, b.interrupted);
  EXPECT_EQ(a.session, b.session);
  EXPECT_EQ(a.reasoning, b.reasoning);
}

void expect_same(const TurnRecord& a, const TurnRecord& b) {
  EXPECT_EQ(a.conversation, b.conversation);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.parent_turn, b.parent_turn);
  expect_same_content(a, b);
}

TEST(StoreTest, CreatesTheFileItsFoldersAndTheSchema) {
  TempDir dir;
  const fs::path file = dir / "a/b/quip.db";
  { Store s = open_ok(file); }
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(sql_value(file, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(sql_value(file, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(sql_value(file, "PRAGMA application_id"), std::to_string(0x71756970));
  // Opening again (a second call) neither fails nor migrates twice.
  { Store s = open_ok(file); }
  EXPECT_EQ(sql_value(file, "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'turns'"), "1");
}

TEST(StoreTest, ARecordedTurnReadsBackExactly) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  TurnRecord in = sample_turn(7);
  in.answer = std::string("with a NUL \0 inside, é, 日本", 31);
  in.prompt_tokens = {0, -1, 1, INT32_MIN, INT32_MAX, 151643};
  in.answer_tokens = {};
  in.interrupted = true;
  const TurnRecord stored = record_ok(s, in);
  EXPECT_GT(stored.conversation, 0);
  EXPECT_EQ(stored.turn, 1);
  EXPECT_EQ(stored.parent_turn, 0);
  EXPECT_GT(stored.time_ms, 1'600'000'000'000);  // filled with now
  in.time_ms = stored.time_ms;
  expect_same_content(stored, in);

  auto turns = s.turns(stored.conversation);
  ASSERT_TRUE(turns.ok()) << turns.error().message;
  ASSERT_EQ(turns->size(), 1u);
  expect_same(turns->at(0), stored);
}

TEST(StoreTest, TokenIdsAreStoredAsLittleEndianInt32) {
  EXPECT_EQ(encode_tokens({1, -2, 0x01020304}),
            std::string("\x01\0\0\0\xFE\xFF\xFF\xFF\x04\x03\x02\x01", 12));
  auto back = decode_tokens(encode_tokens({5, INT32_MIN}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<int32_t>{5, INT32_MIN}));
  auto bad = decode_tokens("12345");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("5 bytes"), std::string::npos) << bad.error().message;

  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  TurnRecord t = sample_turn(1);
  t.prompt_tokens = {1, -2};
  record_ok(s, t);
  EXPECT_EQ(sql_value(dir / "quip.db", "SELECT hex(prompt_tokens) FROM turns"), "01000000FEFFFFFF");
}

TEST(StoreTest, AppendedTurnsAreNumberedAfterTheLast) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  const int64_t id = record_ok(s, sample_turn(1)).conversation;
  for (int i = 2; i <= 4; ++i) {
    TurnRecord t = sample_turn(i);
    t.conversation = id;
    t.turn = 99;  // ignored: the store numbers turns
    t.parent_turn = 42;
    const TurnRecord stored = record_ok(s, t);
    EXPECT_EQ(stored.turn, i);
    EXPECT_EQ(stored.parent_turn, i - 1);
  }
  auto turns = s.turns(id);
  ASSERT_TRUE(turns.ok());
  ASSERT_EQ(turns->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*turns)[i].turn, i + 1);
    EXPECT_EQ((*turns)[i].answer, "answer " + std::to_string(i + 1));
  }
}

TEST(StoreTest, UnknownConversationsAreErrorsSayingSo) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  TurnRecord t = sample_turn(1);
  t.conversation = 42;
  auto r = s.record_turn(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no conversation 42");
  auto turns = s.turns(42);
  ASSERT_FALSE(turns.ok());
  EXPECT_EQ(turns.error().message, "no conversation 42");
  auto removed = s.remove(42);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().message, "no conversation 42");
  auto forked = s.fork(42, 1, "x");
  ASSERT_FALSE(forked.ok());
  EXPECT_EQ(forked.error().message, "no conversation 42");
  auto found = s.find(42);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_EQ(sql_value(dir / "quip.db", "SELECT COUNT(*) FROM turns"), "0");
}

TEST(StoreTest, IdsAreNeverReused) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  const int64_t a = record_ok(s, sample_turn(1)).conversation;
  const int64_t b = record_ok(s, sample_turn(2)).conversation;
  EXPECT_GT(b, a);
  ASSERT_TRUE(s.remove(b).ok());
  const int64_t c = record_ok(s, sample_turn(3)).conversation;
  EXPECT_GT(c, b);
}

TEST(StoreTest, TitleIsTheFirstUserMessageFoldedAndCut) {
  EXPECT_EQ(title_from_messages(R"([{"role":"system","content":"Be terse."},
                                   {"role":"user","content":"  What is\n\t1+1?  "}])"),
            "What is 1+1?");
  const std::string long_text(100, 'x');
  EXPECT_EQ(title_from_messages(R"([{"role":"user","content":")" + long_text + R"("}])"),
            std::string(60, 'x') + "…");
  EXPECT_EQ(title_from_messages(R"([{"role":"user","content":")" + std::string(60, 'y') + R"("}])"),
            std::string(60, 'y'));  // exactly 60: not cut
  // Cut on code points, never inside a character.
  std::string accents;
  for (int i = 0; i < 70; ++i) accents += "é";
  std::string cut;
  for (int i = 0; i < 10; ++i) cut += "é";
  EXPECT_EQ(title_from_messages(R"([{"role":"user","content":")" + accents + R"("}])", 10),
            cut + "…");
  // Control characters go; content parts are joined.
  EXPECT_EQ(title_from_messages(R"([{"role":"user","content":"a\u0007b"}])"), "ab");
  EXPECT_EQ(
      title_from_messages(
          R"([{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}])"),
      "one two");
  // No user message: the first that is not the system's (a raw prompt).
  EXPECT_EQ(title_from_messages(R"([{"role":"raw","content":"Once upon"}])"), "Once upon");
  EXPECT_EQ(title_from_messages(R"([{"role":"system","content":"s"}])"), "");
  EXPECT_EQ(title_from_messages("not json"), "");
  EXPECT_EQ(title_from_messages(""), "");
  EXPECT_EQ(title_from_messages(R"({"role":"user"})"), "");
}

TEST(StoreTest, ConversationTitleComesFromTheFirstTurnWithAUserMessage) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  TurnRecord first = sample_turn(1);
  first.messages_json = R"([{"role":"system","content":"only a system prompt"}])";
  const int64_t id = record_ok(s, first).conversation;
  EXPECT_EQ((*s.find(id))->title, "");
  TurnRecord second = sample_turn(2);
  second.conversation = id;
  record_ok(s, second);
  EXPECT_EQ((*s.find(id))->title, "question 2");
  TurnRecord third = sample_turn(3);
  third.conversation = id;
  record_ok(s, third);
  EXPECT_EQ((*s.find(id))->title, "question 2");  // kept once set
}

TEST(StoreTest, MalformedJsonFieldsAreStoredAsGiven) {
  // A turn is never lost over its metadata: the store keeps what it is given.
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  TurnRecord t = sample_turn(1);
  t.messages_json = "{not json";
  t.sampler_json = "";
  const TurnRecord stored = record_ok(s, t);
  auto turns = s.turns(stored.conversation);
  ASSERT_TRUE(turns.ok());
  EXPECT_EQ(turns->at(0).messages_json, "{not json");
  EXPECT_EQ(turns->at(0).sampler_json, "");
  EXPECT_EQ((*s.find(stored.conversation))->title, "");
}

TEST(StoreTest, ForkCopiesTheTurnsUpToNAndKeepsTheOriginal) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  const int64_t id = record_ok(s, sample_turn(1)).conversation;
  for (int i = 2; i <= 3; ++i) {
    TurnRecord t = sample_turn(i);
    t.conversation = id;
    record_ok(s, t);
  }
  auto fork = s.fork(id, 2, "session-b");
  ASSERT_TRUE(fork.ok()) << fork.error().message;
  EXPECT_GT(*fork, id);

  auto original = s.turns(id);
  auto copy = s.turns(*fork);
  ASSERT_TRUE(original.ok() && copy.ok());
  ASSERT_EQ(original->size(), 3u);
  ASSERT_EQ(copy->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*copy)[i].conversation, *fork);
    EXPECT_EQ((*copy)[i].turn, (*original)[i].turn);
    EXPECT_EQ((*copy)[i].parent_turn, (*original)[i].parent_turn);
    expect_same_content((*copy)[i], (*original)[i]);
  }
  auto summary = s.find(*fork);
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_EQ((*summary)->forked_from, std::make_optional(std::pair<int64_t, int>(id, 2)));
  EXPECT_EQ((*summary)->session, "session-b");
  EXPECT_EQ((*summary)->title, "question 1");
  EXPECT_EQ((*summary)->turns, 2);
  EXPECT_FALSE((*s.find(id))->forked_from.has_value());

  // The fork continues on its own.
  TurnRecord next = sample_turn(9, "session-b");
  next.conversation = *fork;
  EXPECT_EQ(record_ok(s, next).turn, 3);
  EXPECT_EQ(s.turns(id)->size(), 3u);

  // Removing the original keeps the fork and where it came from.
  ASSERT_TRUE(s.remove(id).ok());
  EXPECT_EQ(s.turns(*fork)->size(), 3u);
  EXPECT_EQ((*s.find(*fork))->forked_from->first, id);
}

// A turn computed from the conversation's last turn is appended after it;
// one computed from a turn that is no longer the last (another call
// recorded meanwhile) starts a branch after the turn it used, and so does an
// asked-for fork. Every turn's parent is the turn it was computed from.
TEST(StoreTest, ContinuationFollowsTheTurnItWasComputedFrom) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  const int64_t id = record_ok(s, sample_turn(1)).conversation;
  const auto continue_from = [&](int n, int after, bool fork) {
    TurnRecord t = sample_turn(n, "session-b");
    t.conversation = id;
    t.turn = 99;  // ignored
    t.parent_turn = 42;
    auto r = s.record_continuation(t, after, fork);
    if (!r) ADD_FAILURE() << r.error().message;
    CHECK(r.ok());
    return *r;
  };
  const TurnRecord second = continue_from(2, 1, false);  // the tip: appended
  EXPECT_EQ(second.conversation, id);
  EXPECT_EQ(second.turn, 2);
  EXPECT_EQ(second.parent_turn, 1);

  const TurnRecord late = continue_from(3, 1, false);  // computed from turn 1 too
  EXPECT_NE(late.conversation, id);
  EXPECT_EQ(late.turn, 2);
  EXPECT_EQ(late.parent_turn, 1);
  auto original = s.turns(id);
  ASSERT_TRUE(original.ok());
  ASSERT_EQ(original->size(), 2u);  // untouched by the late turn
  EXPECT_EQ((*original)[1].answer, "answer 2");
  auto branch = s.turns(late.conversation);
  ASSERT_TRUE(branch.ok());
  ASSERT_EQ(branch->size(), 2u);
  expect_same_content((*branch)[0], (*original)[0]);
  EXPECT_EQ((*branch)[1].answer, "answer 3");
  auto summary = s.find(late.conversation);
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_EQ((*summary)->forked_from, std::make_optional(std::pair<int64_t, int>(id, 1)));
  EXPECT_EQ((*summary)->session, "session-b");
  // -c in that session continues the branch: it holds what the model saw.
  auto last = s.last_turn_in_session("session-b");
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->conversation, late.conversation);

  const TurnRecord forked = continue_from(4, 2, true);  // asked: even from the tip
  EXPECT_NE(forked.conversation, id);
  EXPECT_EQ(forked.turn, 3);
  EXPECT_EQ(forked.parent_turn, 2);
  const TurnRecord third = continue_from(5, 2, false);
  EXPECT_EQ(third.conversation, id);
  EXPECT_EQ(third.turn, 3);

  auto forks = s.forks_of(id);
  ASSERT_TRUE(forks.ok()) << forks.error().message;
  EXPECT_EQ(*forks, (std::vector<std::pair<int64_t, int>>{{late.conversation, 1},
                                                          {forked.conversation, 2}}));
  TurnRecord missing = sample_turn(6);
  missing.conversation = 999;
  auto r = s.record_continuation(missing, 1, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no conversation 999");
  TurnRecord beyond = sample_turn(7);
  beyond.conversation = id;
  EXPECT_FALSE(s.record_continuation(beyond, 7, false).ok());  // no turn 7 to follow
}

TEST(StoreTest, ForkOfATurnThatDoesNotExistIsAnError) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  const int64_t id = record_ok(s, sample_turn(1)).conversation;
  for (int turn : {0, -1, 2, INT_MAX}) {
    auto r = s.fork(id, turn, "x");
    ASSERT_FALSE(r.ok()) << turn;
    EXPECT_NE(r.error().message.find("no turn " + std::to_string(turn)), std::string::npos)
        << r.error().message;
    expect_one_line_about(r.error(), dir / "quip.db");
  }
  EXPECT_EQ(s.list(0)->size(), 1u);
}

TEST(StoreTest, LastTurnInSessionIsTheNewestRecordedThere) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  auto none = s.last_turn_in_session("a");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  const int64_t a1 = record_ok(s, sample_turn(1, "a")).conversation;
  const int64_t b1 = record_ok(s, sample_turn(2, "b")).conversation;
  const int64_t a2 = record_ok(s, sample_turn(3, "a")).conversation;
  EXPECT_EQ((*s.last_turn_in_session("a"))->conversation, a2);
  EXPECT_EQ((*s.last_turn_in_session("b"))->conversation, b1);

  // Appending to an older conversation from session a makes it a's last.
  TurnRecord t = sample_turn(4, "a");
  t.conversation = a1;
  record_ok(s, t);
  auto last = s.last_turn_in_session("a");
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->conversation, a1);
  EXPECT_EQ((*last)->turn, 2);
  EXPECT_EQ((*last)->answer, "answer 4");

  // Turns copied by a fork were not made in the fork's session.
  ASSERT_TRUE(s.fork(a2, 1, "c").ok());
  ASSERT_TRUE(s.fork(b1, 1, "a").ok());
  EXPECT_FALSE(s.last_turn_in_session("c")->has_value());
  EXPECT_EQ((*s.last_turn_in_session("a"))->conversation, a1);
  EXPECT_EQ((*s.last_turn_in_session("b"))->conversation, b1);

  // Removing a session's last conversation falls back to the one before.
  ASSERT_TRUE(s.remove(a1).ok());
  EXPECT_EQ((*s.last_turn_in_session("a"))->conversation, a2);
}

TEST(StoreTest, ListIsMostRecentlyUpdatedFirst) {
  TempDir dir;
  Store s = open_ok(dir / "quip.db");
  std::vector<int64_t> ids;
  for (int i = 1; i <= 4; ++i) {
    TurnRecord t = sample_turn(i);
    t.time_ms = 1'700'000'000'000 + i;
    ids.push_back(record_ok(s, t).conversation);
  }
  // Appending to the first, with a clock that went back, still makes it the newest.
  TurnRecord t = sample_turn(5);
  t.conversation = ids[0];
  t.time_ms = 1'600'000'000'000;
  record_ok(s, t);

  auto all = s.list(0);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].id, ids[0]);
  EXPECT_EQ((*all)[1].id, ids[3]);
  EXPECT_EQ((*all)[2].id, ids[2]);
  EXPECT_EQ((*all)[3].id, ids[1]);

  const ConversationSummary& first = (*all)[0];
  EXPECT_EQ(first.turns, 2);
  EXPECT_EQ(first.title, "question 1");
  EXPECT_EQ(first.model_path, sample_turn(5).model_path);  // the last turn's model
  EXPECT_EQ(first.created_ms, 1'700'000'000'001);
  EXPECT_EQ(first.updated_ms, 1'700'000'000'001);  // never moved back
  EXPECT_EQ(first.session, "session-a");
  EXPECT_FALSE(first.forked_from.has_value());

  auto two = s.list(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].id, ids[3]);
  EXPECT_EQ(s.list(-1)->size(), 4u);
}

TEST(StoreTest, RemoveDeletesTheConversationAndItsTurns) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  Store s = open_ok(file);
  const int64_t keep = record_ok(s, sample_turn(1)).conversation;
  const int64_t gone = record_ok(s, sample_turn(2)).conversation;
  TurnRecord t = sample_turn(3);
  t.conversation = gone;
  record_ok(s, t);
  ASSERT_TRUE(s.remove(gone).ok());
  EXPECT_FALSE(s.find(gone)->has_value());
  EXPECT_EQ(
      sql_value(file, "SELECT COUNT(*) FROM turns WHERE conversation = " + std::to_string(gone)),
      "0");
  EXPECT_EQ(s.turns(keep)->size(), 1u);
  auto again = s.remove(gone);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "no conversation " + std::to_string(gone));
}

TEST(StoreTest, ReadOnlyStoreReadsAndRefusesWrites) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  int64_t id = 0;
  {
    Store s = open_ok(file);
    id = record_ok(s, sample_turn(1)).conversation;
  }
  auto ro = Store::open_read_only(file);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  EXPECT_EQ(ro->list(0)->size(), 1u);
  EXPECT_EQ(ro->turns(id)->size(), 1u);
  EXPECT_EQ((*ro->last_turn_in_session("session-a"))->conversation, id);
  for (const Error& e : {ro->record_turn(sample_turn(2)).error(), ro->remove(id).error(),
                         ro->fork(id, 1, "x").error()}) {
    EXPECT_NE(e.message.find("read-only"), std::string::npos) << e.message;
    expect_one_line_about(e, file);
  }
  EXPECT_EQ(ro->list(0)->size(), 1u);
}

TEST(StoreTest, ReadOnlyOpenOfAMissingOrEmptyFile) {
  TempDir dir;
  auto missing = Store::open_read_only(dir / "none.db");
  ASSERT_FALSE(missing.ok());
  expect_one_line_about(missing.error(), dir / "none.db");
  EXPECT_FALSE(fs::exists(dir / "none.db"));  // a reader creates nothing

  // An empty file is an empty SQLite database: no conversations yet.
  quip::testing::write_bytes(dir / "empty.db", "");
  auto empty = Store::open_read_only(dir / "empty.db");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->list(0)->empty());
  EXPECT_FALSE(empty->find(1)->has_value());
  EXPECT_FALSE(empty->last_turn_in_session("a")->has_value());
  EXPECT_EQ(empty->turns(1).error().message, "no conversation 1");
  // ...which a writer then sets up.
  Store s = open_ok(dir / "empty.db");
  EXPECT_EQ(record_ok(s, sample_turn(1)).turn, 1);
}

TEST(StoreTest, DatabaseOfANewerQuipIsRefused) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  { Store s = open_ok(file); }
  sql_value(file, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  for (const auto& r : {Store::open(file), Store::open_read_only(file)}) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("newer quip"), std::string::npos) << r.error().message;
    expect_one_line_about(r.error(), file);
  }
  // Refused without being touched.
  EXPECT_EQ(sql_value(file, "PRAGMA user_version"), std::to_string(kSchemaVersion + 1));
}

// Schema version 1 (before turns had their reasoning): a reader reads its
// turns as they are, with no reasoning, and touches nothing; a writer
// migrates it, keeping every turn, and then records reasoning.
TEST(StoreTest, ADatabaseOfVersion1IsReadAsItIsAndMigratedByAWriter) {
  TempDir dir;
  const fs::path file = dir / "quip.db";
  TurnRecord first;
  {
    Store s = open_ok(file);
    TurnRecord t = sample_turn(1);
    t.reasoning = "dropped with the column";
    first = record_ok(s, t);
  }
  // What quip's first schema was: the same without the column.
  sql_value(file, "ALTER TABLE turns DROP COLUMN reasoning");
  sql_value(file, "PRAGMA user_version = 1");
  first.reasoning = "";
  {
    auto reader = Store::open_read_only(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto turns = reader->turns(first.conversation);
    ASSERT_TRUE(turns.ok()) << turns.error().message;
    ASSERT_EQ(turns->size(), 1u);
    expect_same(turns->at(0), first);
  }
  EXPECT_EQ(sql_value(file, "PRAGMA user_version"), "1");
  Store writer = open_ok(file);
  EXPECT_EQ(sql_value(file, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  auto turns = writer.turns(first.conversation);
  ASSERT_TRUE(turns.ok()) << turns.error().message;
  ASSERT_EQ(turns->size(), 1u);
  expect_same(turns->at(0), first);
  TurnRecord second = sample_turn(2);
  second.reasoning = "The user asks again.";
  const TurnRecord stored = record_ok(writer, second);
  auto again = writer.turns(stored.conversation);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->back().reasoning, "The user asks again.");
}

TEST(StoreTest, DefaultDatabaseIsInTheDataFolder) {
  const auto path = default_database_path();
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(path->filename(), "quip.db");
  if (const char* home = std::getenv("QUIP_HOME"); home != nullptr && *home != '\0') {
    EXPECT_EQ(*path, fs::path(home) / "data" / "quip.db");
  }
}

}  // namespace
}  // namespace quip::store
