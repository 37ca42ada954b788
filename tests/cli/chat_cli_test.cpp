// `quip PROMPT` as a user runs it: chat prompts through the model's
// template, conversations continued with -c and --cid, stdin as context,
// nesting in $(...), the config file, and the store's promises (concurrent
// calls, interrupted and killed calls, a read-only disk).
//
// Expectations are independent of the code under test where they can be:
// the answer of a chat call equals the --raw answer to the token ids its
// --print-prompt reports; turn 2's prompt is turn 1's stored tokens followed
// by the template's text for the new turn (checked against the text the
// reference rendering of the whole conversation has after the answer).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "gguf/reader.h"
#include "store/store.h"
#include "support/run_quip.h"
#include "support/shared.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {
namespace {

using testing::run_quip;
using testing::RunOptions;
using testing::RunResult;

// A model with its own template (Qwen2.5's) and <|im_end|> as end of turn.
constexpr const char* kModel = "tiny-qwen2-e64-f16.gguf";

std::string model_path() {
  return (testing::shared_dir() / "models" / kModel).string();
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class ChatCli : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.env = {{"QUIP_HOME", home_.path().string()},
                    {"QUIP_SESSION", "test-session"},
                    {"QUIP_CONFIG", ""}};
  }

  RunResult run(std::vector<std::string> args, RunOptions options) {
    options.env.insert(options.env.end(), options_.env.begin(), options_.env.end());
    return run_quip(args, options);
  }
  RunResult run(std::vector<std::string> args) { return run(std::move(args), RunOptions{}); }

  nlohmann::json run_json(std::vector<std::string> args, RunOptions options = {}) {
    args.push_back("--json");
    const RunResult r = run(args, std::move(options));
    EXPECT_EQ(r.status, kExitOk) << testing::describe(args, r);
    EXPECT_EQ(r.err, "");
    return r.status == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  store::Store open_store() {
    auto s = store::Store::open_read_only(home_.path() / "data" / "quip.db");
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s.ok()) throw std::runtime_error(s.error().message);
    return std::move(*s);
  }

  std::vector<store::TurnRecord> turns(int64_t conversation) {
    store::Store s = open_store();
    auto t = s.turns(conversation);
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? *t : std::vector<store::TurnRecord>{};
  }

  testing::TempDir home_;
  RunOptions options_;
};

// Line 1 of the acceptance: the answer, and nothing else, on stdout; it is
// the model's greedy answer to the prompt --print-prompt shows.
TEST_F(ChatCli, AnswersOnStdoutOnly) {
  QUIP_REQUIRE_SHARED();
  const RunResult r = run({"-m", model_path(), "-n", "10", "What is 1+1?"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json p = run_json({"-m", model_path(), "--print-prompt", "What is 1+1?"});
  EXPECT_EQ(p.at("text"),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
            "helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is "
            "1+1?<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<std::string> raw = {
      "--raw", "-m", model_path(), "-n", "10", "--tokens", ids_text(p.at("tokens"))};
  const RunResult expected = run(raw);
  ASSERT_EQ(expected.status, kExitOk) << testing::describe(raw, expected);
  EXPECT_EQ(r.out, expected.out);
  EXPECT_FALSE(r.out.empty());
}

// Line 2: -c continues this terminal's last conversation with its model;
// turn 2's prompt is turn 1's stored tokens followed by the new turn.
TEST_F(ChatCli, ContinueAppendsTheNewTurnToTheStoredTokens) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json t1 = run_json({"-m", model_path(), "-n", "6", "What is 1+1?"});
  const nlohmann::json t2 = run_json({"-c", "-n", "6", "Not that trivial, is it?"});
  EXPECT_EQ(t2.at("conversation"), t1.at("conversation"));
  EXPECT_EQ(t1.at("turn"), 1);
  EXPECT_EQ(t2.at("turn"), 2);

  std::vector<int32_t> stored = t1.at("prompt_tokens");
  const std::vector<int32_t> answer = t1.at("tokens");
  stored.insert(stored.end(), answer.begin(), answer.end());
  const std::vector<int32_t> p2 = t2.at("prompt_tokens");
  ASSERT_GT(p2.size(), stored.size());
  EXPECT_EQ(std::vector<int32_t>(p2.begin(), p2.begin() + stored.size()), stored);

  auto file = gguf::GgufFile::open(model_path());
  ASSERT_TRUE(file.ok());
  auto tok = tokenizer::Tokenizer::load(*file);
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> added(p2.begin() + stored.size(), p2.end());
  EXPECT_EQ(tok->decode(added, {.special = true, .strip_leading_space = false}),
            "<|im_end|>\n<|im_start|>user\nNot that trivial, is it?<|im_end|>\n"
            "<|im_start|>assistant\n");

  // The store holds exactly what the calls reported.
  const auto recorded = turns(t1.at("conversation"));
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].prompt_tokens, t1.at("prompt_tokens").get<std::vector<int32_t>>());
  EXPECT_EQ(recorded[0].answer_tokens, answer);
  EXPECT_EQ(recorded[1].prompt_tokens, p2);
  EXPECT_EQ(recorded[1].parent_turn, 1);
  EXPECT_EQ(recorded[1].answer, t2.at("text"));
}

