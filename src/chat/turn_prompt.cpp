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

// A first prompt without `shared`.
Result<TurnPrompt> render_first(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                                const nlohmann::json& messages, const RenderOptions& options) {
  auto rendered = tmpl.render(messages, options);
  if (!rendered) return rendered.error();
  TurnPrompt p;
  p.text = std::move(*rendered);
  // Templates that print bos_token themselves would give two BOS with the one
  // the vocabulary adds: the text drops its own, as llama.cpp's does.
  const tokenizer::Vocab& vocab = tokenizer.vocab();
  const bool add_bos = vocab.add_bos() && vocab.bos() != tokenizer::kNoToken;
  if (add_bos && !options.bos_token.empty() && p.text.starts_with(options.bos_token)) {
    p.text.erase(0, options.bos_token.size());
  }
  if (add_bos) p.tokens.push_back(vocab.bos());
  p.stored = p.tokens.size();
  const std::vector<int32_t> body = encode(tokenizer, p.text);
  p.tokens.insert(p.tokens.end(), body.begin(), body.end());
  if (p.tokens.empty()) return Error{"the chat template rendered an empty prompt"};
  return p;
}

}  // namespace

void set_special_tokens(const tokenizer::Tokenizer& tokenizer, RenderOptions& options) {
  options.bos_token = token_text(tokenizer, tokenizer.vocab().bos());
  options.eos_token = token_text(tokenizer, tokenizer.vocab().eos());
}

Result<TurnPrompt> first_turn_prompt(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tokenizer,
                                     const nlohmann::json& messages, const RenderOptions& options) {
  auto p = render_first(tmpl, tokenizer, messages, options);
  if (!p) return p;
  // What does not depend on the last message: the tokens this prompt shares
  // with the same messages ending in another text (one that differs from
  // the first character on).
  if (messages.is_array() && !messages.empty() && messages.back().is_object() &&
      messages.back().contains("content") && messages.back()["content"].is_string()) {
    const std::string& content = messages.back()["content"].get_ref<const std::string&>();
    nlohmann::json other = messages;
    other.back()["content"] = content.starts_with('x') ? "y" : "x";
    if (auto q = render_first(tmpl, tokenizer, other, options)) {
      const auto diverge = std::mismatch(p->tokens.begin(), p->tokens.end(), q->tokens.begin(),
                                         q->tokens.end());
      p->shared = static_cast<size_t>(diverge.first - p->tokens.begin());
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
    return Error{"the chat template does not print the assistant's answers, so a conversation "
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
