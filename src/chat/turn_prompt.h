// The prompt of one chat call, as token ids: a new conversation rendered
// whole, or a continued one as its exact stored tokens followed by the
// rendering of the new turn (earlier turns are never rendered again, so a
// template that prints today's date or trims old answers cannot change what
// the model already saw, and the stored prefix can be reused as it is).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace quip::chat {

struct TurnPrompt {
  std::string text;             // what this call rendered (the new part of a continuation)
  std::vector<int32_t> tokens;  // the whole prompt
  // tokens[0, stored) do not come from `text`: the conversation's stored
  // tokens, or the BOS the vocabulary adds in front of a first prompt.
  size_t stored = 0;
  // Of a first prompt: tokens[0, shared) are what a prompt with the same
  // earlier messages (a system prompt) and another last message begins
  // with, so a cache may keep that prefix whole. 0 when unknown.
  size_t shared = 0;
};

// The template's bos_token and eos_token for `tokenizer` (their token texts,
// empty when the vocabulary has none).
void set_special_tokens(const tokenizer::Tokenizer& tokenizer, RenderOptions& options);

// A conversation's first prompt: `messages` rendered with the generation
// prompt, then tokenized with special tokens parsed. BOS is added when the
// vocabulary asks for it and the rendering does not already begin with it.
Result<TurnPrompt> first_turn_prompt(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                                     const nlohmann::json& messages, const RenderOptions& options);

// A continuation. `history` is every message so far, ending with the
// assistant's last answer; `stored` the exact tokens of the conversation
// (its last prompt and answer); `added` the new messages. The new part is
// what rendering history + added (with the generation prompt) adds to
// rendering history alone, starting where the stored answer ends: the end of
// the assistant's turn that the template writes, unless the stored answer
// already ends with that end-of-turn token.
Result<TurnPrompt> next_turn_prompt(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                                    const nlohmann::json& history, std::span<const int32_t> stored,
                                    const nlohmann::json& added, const RenderOptions& options);

}  // namespace quip::chat