// -c belongs to the terminal session: another session has no "last".
TEST_F(ChatCli, ContinueIsScopedToTheSession) {
  QUIP_REQUIRE_SHARED();
  run_json({"-m", model_path(), "-n", "2", "hello"});
  RunOptions other;
  other.env = {{"QUIP_SESSION", "another-terminal"}};
  const RunResult r = run({"-c", "-n", "2", "again"}, other);
  EXPECT_EQ(r.status, kExitFailure);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::count_lines(r.err), 1u) << r.err;
}

// --cid ID@N forks: a new conversation holding turns 1..N and the new one;
// the original keeps its turns.
TEST_F(ChatCli, ForkLeavesTheParentIntact) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json t1 = run_json({"-m", model_path(), "-n", "4", "first"});
  const nlohmann::json t2 = run_json({"-c", "-n", "4", "second"});
  const int64_t id = t1.at("conversation");
  const auto before = turns(id);
  ASSERT_EQ(before.size(), 2u);

  const nlohmann::json f =
      run_json({"--cid", std::to_string(id) + "@1", "-n", "4", "second, differently"});
  EXPECT_NE(f.at("conversation"), id);
  EXPECT_EQ(f.at("turn"), 2);
  const auto after = turns(id);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[1].prompt_tokens, before[1].prompt_tokens);
  EXPECT_EQ(after[1].answer, before[1].answer);
  const auto fork = turns(f.at("conversation"));
  ASSERT_EQ(fork.size(), 2u);
  EXPECT_EQ(fork[0].prompt_tokens, before[0].prompt_tokens);
  // The fork's prompt starts with turn 1's tokens, not turn 2's.
  std::vector<int32_t> stored = before[0].prompt_tokens;
  stored.insert(stored.end(), before[0].answer_tokens.begin(), before[0].answer_tokens.end());
  const std::vector<int32_t> p = f.at("prompt_tokens");
  ASSERT_GT(p.size(), stored.size());
  EXPECT_EQ(std::vector<int32_t>(p.begin(), p.begin() + stored.size()), stored);

  // --cid ID continues any conversation, here the original.
  const nlohmann::json t3 = run_json({"--cid", std::to_string(id), "-n", "2", "third"});
  EXPECT_EQ(t3.at("conversation"), id);
  EXPECT_EQ(t3.at("turn"), 3);
}

// Line 4: stdin is context, before the arguments.
TEST_F(ChatCli, StdinIsContext) {
  QUIP_REQUIRE_SHARED();
  testing::write_bytes(home_ / "stdin.txt", "some context\n");
  RunOptions with_stdin;
  with_stdin.stdin_from = (home_ / "stdin.txt").string();
  const nlohmann::json p =
      run_json({"-m", model_path(), "--print-prompt", "Summarize"}, with_stdin);
  EXPECT_NE(p.at("text").get<std::string>().find(
                "<|im_start|>user\nsome context\n\nSummarize<|im_end|>\n"),
            std::string::npos)
      << p.at("text");
  const RunResult r = run({"-m", model_path(), "-n", "3", "Summarize"}, with_stdin);
  EXPECT_EQ(r.status, kExitOk) << r.err;
  // -f FILE reads the prompt from a file.
  const nlohmann::json pf =
      run_json({"-m", model_path(), "--print-prompt", "-f", (home_ / "stdin.txt").string()});
  EXPECT_NE(pf.at("text").get<std::string>().find("<|im_start|>user\nsome context<|im_end|>"),
            std::string::npos);
}

// --system sets the system message of a new conversation.
TEST_F(ChatCli, SystemMessage) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json p =
      run_json({"-m", model_path(), "--print-prompt", "--system", "Be terse.", "hi"});
  EXPECT_EQ(p.at("text"),
            "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// Line 3: nested calls in $(...) run one after another, each a conversation
// of its own, with the model from the config file.
TEST_F(ChatCli, NestedCallsWithTheConfigsModel) {
  QUIP_REQUIRE_SHARED();
  std::filesystem::create_directories(home_ / "config");
  testing::write_bytes(
      home_ / "config" / "config.toml",
      "model = \"tiny\"\nn_predict = 4\n\n[models.tiny]\npath = \"" + model_path() + "\"\n");
  const std::string q = QUIP_BINARY;
  testing::write_bytes(home_ / "nest.sh", "set -e\n\"" + q + "\" \"$(\"" + q +
                                              "\" \"Given this: $(\"" + q +
                                              "\" 'Initial question?') elaborate\") Why?\"\n");
  RunOptions sh;
  sh.env = options_.env;
  const RunResult r = testing::run_command({"/bin/sh", (home_ / "nest.sh").string()}, sh);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  store::Store s = open_store();
  auto all = s.list(0);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->size(), 3u);
}

