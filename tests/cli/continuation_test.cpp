// Continuing conversations through the quip binary under the conditions
// that used to corrupt them: calls that continue the same turn at once.
// Every recorded turn must have been computed from its recorded parent:
// its prompt starts with the parent's stored prompt and answer tokens.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "store/store.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

using testing::RunOptions;
using testing::RunResult;

constexpr const char* kModel = "tiny-qwen2-e64-f16.gguf";

std::string model_path() {
  return (testing::shared_dir() / "models" / kModel).string();
}

class ContinuationCli : public ::testing::Test {
 protected:
  RunOptions options() const {
    RunOptions o;
    o.env = {{"QUIP_HOME", home_.path().string()},
             {"QUIP_SESSION", "continuation-test"},
             {"QUIP_CONFIG", ""}};
    return o;
  }

  nlohmann::json run_json(std::vector<std::string> args) {
    args.push_back("--json");
    const RunResult r = testing::run_quip(args, options());
    EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
    return r.status == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  store::Store open_store() {
    auto s = store::Store::open_read_only(home_.path() / "data" / "quip.db");
    if (!s) throw std::runtime_error(s.error().message);
    return std::move(*s);
  }

  std::filesystem::path db_file() const { return home_.path() / "data" / "quip.db"; }

  // A failed call: status, nothing on stdout, one line on stderr.
  RunResult expect_failure(std::vector<std::string> args, int status) {
    const RunResult r = testing::run_quip(args, options());
    EXPECT_EQ(r.status, status) << testing::describe(args, r);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(testing::count_lines(r.err), 1u) << testing::describe(args, r);
    return r;
  }

  testing::TempDir home_;
};

// Runs SQL statements on `file` with the schema's checks off, as a bug or
// another tool might write.
void damage(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, ("PRAGMA ignore_check_constraints = 1; " + sql).c_str(), nullptr,
                         nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// The tokens a turn leaves: its prompt, then its answer.
std::vector<int32_t> stored_tokens(const store::TurnRecord& t) {
  std::vector<int32_t> ids = t.prompt_tokens;
  ids.insert(ids.end(), t.answer_tokens.begin(), t.answer_tokens.end());
  return ids;
}

// Eight `quip --cid ID` calls that all read the conversation before any of
// them records (each waits on its stdin, a pipe, after reading it): one
// turn follows turn 1 in the conversation, the seven others are branches
// after turn 1, and `quip show` lists them there.
TEST_F(ContinuationCli, ConcurrentContinuationsOfOneTurnAreBranches) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json t1 = run_json({"-m", model_path(), "-n", "4", "What is 1+1?"});
  const int64_t id = t1.at("conversation");
  constexpr int kCalls = 8;
  std::ostringstream script;
  script << "pids=''\n";
  for (int i = 0; i < kCalls; ++i) {
    script << "(sleep 1) | \"" << QUIP_BINARY << "\" --cid " << id << " -n 3 -t 1 'q" << i
           << "' > /dev/null 2>> \"" << (home_ / "notes").string() << "\" & pids=\"$pids $!\"\n";
  }
  script << "s=0; for p in $pids; do wait $p || s=1; done; exit $s\n";
  testing::write_bytes(home_ / "together.sh", script.str());
  const RunResult r =
      testing::run_command({"/bin/sh", (home_ / "together.sh").string()}, options());
  ASSERT_EQ(r.status, 0) << r.err;

  store::Store s = open_store();
  auto all = s.list(0);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), size_t{kCalls});
  size_t branches = 0;
  for (const store::ConversationSummary& c : *all) {
    auto turns = s.turns(c.id);
    ASSERT_TRUE(turns.ok()) << turns.error().message;
    ASSERT_EQ(turns->size(), 2u) << "conversation " << c.id;
    const store::TurnRecord& parent = (*turns)[0];
    const store::TurnRecord& turn = (*turns)[1];
    EXPECT_EQ(turn.parent_turn, 1);
    const std::vector<int32_t> seen = stored_tokens(parent);
    ASSERT_GT(turn.prompt_tokens.size(), seen.size());
    EXPECT_EQ(std::vector<int32_t>(turn.prompt_tokens.begin(),
                                   turn.prompt_tokens.begin() + static_cast<long>(seen.size())),
              seen)
        << "conversation " << c.id << " turn 2 was not computed from its turn 1";
    if (c.id != id) {
      ++branches;
      EXPECT_EQ(c.forked_from, std::make_optional(std::pair<int64_t, int>(id, 1)));
    }
  }
  EXPECT_EQ(branches, size_t{kCalls - 1});
  // Each branched call said where its turn went.
  const std::string notes = testing::read_file(home_ / "notes");
  EXPECT_EQ(testing::count_lines(notes), size_t{kCalls - 1}) << notes;
  EXPECT_NE(notes.find("a branch after turn 1"), std::string::npos) << notes;

  // show lists the branches after turn 1, and --json as "branches".
  const RunResult show = testing::run_quip({"show", std::to_string(id)}, options());
  ASSERT_EQ(show.status, kExitOk) << show.err;
  EXPECT_NE(show.out.find("(branched after turn 1 into conversations "), std::string::npos)
      << show.out;
  const RunResult show_json = testing::run_quip({"show", std::to_string(id), "--json"}, options());
  ASSERT_EQ(show_json.status, kExitOk) << show_json.err;
  EXPECT_EQ(nlohmann::json::parse(show_json.out).at("branches").size(), size_t{kCalls - 1});
}

