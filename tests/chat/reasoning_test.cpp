// Reasoning told apart from the answer: the splitter against answers
// written out by hand, piece by piece and whole; the style and the
// prompt's state read from ../shared/templates (Qwen3, QwQ, DeepSeek-R1,
// gpt-oss) rendered for a tiny model.
#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "session/loaded_model.h"
#include "support/shared.h"

namespace quip::chat {
namespace {

struct Split {
  std::string answer, reasoning;
};

// `text` fed as pieces of `size` bytes (0: whole).
Split split(ReasoningStyle style, bool inside, std::string_view text, size_t size = 0) {
  ReasoningSplitter s(style, inside);
  Split out;
  for (size_t at = 0; at < text.size(); at += size == 0 ? text.size() : size) {
    s.push(text.substr(at, size == 0 ? text.size() : size), out.answer, out.reasoning);
  }
  s.finish(out.answer, out.reasoning);
  return out;
}

struct Case {
  ReasoningStyle style;
  bool inside;
  std::string text, answer, reasoning;
};

TEST(ReasoningSplitter, SplitsAsWrittenWhateverThePieces) {
  using enum ReasoningStyle;
  const Case cases[] = {
      // Qwen3: the model opens the section itself.
      {Tags, false, "<think>\nThe user greets.\n</think>\n\nHello!", "Hello!",
       "\nThe user greets.\n"},
      {Tags, false, "\n<think></think>Hi", "Hi", ""},
      // No section at all: everything is the answer.
      {Tags, false, "Hello, <thinking> world", "Hello, <thinking> world", ""},
      {Tags, false, "<thin", "<thin", ""},
      // QwQ, DeepSeek-R1: the prompt opened it.
      {Tags, true, "Hmm.</think>\n\nParis.", "Paris.", "Hmm."},
      // Cut short inside: all reasoning, nothing answered.
      {Tags, true, "Let me think </thi", "", "Let me think </thi"},
      {Tags, false, "<think>x", "", "x"},
      // An answer that mentions the tags again keeps them.
      {Tags, true, "a</think>b</think>c", "b</think>c", "a"},
      // gpt-oss: analysis, then the final channel.
      {Harmony, true,
       "<|channel|>analysis<|message|>User says hi.<|end|><|start|>assistant<|channel|>final"
       "<|message|>Hi there.",
       "Hi there.", "User says hi."},
      // A commentary message with a recipient, then the answer.
      {Harmony, true,
       "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|end|>"
       "<|start|>assistant<|channel|>final<|message|>Done",
       "Done", "{}"},
      // Prefilled final channel (--think=off): all answer.
      {Harmony, false, "Paris.", "Paris.", ""},
      // Text that never becomes a message: reasoning, not answer.
      {Harmony, true, "gibberish without a header", "", "gibberish without a header"},
      {None, false, "<think>kept</think>", "<think>kept</think>", ""},
      // A <|message|> past 256 bytes makes no header, however the text is
      // cut (found by fuzz_reasoning).
      {Harmony, true, std::string(300, 'x') + "<|message|>y", "",
       std::string(300, 'x') + "<|message|>y"},
      {Harmony, true, std::string(250, 'x') + "<|message|>y", "", "y"},
  };
  for (const Case& c : cases) {
    for (size_t size : {0, 1, 2, 3, 7}) {
      SCOPED_TRACE(c.text + " in pieces of " + std::to_string(size));
      const Split s = split(c.style, c.inside, c.text, size);
      EXPECT_EQ(s.answer, c.answer);
      EXPECT_EQ(s.reasoning, c.reasoning);
    }
  }
}

TEST(ReasoningSplitter, AHeaderThatNeverEndsIsReasoningBeforeItIsWhole) {
  ReasoningSplitter s(ReasoningStyle::Harmony, true);
  std::string answer, reasoning;
  const std::string long_text(1000, 'x');
  s.push(long_text, answer, reasoning);
  // Passed on while it streams, not held to the end.
  EXPECT_EQ(reasoning.size(), long_text.size());
  EXPECT_EQ(answer, "");
}

TEST(ThinkMode, ParsesTheFourNames) {
  EXPECT_EQ(parse_think_mode("hide"), ThinkMode::Hide);
  EXPECT_EQ(parse_think_mode("show"), ThinkMode::Show);
  EXPECT_EQ(parse_think_mode("off"), ThinkMode::Off);
  EXPECT_EQ(parse_think_mode("inline"), ThinkMode::Inline);
  EXPECT_EQ(parse_think_mode("Hide"), std::nullopt);
  EXPECT_EQ(parse_think_mode(""), std::nullopt);
}

// The shared templates rendered for one user message, with
// enable_thinking as given: the style each is recognised as, whether the
// answer then starts inside the reasoning, and what --think=off adds.
TEST(ReasoningTemplates, StyleAndPromptStateOfEachFamily) {
  auto model =
      session::load_model((testing::shared_dir() / "models" / "tiny-qwen2-e64-f16.gguf").string());
  ASSERT_TRUE(model.ok()) << model.error().message;
  const tokenizer::Vocab& vocab = model->tokenizer.vocab();
  const struct {
    const char* file;
    ReasoningStyle style;
    bool inside_thinking, inside_not_thinking;
    const char* prefill_not_thinking;
  } cases[] = {
      // Qwen3 thinks unless told not to, and then writes an empty section.
      {"Qwen-Qwen3-0.6B.jinja", ReasoningStyle::Tags, false, false, ""},
      // QwQ and R1 (llama.cpp's versions) open the section in the prompt,
      // and close it at once without thinking.
      {"Qwen-QwQ-32B.jinja", ReasoningStyle::Tags, true, false, ""},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ReasoningStyle::Tags, true, false, ""},
      // gpt-oss always starts with a channel's header.
      {"openai-gpt-oss-120b.jinja", ReasoningStyle::Harmony, true, true,
       "<|channel|>final<|message|>"},
      // A template without reasoning.
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ReasoningStyle::None, false, false, ""},
  };
  const nlohmann::json messages = {{{"role", "user"}, {"content", "What is 2+2?"}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string source = testing::read_file(testing::shared_dir() / "templates" / c.file);
    EXPECT_EQ(reasoning_style(source, vocab), c.style);
    auto tmpl = ChatTemplate::parse(source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.error().message;
    for (bool thinking : {true, false}) {
      RenderOptions options;
      options.extra["enable_thinking"] = thinking;
      auto text = tmpl->render(messages, options);
      ASSERT_TRUE(text.ok()) << text.error().message;
      EXPECT_EQ(answer_starts_in_reasoning(c.style, *text),
                thinking ? c.inside_thinking : c.inside_not_thinking)
          << *text;
      if (!thinking) {
        const std::string prefill = no_reasoning_prefill(c.style, *text);
        EXPECT_EQ(prefill, c.prefill_not_thinking) << *text;
        // After the prefill, the answer starts outside the reasoning.
        EXPECT_FALSE(answer_starts_in_reasoning(c.style, *text + prefill)) << *text;
      }
    }
  }
  // A Tags template that ignores enable_thinking and leaves the model to
  // open the section: --think=off writes an empty one.
  EXPECT_EQ(no_reasoning_prefill(ReasoningStyle::Tags, "<|im_start|>assistant\n"),
            "<think>\n\n</think>\n\n");
  EXPECT_EQ(no_reasoning_prefill(ReasoningStyle::Tags, "<|im_start|>assistant\n<think>\n"),
            "\n</think>\n\n");
}

}  // namespace
}  // namespace quip::chat