// The config's model alias carries its settings; flags win over them.
TEST_F(ChatCli, AliasSettingsAndFlags) {
  QUIP_REQUIRE_SHARED();
  std::filesystem::create_directories(home_ / "config");
  testing::write_bytes(home_ / "config" / "config.toml",
                       "[models.tiny]\npath = \"" + model_path() +
                           "\"\nsystem = \"From the config.\"\nn_predict = 3\n");
  const nlohmann::json p = run_json({"-m", "tiny", "--print-prompt", "hi"});
  EXPECT_EQ(p.at("text").get<std::string>().rfind("<|im_start|>system\nFrom the config.", 0), 0u);
  EXPECT_EQ(run_json({"-m", "tiny", "--ignore-eos", "hi"}).at("tokens").size(), 3u);
  EXPECT_EQ(run_json({"-m", "tiny", "--ignore-eos", "-n", "5", "hi"}).at("tokens").size(), 5u);

  testing::write_bytes(home_ / "config" / "config.toml", "temperature = 1\n");
  const RunResult bad = run({"-m", model_path(), "hi"});
  EXPECT_EQ(bad.status, kExitUsage);
  EXPECT_NE(bad.err.find("temperature: unknown key"), std::string::npos) << bad.err;
}

// --json and --stats report the same usage figures.
TEST_F(ChatCli, JsonAndStatsReportUsage) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json j = run_json({"-m", model_path(), "-n", "4", "--ignore-eos", "hi"});
  const auto& u = j.at("usage");
  EXPECT_EQ(u.at("prompt_tokens"), j.at("prompt_tokens").size());
  EXPECT_EQ(u.at("generated_tokens"), 4);
  EXPECT_EQ(u.at("cached_tokens").get<size_t>() + u.at("evaluated_tokens").get<size_t>(),
            u.at("prompt_tokens").get<size_t>());
  EXPECT_TRUE(j.at("timings").contains("prompt_ms"));
  const RunResult r = run({"-m", model_path(), "-n", "4", "--ignore-eos", "--stats", "hi"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_EQ(testing::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("4 generated"), std::string::npos) << r.err;
}

// 2>&1: the stats line starts a line of its own, added on stderr, so the
// answer before it is exactly stdout's answer.
TEST_F(ChatCli, StatsStartALineOfTheirOwnWhenStderrIsStdout) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"-m",           model_path(), "-n",      "3",
                                         "--ignore-eos", "--no-cache", "--stats", "hi"};
  const RunResult apart = run(args);
  ASSERT_EQ(apart.status, kExitOk) << apart.err;
  ASSERT_FALSE(apart.out.empty());
  RunOptions o;
  o.stderr_to_stdout = true;
  const RunResult together = run(args, o);
  ASSERT_EQ(together.status, kExitOk) << together.out;
  const std::string answer = apart.out + (apart.out.back() == '\n' ? "" : "\n");
  EXPECT_EQ(together.out.substr(0, answer.size()), answer) << together.out;
  EXPECT_EQ(together.out.substr(answer.size(), 19), "quip: conversation ") << together.out;
}

// Ctrl-C: what was generated is printed and stored, marked interrupted.
TEST_F(ChatCli, InterruptIsRecorded) {
  QUIP_REQUIRE_SHARED();
  RunOptions o;
  o.signal_on_output = SIGINT;
  const RunResult r = run({"-m", model_path(), "--ignore-eos", "--ctx-size", "100000", "-t", "1",
                           "Tell me a long story."},
                          o);
  EXPECT_EQ(r.status, kExitInterrupted) << r.err;
  EXPECT_FALSE(r.out.empty());
  store::Store s = open_store();
  auto last = s.last_turn_in_session("test-session");
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_TRUE((*last)->interrupted);
  EXPECT_EQ((*last)->answer, r.out);
}

