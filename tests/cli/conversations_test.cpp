// `quip log`, `quip show`, `quip rm` and `quip export`, through the quip
// binary: conversations are recorded with the Store API in a QUIP_HOME of the
// test's own, then the commands' output, exit status and stderr are checked.
// Dates print in local time, so every run sets TZ=UTC.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "store/store.h"
#include "store/store_helpers.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using store::Store;
using store::TurnRecord;
using testing::describe;
using testing::RunResult;
using testing::TempDir;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitBadData = 3;

constexpr int64_t kJan2 = 1704164640000;  // 2024-01-02 03:04:00 UTC

class ConversationsCli : public ::testing::Test {
 protected:
  fs::path db_file() const { return home_ / "data" / "quip.db"; }

  testing::RunOptions options() const {
    testing::RunOptions o;
    o.env = {{"QUIP_HOME", home_.path().string()}, {"TZ", "UTC"}};
    return o;
  }

  RunResult run(const std::vector<std::string>& args) const {
    return testing::run_quip(args, options());
  }

  // Runs a command that must succeed with nothing on stderr; returns stdout.
  std::string run_ok(const std::vector<std::string>& args) const {
    const RunResult r = run(args);
    EXPECT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "") << describe(args, r);
    return r.out;
  }

  RunResult expect_failure(const std::vector<std::string>& args, int status) const {
    return testing::expect_failure(args, status, options());
  }

  Store open() const {
    auto s = Store::open(db_file());
    CHECK(s.ok());
    return std::move(*s);
  }

  // Records a turn: a new conversation when `conversation` is 0.
  TurnRecord record(Store& s, int64_t conversation, int64_t time_ms, const std::string& user,
                    const std::string& answer, const std::string& model = "/m/qwen.gguf") {
    TurnRecord t;
    t.conversation = conversation;
    t.time_ms = time_ms;
    t.model_path = model;
    t.model_fingerprint = "fp";
    t.sampler_json = R"({"temp":0})";
    t.messages_json = nlohmann::json::array({{{"role", "user"}, {"content", user}}}).dump();
    t.answer = answer;
    t.timings_json = R"({"total_ms":5})";
    t.prompt_tokens = {1, 2, 3};
    t.answer_tokens = {4, 5};
    t.session = "s";
    auto r = s.record_turn(t);
    CHECK(r.ok());
    return *r;
  }

  TempDir home_;
};

TEST_F(ConversationsCli, NoDatabaseYetMeansNoConversations) {
  EXPECT_EQ(run_ok({"log"}), "");
  EXPECT_EQ(run_ok({"log", "--json"}), "[]\n");
  EXPECT_EQ(expect_failure({"show", "1"}, kExitFailure).err, "quip: no conversation 1\n");
  EXPECT_EQ(expect_failure({"export", "1"}, kExitFailure).err, "quip: no conversation 1\n");
  EXPECT_EQ(expect_failure({"rm", "1"}, kExitFailure).err, "quip: no conversation 1\n");
  EXPECT_FALSE(fs::exists(db_file()));  // reading or removing creates nothing
}

