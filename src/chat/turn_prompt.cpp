#include "chat/turn_prompt.h"

#include <algorithm>

namespace quip::chat {

namespace {

// Stands in for the last answer when rendering a continuation, to find where
// the template's text after that answer begins. Plain ASCII, so that trim,
// tojson and escaping leave it as it is.
constexpr std::string_view kAnswerMarker = "QUIP-ANSWER-7f3c9e51d2";

std::string token_text(const tokenizer::Tokenizer& tokenizer, tokenizer::TokenId id) {
  if (id == tokenizer::kNoToken || !tokenizer.vocab().valid(id)) return "";
  return std::string(tokenizer.vocab().text(id));
}

std::vector<int32_t> encode(const tokenizer::Tokenizer& tokenizer, std::string_view text) {
  return tokenizer.encode(text, {.add_special = false, .parse_special = true});
}

bool adds_bos(const tokenizer::Tokenizer& tokenizer) {
  return tokenizer.vocab().add_bos() && tokenizer.vocab().bos() != tokenizer::kNoToken;
}

// The template's text for a first prompt: `messages` rendered, less a
// leading BOS text when the vocabulary adds BOS itself (the text would give
// a second one; llama.cpp drops it too).
Result<std::string> first_text(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                               const nlohmann::json& messages, const RenderOptions& options) {
  auto text = tmpl.render(messages, options);
  if (!text) return text.error();
  if (adds_bos(tokenizer) && !options.bos_token.empty() && text->starts_with(options.bos_token)) {
    text->erase(0, options.bos_token.size());
  }
  return text;
}

// BOS where the vocabulary adds it, then the tokens of `text`.
std::vector<int32_t> first_tokens(const tokenizer::Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> tokens;
  if (adds_bos(tokenizer)) tokens.push_back(tokenizer.vocab().bos());
  const std::vector<int32_t> body = encode(tokenizer, text);
  tokens.insert(tokens.end(), body.begin(), body.end());
  return tokens;
}

}  // namespace

void set_special_tokens(const tokenizer::Tokenizer& tokenizer, RenderOptions& options) {
  options.bos_token = token_text(tokenizer, tokenizer.vocab().bos());
  options.eos_token = token_text(tokenizer, tokenizer.vocab().eos());
}

Result<TurnPrompt> first_turn_prompt(const ChatTemplate& tmpl,
                                     const tokenizer::Tokenizer& tokenizer,
                                     const nlohmann::json& messages, const RenderOptions& options) {
  auto text = first_text(tmpl, tokenizer, messages, options);
  if (!text) return text.error();
  TurnPrompt p;
  p.text = std::move(*text);
  p.tokens = first_tokens(tokenizer, p.text);
  if (p.tokens.empty()) return Error{"the chat template rendered an empty prompt"};
  p.stored = adds_bos(tokenizer) ? 1 : 0;
  // What does not depend on the last message: the text this prompt shares
  // with the same messages ending in another text (one that differs from
  // the first character on), as far as that text alone gives the prompt's
  // tokens. Only that shared text is encoded again, not the whole prompt.
  if (messages.is_array() && !messages.empty() && messages.back().is_object() &&
      messages.back().contains("content") && messages.back()["content"].is_string()) {
    const std::string& content = messages.back()["content"].get_ref<const std::string&>();
    nlohmann::json other = messages;
    other.back()["content"] = content.starts_with('x') ? "y" : "x";
    if (auto q = first_text(tmpl, tokenizer, other, options)) {
      const auto common = std::mismatch(p.text.begin(), p.text.end(), q->begin(), q->end());
      const std::vector<int32_t> prefix = first_tokens(
          tokenizer, std::string_view(p.text).substr(0, common.first - p.text.begin()));
      const auto agree =
          std::mismatch(p.tokens.begin(), p.tokens.end(), prefix.begin(), prefix.end());
      p.shared = static_cast<size_t>(agree.first - p.tokens.begin());
    }
  }
  return p;
}

Result<TurnPrompt> next_turn_prompt(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                                    const nlohmann::json& history, std::span<const int32_t> stored,
                                    const nlohmann::json& added, const RenderOptions& options) {
  if (!history.is_array() || history.empty() || !history.back().is_object() ||
      history.back().value("role", "") != "assistant") {
    return Error{"a continued conversation must end with the assistant's answer"};
  }
  if (stored.empty()) return Error{"the conversation has no stored tokens"};
  nlohmann::json messages = history;
  messages.back()["content"] = kAnswerMarker;
  for (const auto& m : added) messages.push_back(m);
  auto rendered = tmpl.render(messages, options);
  if (!rendered) return rendered.error();
  const size_t at = rendered->rfind(kAnswerMarker);
  if (at == std::string::npos) {
    return Error{
        "the chat template does not print the assistant's answers, so a conversation "
        "cannot be continued with it"};
  }
  TurnPrompt p;
  p.text = rendered->substr(at + kAnswerMarker.size());
  p.tokens.assign(stored.begin(), stored.end());
  p.stored = stored.size();
  const std::vector<int32_t> added_tokens = encode(tokenizer, p.text);
  p.tokens.insert(p.tokens.end(), added_tokens.begin(), added_tokens.end());
  return p;
}

}  // namespace quip::chat