// One call after another: --cid ID appends (forked_from null), --cid ID@1
// forks (forked_from says from where), and the next --cid ID continues
// from the conversation's real last turn.
TEST_F(ContinuationCli, NextCallContinuesWhatTheStoreHolds) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json t1 = run_json({"-m", model_path(), "-n", "4", "first"});
  const int64_t id = t1.at("conversation");
  const nlohmann::json t2 = run_json({"--cid", std::to_string(id), "-n", "4", "second"});
  EXPECT_EQ(t2.at("conversation"), id);
  EXPECT_TRUE(t2.at("forked_from").is_null());
  const nlohmann::json f = run_json({"--cid", std::to_string(id) + "@1", "-n", "4", "again"});
  EXPECT_NE(f.at("conversation"), id);
  EXPECT_EQ(f.at("forked_from"), (nlohmann::json{{"conversation", id}, {"turn", 1}}));
  const nlohmann::json t3 = run_json({"--cid", std::to_string(id), "-n", "4", "third"});
  EXPECT_EQ(t3.at("conversation"), id);
  EXPECT_EQ(t3.at("turn"), 3);
  store::Store s = open_store();
  auto turns = s.turns(id);
  ASSERT_TRUE(turns.ok());
  ASSERT_EQ(turns->size(), 3u);
  const std::vector<int32_t> seen = stored_tokens((*turns)[1]);
  const std::vector<int32_t> p3 = (*turns)[2].prompt_tokens;
  ASSERT_GT(p3.size(), seen.size());
  EXPECT_EQ(std::vector<int32_t>(p3.begin(), p3.begin() + static_cast<long>(seen.size())), seen);
}

