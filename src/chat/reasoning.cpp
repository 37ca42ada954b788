#include "chat/reasoning.h"

#include <algorithm>

namespace quip::chat {

namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";
constexpr std::string_view kChannel = "<|channel|>", kMessage = "<|message|>", kEnd = "<|end|>";
constexpr std::string_view kFinalHeader = "<|channel|>final<|message|>";
// A Harmony header longer than this is no header: the text goes on as
// reasoning rather than wait for a <|message|> that will not come.
constexpr size_t kMaxHeader = 256;

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The length of the longest end of `text` that begins `marker` (a marker
// split over two pieces).
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Moves pending text up to `marker` to `out`: true with the marker found
// (and dropped), false with all but a possible start of it moved.
bool take_until(std::string& pending, std::string_view marker, std::string& out) {
  const size_t at = pending.find(marker);
  if (at != std::string::npos) {
    out.append(pending, 0, at);
    pending.erase(0, at + marker.size());
    return true;
  }
  const size_t keep = partial_marker(pending, marker);
  out.append(pending, 0, pending.size() - keep);
  pending.erase(0, pending.size() - keep);
  return false;
}

// Drops the white space `pending` begins with: false when that was all.
bool drop_leading_space(std::string& pending) {
  const size_t text = pending.find_first_not_of(" \n\r\t");
  pending.erase(0, text == std::string::npos ? pending.size() : text);
  return !pending.empty();
}

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<ThinkMode> parse_think_mode(std::string_view text) {
  if (text == "hide") return ThinkMode::Hide;
  if (text == "show") return ThinkMode::Show;
  if (text == "off") return ThinkMode::Off;
  if (text == "inline") return ThinkMode::Inline;
  return std::nullopt;
}

ReasoningStyle reasoning_style(std::string_view template_source, const tokenizer::Vocab& vocab) {
  const auto names = [&](std::string_view marker) {
    return template_source.find(marker) != std::string_view::npos ||
           vocab.find(marker) != tokenizer::kNoToken;
  };
  if (names(kChannel) && names(kMessage)) return ReasoningStyle::Harmony;
  if (names(kClose)) return ReasoningStyle::Tags;
  return ReasoningStyle::None;
}

bool answer_starts_in_reasoning(ReasoningStyle style, std::string_view prompt_text) {
  switch (style) {
    case ReasoningStyle::None: return false;
    case ReasoningStyle::Tags: {
      const size_t open = prompt_text.rfind(kOpen);
      if (open == std::string_view::npos) return false;
      const size_t close = prompt_text.rfind(kClose);
      return close == std::string_view::npos || close < open;
    }
    case ReasoningStyle::Harmony: return !trim_end(prompt_text).ends_with(kFinalHeader);
  }
  return false;
}

std::string no_reasoning_prefill(ReasoningStyle style, std::string_view prompt_text) {
  switch (style) {
    case ReasoningStyle::None: return "";
    case ReasoningStyle::Tags:
      if (answer_starts_in_reasoning(style, prompt_text)) return "\n</think>\n\n";
      return trim_end(prompt_text).ends_with(kClose) ? "" : "<think>\n\n</think>\n\n";
    case ReasoningStyle::Harmony:
      return trim_end(prompt_text).ends_with(kFinalHeader) ? "" : std::string(kFinalHeader);
  }
  return "";
}

ReasoningSplitter::ReasoningSplitter(ReasoningStyle style, bool starts_in_reasoning)
    : state_(style == ReasoningStyle::None ? State::Answer
             : style == ReasoningStyle::Harmony
                 ? (starts_in_reasoning ? State::Header : State::Body)
             : starts_in_reasoning ? State::Thinking
                                   : State::Start),
      final_channel_(style == ReasoningStyle::Harmony && !starts_in_reasoning) {}

void ReasoningSplitter::push(std::string_view piece, std::string& answer, std::string& reasoning) {
  pending_.append(piece);
  for (;;) {
    switch (state_) {
      case State::Start:
        // White space before the section is dropped; anything but the
        // section's opening means the model answered without one.
        if (!drop_leading_space(pending_)) return;
        if (pending_.starts_with(kOpen)) {
          pending_.erase(0, kOpen.size());
          state_ = State::Thinking;
        } else if (kOpen.starts_with(pending_)) {
          return;  // perhaps the opening, split
        } else {
          state_ = State::Answer;
        }
        break;
      case State::Thinking:
        if (!take_until(pending_, kClose, reasoning)) return;
        state_ = State::Closed;
        break;
      case State::Closed:
        if (!drop_leading_space(pending_)) return;
        state_ = State::Answer;
        break;
      case State::Answer:
        answer += pending_;
        pending_.clear();
        return;
      case State::Header: {
        // A header is one whose <|message|> starts within kMaxHeader bytes
        // (decided on those bytes alone, however the text was cut).
        const size_t at = pending_.find(kMessage);
        if (at == std::string::npos || at > kMaxHeader) {
          if (at == std::string::npos && pending_.size() < kMaxHeader + kMessage.size()) return;
          final_channel_ = false;  // no header after all: reasoning
          state_ = State::Body;
          break;
        }
        // "<|start|>assistant<|channel|>NAME[ to=...][<|constrain|>...]".
        const std::string_view header(pending_.data(), at);
        const size_t channel = header.find(kChannel);
        std::string_view name =
            channel == std::string_view::npos ? "" : header.substr(channel + kChannel.size());
        name = name.substr(0, name.find_first_of(" <"));
        final_channel_ = name == "final";
        pending_.erase(0, at + kMessage.size());
        state_ = State::Body;
        break;
      }
      case State::Body:
        if (!take_until(pending_, kEnd, final_channel_ ? answer : reasoning)) return;
        state_ = State::Header;
        break;
    }
  }
}

void ReasoningSplitter::finish(std::string& answer, std::string& reasoning) {
  switch (state_) {
    case State::Start: answer += pending_; break;  // a start of "<think>" that was not
    case State::Thinking: reasoning += pending_; break;
    case State::Closed: break;
    case State::Answer: answer += pending_; break;
    case State::Header: reasoning += pending_; break;
    case State::Body: (final_channel_ ? answer : reasoning) += pending_; break;
  }
  pending_.clear();
}

}  // namespace quip::chat
