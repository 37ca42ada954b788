// --think: a thinking model's reasoning kept off stdout, as a script needs.
// The tiny random models never close their reasoning on their own, so the
// cases rely on the templates that open it in the prompt (QwQ's) or begin
// each answer with a channel's header (gpt-oss's): what --think=inline
// prints as the answer is then, byte for byte, what the default keeps as
// the reasoning, and --think=off (which closes it in the prompt) answers
// on stdout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using quip::testing::RunResult;
using quip::testing::shared_path;

class Think : public testing_home::QuipHome {
 protected:
  // A chat call of the model with `tmpl` from ../shared/templates, 8 tokens.
  std::vector<std::string> call(const std::string& model, const std::string& tmpl,
                                std::vector<std::string> more = {}) const {
    std::vector<std::string> args = {
        "-m", shared_path(model), "--template", shared_path("templates/" + tmpl), "-n",
        "8",  "--no-cache"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back("What is 2+2?");
    return args;
  }
  nlohmann::json json_of(std::vector<std::string> args) const {
    args.push_back("--json");
    return nlohmann::json::parse(run_ok(args));
  }
};

TEST_F(Think, TheDefaultKeepsTheReasoningOffStdoutAndRecordsIt) {
  const std::string model = "models/tiny-qwen3-e64-q8_0.gguf", tmpl = "Qwen-QwQ-32B.jinja";
  const std::string inline_answer = run_ok(call(model, tmpl, {"--think=inline"}));
  ASSERT_FALSE(inline_answer.empty());

  const RunResult hidden = run(call(model, tmpl));
  EXPECT_EQ(hidden.status, kExitOk);
  EXPECT_EQ(hidden.out, "");
  // One line says where the answer went.
  EXPECT_EQ(quip::testing::count_lines(hidden.err), 1u) << hidden.err;
  EXPECT_NE(hidden.err.find("inside the model's reasoning"), std::string::npos) << hidden.err;

  const nlohmann::json j = json_of(call(model, tmpl));
  EXPECT_EQ(j.at("text"), "");
  EXPECT_EQ(j.at("reasoning"), inline_answer);
  const nlohmann::json shown = nlohmann::json::parse(
      run_ok({"show", "--json", std::to_string(j.at("conversation").get<int64_t>())}));
  const nlohmann::json& turn = shown.at("turns").at(0);
  EXPECT_EQ(turn.at("reasoning"), inline_answer);
  EXPECT_EQ(turn.at("answer"), "");
  // The text view folds it below the answer.
  const std::string text = run_ok({"show", std::to_string(j.at("conversation").get<int64_t>())});
  EXPECT_NE(text.find("\nreasoning (1 line"), std::string::npos) << text;

  // --think=show prints it on stderr only where that is a terminal.
  const RunResult shown_off_terminal = run(call(model, tmpl, {"--think=show"}));
  EXPECT_EQ(shown_off_terminal.status, kExitOk);
  EXPECT_EQ(shown_off_terminal.out, "");
  EXPECT_EQ(shown_off_terminal.err, "");
}

// A continued conversation shows the model its earlier turns as the
// template renders them: QwQ's drops an earlier turn's thinking, so the
// next prompt holds the answer without it. --think=inline, where the
// thinking is part of the answer, continues from the stored tokens.
TEST_F(Think, AContinuationRendersEarlierReasoningAsTheTemplateDoes) {
  const std::string model = "models/tiny-qwen3-e64-q8_0.gguf", tmpl = "Qwen-QwQ-32B.jinja";
  const nlohmann::json first = json_of(call(model, tmpl));
  const std::string reasoning = first.at("reasoning");
  ASSERT_GT(reasoning.size(), 8u);
  const std::string id = std::to_string(first.at("conversation").get<int64_t>());
  const std::vector<std::string> next = {
      "--cid", id, "--template", shared_path("templates/" + tmpl), "--print-prompt", "And 3+3?"};
  const std::string dropped = run_ok(next);
  EXPECT_EQ(dropped.find(reasoning), std::string::npos) << dropped;
  EXPECT_NE(dropped.find("What is 2+2?"), std::string::npos) << dropped;
  EXPECT_NE(dropped.find("And 3+3?"), std::string::npos) << dropped;
  std::vector<std::string> kept = next;
  kept.insert(kept.begin(), "--think=inline");
  EXPECT_NE(run_ok(kept).find(reasoning), std::string::npos);
}

TEST_F(Think, OffClosesTheReasoningInThePromptAndAnswersOnStdout) {
  const std::string model = "models/tiny-qwen3-e64-q8_0.gguf", tmpl = "Qwen-QwQ-32B.jinja";
  const std::string prompt = run_ok(call(model, tmpl, {"--think=off", "--print-prompt"}));
  EXPECT_TRUE(prompt.ends_with("<think>\n</think>")) << prompt;
  const std::string thinking = run_ok(call(model, tmpl, {"--print-prompt"}));
  EXPECT_TRUE(thinking.ends_with("<think>\n")) << thinking;

  const nlohmann::json j = json_of(call(model, tmpl, {"--think=off"}));
  EXPECT_NE(j.at("text"), "");
  EXPECT_EQ(j.at("reasoning"), "");
  EXPECT_EQ(run_ok(call(model, tmpl, {"--think=off"})), j.at("text").get<std::string>());
}

TEST_F(Think, GptOssAnswersFromItsFinalChannelAlone) {
  const std::string model = "archs/tiny-gpt-oss-e64-f16.gguf", tmpl = "openai-gpt-oss-120b.jinja";
  // (As JSON: bytes that are not UTF-8 print escaped there.)
  const nlohmann::json inline_answer = json_of(call(model, tmpl, {"--think=inline"}));
  EXPECT_NE(inline_answer.at("text"), "");
  EXPECT_EQ(inline_answer.at("reasoning"), "");
  const nlohmann::json hidden = json_of(call(model, tmpl));
  EXPECT_EQ(hidden.at("text"), "");
  EXPECT_EQ(hidden.at("reasoning"), inline_answer.at("text"));

  const std::string prompt = run_ok(call(model, tmpl, {"--think=off", "--print-prompt"}));
  EXPECT_TRUE(prompt.ends_with("<|start|>assistant<|channel|>final<|message|>")) << prompt;
  const nlohmann::json off = json_of(call(model, tmpl, {"--think=off"}));
  EXPECT_NE(off.at("text"), "");
  EXPECT_EQ(off.at("reasoning"), "");
}

TEST_F(Think, AModelWithoutReasoningAnswersAsBefore) {
  // Qwen2.5's template: nothing to tell apart, every mode the same answer.
  const std::string model = "models/tiny-qwen2-e64-f16.gguf";
  const std::vector<std::string> base = {"-m", shared_path(model), "-n", "8", "--no-cache", "hi"};
  const std::string answer = run_ok(base);
  EXPECT_FALSE(answer.empty());
  for (const char* mode : {"--think=inline", "--think=show", "--think=hide"}) {
    std::vector<std::string> args = base;
    args.insert(args.begin(), mode);
    EXPECT_EQ(run_ok(args), answer) << mode;
  }
}

// config.toml's think: the mode when no flag says otherwise.
TEST_F(Think, TheConfigSetsTheModeAndTheFlagWins) {
  const std::string model = "models/tiny-qwen3-e64-q8_0.gguf", tmpl = "Qwen-QwQ-32B.jinja";
  const fs::path config = home() / "config.toml";
  quip::testing::write_bytes(config, "think = \"inline\"\n");
  const std::string inline_answer = run_ok(call(model, tmpl, {"--think=inline"}));
  EXPECT_EQ(run_ok(call(model, tmpl, {"--config", config.string()})), inline_answer);
  const RunResult hidden = run(call(model, tmpl, {"--config", config.string(), "--think=hide"}));
  EXPECT_EQ(hidden.status, kExitOk);
  EXPECT_EQ(hidden.out, "");
}

TEST_F(Think, AnUnknownModeIsAUsageError) {
  expect_failure(call("models/tiny-qwen3-e64-q8_0.gguf", "Qwen-QwQ-32B.jinja", {"--think=maybe"}),
                 kExitUsage, "--think: 'maybe' is not one of hide, show, off, inline");
}

}  // namespace
}  // namespace quip::cli