// A call killed outright leaves the database usable.
TEST_F(ChatCli, KilledCallLeavesTheStoreUsable) {
  QUIP_REQUIRE_SHARED();
  run_json({"-m", model_path(), "-n", "2", "before"});
  RunOptions o;
  o.signal_on_output = SIGKILL;
  const RunResult r = run(
      {"-m", model_path(), "--ignore-eos", "--ctx-size", "100000", "-t", "1", "-c", "Go on."}, o);
  EXPECT_TRUE(r.killed);
  const nlohmann::json after = run_json({"-c", "-n", "2", "after"});
  EXPECT_EQ(after.at("turn"), 2);  // the killed call recorded nothing
}

// 8 calls at once: every one is recorded.
TEST_F(ChatCli, ConcurrentCallsAreAllRecorded) {
  QUIP_REQUIRE_SHARED();
  std::ostringstream script;
  script << "pids=''\n";
  for (int i = 0; i < 8; ++i) {
    script << '"' << QUIP_BINARY << "\" -m \"" << model_path() << "\" -n 3 -t 1 'q" << i
           << "' > /dev/null & pids=\"$pids $!\"\n";
  }
  script << "s=0; for p in $pids; do wait $p || s=1; done; exit $s\n";
  testing::write_bytes(home_ / "eight.sh", script.str());
  RunOptions sh;
  sh.env = options_.env;
  const RunResult r = testing::run_command({"/bin/sh", (home_ / "eight.sh").string()}, sh);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  store::Store s = open_store();
  auto all = s.list(0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
}

// A read-only data folder: the answer still reaches stdout; one line says
// it was not recorded; exit status 1.
TEST_F(ChatCli, ReadOnlyStoreStillAnswers) {
  QUIP_REQUIRE_SHARED();
  std::filesystem::create_directories(home_ / "data");
  std::filesystem::create_directories(home_ / "cache");
  chmod((home_ / "data").c_str(), 0555);
  std::vector<std::string> command = {QUIP_BINARY};
  if (geteuid() == 0) {
    // root writes to read-only folders: run quip as nobody, who may enter
    // the home and write the cache but not the data folder.
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "root, and no setpriv";
    command = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", QUIP_BINARY};
    chmod(home_.path().c_str(), 0755);
    chmod((home_ / "cache").c_str(), 0777);
  }
  command.insert(command.end(), {"-m", model_path(), "-n", "4", "--ignore-eos", "hi"});
  RunOptions o;
  o.env = options_.env;
  const RunResult r = run_command(command, o);
  chmod((home_ / "data").c_str(), 0755);
  EXPECT_EQ(r.status, kExitFailure) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(testing::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("not recorded"), std::string::npos) << r.err;
}

// A full disk under stdout is an error with one line; a reader that goes
// away (EPIPE) is not.
TEST_F(ChatCli, FullDiskIsAnError) {
  QUIP_REQUIRE_SHARED();
  RunOptions o;
  o.stdout_to = "/dev/full";
  const RunResult r = run({"-m", model_path(), "-n", "8", "--ignore-eos", "hi"}, o);
  EXPECT_EQ(r.status, kExitFailure);
  EXPECT_EQ(testing::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
}

TEST_F(ChatCli, BadInputGetsOneLineAndItsStatus) {
  QUIP_REQUIRE_SHARED();
  const auto failure = [&](std::vector<std::string> args, int status) {
    const RunResult r = run(args);
    EXPECT_EQ(r.status, status) << testing::describe(args, r);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(testing::count_lines(r.err), 1u) << testing::describe(args, r);
  };
  failure({"hello"}, kExitUsage);                                     // no model anywhere
  failure({"-m", model_path()}, kExitUsage);                          // no prompt
  failure({"--cid", "x1", "-m", model_path(), "hi"}, kExitUsage);     // malformed id
  failure({"--cid", "12@0", "-m", model_path(), "hi"}, kExitUsage);   // malformed turn
  failure({"--cid", "999", "-m", model_path(), "hi"}, kExitFailure);  // no such conversation
  failure({"-c", "-m", model_path(), "hi"}, kExitFailure);            // nothing to continue
  failure({"-c", "--system", "s", "-m", model_path(), "hi"}, kExitUsage);
  failure({"--template", (home_ / "none.jinja").string(), "-m", model_path(), "hi"}, kExitUsage);
  testing::write_bytes(home_ / "bad.jinja", "{% if %}");
  failure({"--template", (home_ / "bad.jinja").string(), "-m", model_path(), "hi"}, kExitUsage);
  failure({"-m", model_path(), "--tokens", "1 2", "hi"}, kExitUsage);  // --tokens needs --raw
  // Values read as the user wrote them.
  const RunResult temp = run({"-m", model_path(), "--temp", "-1", "hi"});
  EXPECT_EQ(temp.status, kExitUsage);
  EXPECT_NE(temp.err.find("--temp -1 is not in [0, 100]"), std::string::npos) << temp.err;
}

}  // namespace
}  // namespace quip::cli