TEST_F(ConversationsCli, LogListsNewestFirstWithAlignedColumns) {
  Store s = open();
  const int64_t a = record(s, 0, kJan2, "What is 1+1?", "2").conversation;
  const int64_t b = record(s, 0, kJan2 + 60'000, "Second\nquestion", "ok", "/m/llama-3b.gguf")
                        .conversation;
  for (int i = 0; i < 10; ++i) record(s, a, kJan2 + 120'000, "more", "yes");
  const std::string out = run_ok({"log"});
  EXPECT_EQ(out,
            std::to_string(a) + "  2024-01-02 03:06  11 turns  qwen.gguf      What is 1+1?\n" +
                std::to_string(b) + "  2024-01-02 03:05   1 turn   llama-3b.gguf  Second question\n")
      << out;
  EXPECT_EQ(testing::count_lines(run_ok({"log", "-n", "1"})), 1u);
  EXPECT_EQ(testing::count_lines(run_ok({"log", "-n", "0"})), 2u);
}

TEST_F(ConversationsCli, LogJsonIsAnArrayOfObjects) {
  Store s = open();
  const int64_t a = record(s, 0, kJan2, "hello", "hi").conversation;
  auto fork = s.fork(a, 1, "other");
  ASSERT_TRUE(fork.ok());
  const nlohmann::json j = nlohmann::json::parse(run_ok({"log", "--json"}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], *fork);
  EXPECT_EQ(j[0]["forked_from"], (nlohmann::json{{"conversation", a}, {"turn", 1}}));
  EXPECT_EQ(j[0]["session"], "other");
  EXPECT_EQ(j[1]["id"], a);
  EXPECT_EQ(j[1]["created_ms"], kJan2);
  EXPECT_EQ(j[1]["updated_ms"], kJan2);
  EXPECT_EQ(j[1]["turns"], 1);
  EXPECT_EQ(j[1]["title"], "hello");
  EXPECT_EQ(j[1]["model_path"], "/m/qwen.gguf");
  EXPECT_TRUE(j[1]["forked_from"].is_null());
}

TEST_F(ConversationsCli, ShowPrintsTheMessagesAndAnswersAndMarksInterruptions) {
  Store s = open();
  const int64_t id = record(s, 0, kJan2, "What is 1+1?", "1+1 equals 2.").conversation;
  record(s, id, kJan2 + 60'000, "And 2+2?", "2+2 eq");
  // An interrupted turn: recorded with the flag set.
  TurnRecord cut;
  cut.conversation = id;
  cut.time_ms = kJan2 + 120'000;
  cut.model_path = "/m/qwen.gguf";
  cut.messages_json = R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Count"}])";
  cut.answer = "1, 2,";
  cut.interrupted = true;
  ASSERT_TRUE(s.record_turn(cut).ok());

  const std::string out = run_ok({"show", std::to_string(id)});
  EXPECT_EQ(out, "conversation " + std::to_string(id) +
                     ": What is 1+1?\n"
                     "started 2024-01-02 03:04, 3 turns\n"
                     "\n--- turn 1, 2024-01-02 03:04, qwen.gguf\n"
                     "user: What is 1+1?\n"
                     "assistant: 1+1 equals 2.\n"
                     "\n--- turn 2, 2024-01-02 03:05, qwen.gguf\n"
                     "user: And 2+2?\n"
                     "assistant: 2+2 eq\n"
                     "\n--- turn 3, 2024-01-02 03:06, qwen.gguf (interrupted)\n"
                     "system: Be brief.\n"
                     "user: Count\n"
                     "assistant: 1, 2, [interrupted]\n");
}

TEST_F(ConversationsCli, ShowJsonHasEverythingIncludingTokenIds) {
  Store s = open();
  const int64_t id = record(s, 0, kJan2, "hello", "hi").conversation;
  record(s, id, kJan2 + 1, "again", "yes");
  const nlohmann::json j = nlohmann::json::parse(run_ok({"show", std::to_string(id), "--json"}));
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["title"], "hello");
  ASSERT_EQ(j["turns"].size(), 2u);
  const nlohmann::json& t = j["turns"][1];
  EXPECT_EQ(t["turn"], 2);
  EXPECT_EQ(t["parent_turn"], 1);
  EXPECT_EQ(t["time_ms"], kJan2 + 1);
  EXPECT_EQ(t["model_path"], "/m/qwen.gguf");
  EXPECT_EQ(t["model_fingerprint"], "fp");
  EXPECT_EQ(t["sampler"], (nlohmann::json{{"temp", 0}}));
  EXPECT_EQ(t["messages"], nlohmann::json::parse(R"([{"role":"user","content":"again"}])"));
  EXPECT_EQ(t["answer"], "yes");
  EXPECT_EQ(t["prompt_tokens"], (nlohmann::json{1, 2, 3}));
  EXPECT_EQ(t["answer_tokens"], (nlohmann::json{4, 5}));
  EXPECT_EQ(t["timings"], (nlohmann::json{{"total_ms", 5}}));
  EXPECT_EQ(t["interrupted"], false);
  EXPECT_EQ(t["session"], "s");
  // export --format json is the same document.
  EXPECT_EQ(run_ok({"export", std::to_string(id), "--format", "json"}),
            run_ok({"show", std::to_string(id), "--json"}));
}

TEST_F(ConversationsCli, WhateverWasStoredStillShows) {
  // Fields that are not JSON, and an answer cut inside a UTF-8 character.
  Store s = open();
  TurnRecord t;
  t.time_ms = kJan2;
  t.messages_json = "{not json";
  t.sampler_json = "";
  t.answer = "caf\xC3";
  auto r = s.record_turn(t);
  ASSERT_TRUE(r.ok());
  const std::string id = std::to_string(r->conversation);
  const nlohmann::json j = nlohmann::json::parse(run_ok({"show", id, "--json"}));
  EXPECT_EQ(j["turns"][0]["messages"], "{not json");
  EXPECT_EQ(j["turns"][0]["sampler"], "");
  EXPECT_EQ(j["turns"][0]["answer"], "caf\xEF\xBF\xBD");  // U+FFFD
  EXPECT_NE(run_ok({"show", id}).find("messages: {not json\n"), std::string::npos);
  EXPECT_EQ(run_ok({"log"}), id + "  2024-01-02 03:04  1 turn\n");
}

TEST_F(ConversationsCli, ExportWritesAMarkdownTranscript) {
  Store s = open();
  const int64_t id = record(s, 0, kJan2, "What is 1+1?", "1+1 equals 2.").conversation;
  record(s, id, kJan2 + 60'000, "Why?", "Because.", "/m/other.gguf");
  const std::string md = run_ok({"export", std::to_string(id)});
  EXPECT_EQ(md, "# What is 1+1?\n\n*Conversation " + std::to_string(id) +
                    ", started 2024-01-02 03:04 with qwen.gguf.*\n"
                    "\n## User\n\nWhat is 1+1?\n"
                    "\n## Assistant\n\n1+1 equals 2.\n"
                    "\n*Model: other.gguf*\n"
                    "\n## User\n\nWhy?\n"
                    "\n## Assistant\n\nBecause.\n");
  EXPECT_EQ(run_ok({"export", std::to_string(id), "--format", "md"}), md);
}

TEST_F(ConversationsCli, RmDeletesTheConversation) {
  Store s = open();
  const int64_t keep = record(s, 0, kJan2, "keep", "k").conversation;
  const int64_t gone = record(s, 0, kJan2, "gone", "g").conversation;
  EXPECT_EQ(run_ok({"rm", std::to_string(gone)}), "");
  EXPECT_EQ(expect_failure({"show", std::to_string(gone)}, kExitFailure).err,
            "quip: no conversation " + std::to_string(gone) + "\n");
  EXPECT_EQ(expect_failure({"rm", std::to_string(gone)}, kExitFailure).err,
            "quip: no conversation " + std::to_string(gone) + "\n");
  EXPECT_TRUE(s.find(keep)->has_value());
  EXPECT_FALSE(s.find(gone)->has_value());
}

TEST_F(ConversationsCli, MalformedIdsAndOptionsAreUsageErrors) {
  Store s = open();
  record(s, 0, kJan2, "x", "y");
  for (const std::string bad : {"abc", "0", "-1", "1.5", "+1", "1x", "99999999999999999999", ""}) {
    for (const std::string command : {"show", "rm", "export"}) {
      const RunResult r = expect_failure({command, bad}, kExitUsage);
      EXPECT_NE(r.err.find("invalid conversation id"), std::string::npos) << r.err;
    }
  }
  expect_failure({"show"}, kExitUsage);
  expect_failure({"rm"}, kExitUsage);
  expect_failure({"export"}, kExitUsage);
  expect_failure({"show", "1", "2"}, kExitUsage);
  expect_failure({"log", "-n", "-1"}, kExitUsage);
  expect_failure({"log", "-n", "many"}, kExitUsage);
  expect_failure({"log", "--bogus"}, kExitUsage);
  expect_failure({"export", "1", "--format", "html"}, kExitUsage);
  EXPECT_EQ(s.list(0)->size(), 1u);  // nothing removed by a bad rm
}

TEST_F(ConversationsCli, AnUnusableDatabaseIsOneLineAndStatus3) {
  fs::create_directories(db_file().parent_path());
  testing::write_bytes(db_file(), std::string(5000, 'x'));
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"log"}, {"show", "1"}, {"export", "1"}, {"rm", "1"}}) {
    const RunResult r = expect_failure(args, kExitBadData);
    EXPECT_NE(r.err.find(db_file().string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a database"), std::string::npos) << r.err;
  }
  fs::remove(db_file());
  { Store s = open(); }
  store::testing::sql_value(db_file(), "PRAGMA user_version = 99");
  const RunResult r = expect_failure({"log"}, kExitBadData);
  EXPECT_NE(r.err.find("newer quip"), std::string::npos) << r.err;
}

TEST_F(ConversationsCli, EachCommandHasHelp) {
  for (const std::string command : {"log", "show", "rm", "export"}) {
    const std::string out = run_ok({command, "--help"});
    EXPECT_NE(out.find("Usage: quip " + command), std::string::npos) << out;
  }
  const std::string help = run_ok({"--help"});
  for (const std::string command : {"log", "show", "rm", "export"}) {
    EXPECT_NE(help.find("\n  " + command + " "), std::string::npos) << help;
  }
}

}  // namespace
}  // namespace quip::cli
