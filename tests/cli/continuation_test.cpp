// Continuing conversations through the quip binary under the conditions
// that used to corrupt them: calls that continue the same turn at once.
// Every recorded turn must have been computed from its recorded parent:
// its prompt starts with the parent's stored prompt and answer tokens.
#include <gtest/gtest.h>

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

  testing::TempDir home_;
};

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
  EXPECT_NE(show.out.find("(branched after turn 1 into conversation "), std::string::npos)
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

}  // namespace
}  // namespace quip::cli