// Token ids read from the database are input: one outside the model's
// vocabulary (a damaged or foreign database) is one line naming the
// database, the turn and the id, exit status 3, as for any database that
// cannot be used; never an abort in the forward pass.
TEST_F(ContinuationCli, StoredTokenIdsOutsideTheVocabularyAreBadData) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json chat = run_json({"-m", model_path(), "-n", "3", "What is 1+1?"});
  const std::string chat_id = std::to_string(chat.at("conversation").get<int64_t>());
  const nlohmann::json raw = run_json({"--raw", "-m", model_path(), "-n", "3", "Once upon"});
  const std::string raw_id = std::to_string(raw.at("conversation").get<int64_t>());
  struct Damage {
    const char* column;
    const char* first_id;  // little-endian int32, hex; token 1 follows
    const char* shown;
  };
  for (const Damage& d :
       {Damage{"prompt_tokens", "FFFFFF7F", "2147483647"},
        Damage{"prompt_tokens", "FFFFFFFF", "-1"}, Damage{"answer_tokens", "00000100", "65536"}}) {
    SCOPED_TRACE(std::string(d.column) + " " + d.shown);
    for (const std::string& id : {chat_id, raw_id}) {
      const std::string column = d.column;
      damage(db_file(),
             "UPDATE turns SET prompt_tokens = x'01000000', answer_tokens = "
             "x'01000000' WHERE conversation = " +
                 id + "; UPDATE turns SET " + column + " = x'" + d.first_id +
                 "01000000' WHERE conversation = " + id);
      std::vector<std::string> args = {"--cid", id, "-n", "2", "hi"};
      if (id == raw_id) args.insert(args.begin(), "--raw");
      const RunResult r = expect_failure(args, kExitBadData);
      EXPECT_NE(r.err.find(db_file().string()), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("token id " + std::string(d.shown)), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("conversation " + id + " turn 1"), std::string::npos) << r.err;
    }
    // -c finds the last conversation of the session, the raw one.
    expect_failure({"--raw", "-c", "-n", "2", "hi"}, kExitBadData);
  }
  // --print-prompt reads the stored tokens too.
  expect_failure({"--cid", chat_id, "--print-prompt", "hi"}, kExitBadData);
}

// The messages a continuation reads back are input too: a list that is not
// one of {"role", "content"} (damaged, or written by something else) is one
// line and status 3, never an exception or a history that silently lacks
// them.
TEST_F(ContinuationCli, StoredMessagesThatCannotBeReadAreBadData) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json t1 = run_json({"-m", model_path(), "-n", "2", "hello"});
  const std::string id = std::to_string(t1.at("conversation").get<int64_t>());
  for (const char* messages :
       {"[{\"role\":5,\"content\":\"x\"}]", "not json", "{}",
        "[{\"role\":\"user\",\"content\":{\"x\":1}}]", "[3]", "[{\"role\":\"user\"}]"}) {
    SCOPED_TRACE(messages);
    damage(db_file(), "UPDATE turns SET messages_json = '" + std::string(messages) +
                          "' WHERE conversation = " + id);
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--cid", id, "-n", "2", "again"},
             {"--cid", id, "-m",
              (testing::shared_dir() / "models" / "tiny-llama-spm-e64-f16.gguf").string(), "-n",
              "2", "again"},
             {"--raw", "-c", "-n", "2", "again"}}) {
      const RunResult r = expect_failure(args, kExitBadData);
      EXPECT_NE(r.err.find("conversation " + id + " turn 1: the stored messages"),
                std::string::npos)
          << r.err;
    }
  }
}

// A database that cannot be read gives -c and --cid the status log, show
// and rm give it: 3. A conversation that is not there stays 1.
TEST_F(ContinuationCli, AnUnusableDatabaseIsStatus3ForContinuations) {
  QUIP_REQUIRE_SHARED();
  run_json({"-m", model_path(), "-n", "2", "hello"});
  // A row the schema would refuse (a 5-byte token blob), written as a bug
  // or another tool might.
  damage(db_file(), "UPDATE turns SET prompt_tokens = x'0102030405'");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--cid", "1", "-n", "2", "hi"}, {"-c", "-n", "2", "hi"}}) {
    const RunResult r = expect_failure(args, kExitBadData);
    EXPECT_NE(r.err.find("prompt tokens"), std::string::npos) << r.err;
  }
  expect_failure({"--cid", "2", "-m", model_path(), "hi"}, kExitFailure);  // no such conversation

  std::filesystem::remove(db_file());
  testing::write_bytes(db_file(), std::string(5000, 'x'));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--cid", "1", "-m", model_path(), "hi"}, {"-c", "-m", model_path(), "hi"}}) {
    const RunResult r = expect_failure(args, kExitBadData);
    EXPECT_NE(r.err.find("not a database"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace quip::cli
