#include "serve/sse.h"

namespace quip::serve {

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

Result<void> SseParser::too_large() const {
  return Error{"event stream: an event is larger than " + std::to_string(max_event_bytes_) +
               " bytes"};
}

Result<void> SseParser::push(std::string_view bytes, std::vector<SseEvent>& events) {
  if (failed_) return too_large();
  for (const char c : bytes) {
    if (!started_) {
      // The byte order mark may itself arrive in pieces: held in line_
      // until it is whole or proven not to be one.
      line_ += c;
      if (kByteOrderMark.starts_with(line_)) {
        if (line_.size() == kByteOrderMark.size()) {
          line_.clear();
          started_ = true;
        }
        continue;
      }
      started_ = true;
      std::string held = std::move(line_);
      line_.clear();
      if (auto ok = push(held, events); !ok) return ok;
      continue;
    }
    if (c == '\n' && after_cr_) {  // the LF of a CRLF: the line already ended
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line(line_, events);
      line_.clear();
      continue;
    }
    line_ += c;
    if (line_.size() + pending_.data.size() > max_event_bytes_) {
      failed_ = true;
      return too_large();
    }
  }
  return {};
}

Result<void> SseParser::finish(std::vector<SseEvent>& events) {
  if (failed_) return too_large();
  if (!line_.empty()) line(line_, events);
  line_.clear();
  dispatch(events);
  failed_ = true;  // spent: nothing more may come
  return {};
}

void SseParser::line(std::string_view text, std::vector<SseEvent>& events) {
  if (text.empty()) {
    dispatch(events);
    return;
  }
  if (text.front() == ':') return;  // a comment (servers' keep-alives)
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    pending_.type = value;
  } else if (field == "id") {
    // An id holding NUL is ignored, as the standard says.
    if (value.find('\0') == std::string_view::npos) pending_.id = value;
  }
  // "retry" and unknown fields: nothing a one-shot client uses.
}

void SseParser::dispatch(std::vector<SseEvent>& events) {
  if (has_data_) events.push_back(std::move(pending_));
  // The last event id persists across events in the standard; a client of
  // one stream has no use for it, so each event carries only its own.
  pending_ = SseEvent{};
  has_data_ = false;
}

}  // namespace quip::serve
