// A model's reasoning (the thinking it writes before its answer) told apart
// from the answer, so that a script reads the answer alone.
//
// Two ways of writing it are known, each recognised from the chat template
// and the vocabulary:
//   - Tags (Qwen3, QwQ, DeepSeek-R1 and its distills): "<think>" ... "</think>",
//     then the answer. Some templates open the section in the prompt, so the
//     answer begins inside it.
//   - Harmony (gpt-oss): messages "<|channel|>NAME<|message|>" ... "<|end|>",
//     each after "<|start|>assistant" but the first; the "final" channel is
//     the answer, "analysis" and "commentary" are reasoning.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace quip::chat {

// What a call does with the reasoning (--think).
enum class ThinkMode {
  Hide,    // generated, recorded as the turn's reasoning, not printed (the default)
  Show,    // as Hide, and printed to stderr where that is a terminal
  Off,     // the template asked not to think (enable_thinking=false), or an empty section
  Inline,  // no telling apart: everything is the answer
};

// "hide", "show", "off" or "inline"; nullopt for anything else.
std::optional<ThinkMode> parse_think_mode(std::string_view text);

enum class ReasoningStyle { None, Tags, Harmony };

// The style of a model whose chat template is `template_source`: Harmony
// where the template or the vocabulary names "<|channel|>" and
// "<|message|>"; Tags where either names "</think>"; else None.
ReasoningStyle reasoning_style(std::string_view template_source, const tokenizer::Vocab& vocab);

// Whether an answer that follows `prompt_text` begins inside the reasoning:
// Tags whose last "<think>" is not closed (the template opened it); Harmony
// unless the prompt ends in the final channel's header.
bool answer_starts_in_reasoning(ReasoningStyle style, std::string_view prompt_text);

// What --think=off appends to a prompt whose template did not close the
// reasoning itself: Tags, "\n</think>\n\n" inside an open section or an empty
// "<think>\n\n</think>\n\n" where none is written yet; Harmony, the final
// channel's header. "" where nothing is needed.
std::string no_reasoning_prefill(ReasoningStyle style, std::string_view prompt_text);

// Splits an answer's text as it streams. Each push() appends to `answer`
// and `reasoning` what is certain so far; a piece that ends inside a marker
// waits for the next one. Markers are not written to either. An answer
// that never leaves its reasoning is all reasoning.
class ReasoningSplitter {
 public:
  ReasoningSplitter(ReasoningStyle style, bool starts_in_reasoning);

  void push(std::string_view piece, std::string& answer, std::string& reasoning);
  // The end of the answer: what waited goes where it stands.
  void finish(std::string& answer, std::string& reasoning);

 private:
  enum class State {
    Start,     // Tags: before anything but white space
    Thinking,  // Tags: inside <think>
    Closed,    // Tags: after </think>, skipping white space
    Answer,    // the rest is the answer
    Header,    // Harmony: a message's header, up to <|message|>
    Body,      // Harmony: a message's text, up to <|end|>
  };
  State state_;
  bool final_channel_ = false;  // Harmony: the Body is the answer's
  std::string pending_;         // text not placed yet
};

}  // namespace quip::chat
