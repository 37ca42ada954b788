// How a turn's fields are stored and read back: token ids as bytes, the
// messages as text, a title from them (declared in store.h).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "store/store.h"

namespace quip::store {

std::string encode_tokens(const std::vector<int32_t>& tokens) {
  // Byte by byte rather than a memcpy: the file is the same on any host.
  std::string bytes(tokens.size() * 4, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto u = static_cast<uint32_t>(tokens[i]);
    for (size_t b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>((u >> (8 * b)) & 0xFF);
  }
  return bytes;
}

Result<std::vector<int32_t>> decode_tokens(std::string_view bytes) {
  if (bytes.size() % 4 != 0) {
    return Error{std::to_string(bytes.size()) + " bytes is not a whole number of 4-byte token ids"};
  }
  std::vector<int32_t> tokens(bytes.size() / 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    uint32_t u = 0;
    for (size_t b = 0; b < 4; ++b) {
      u |= uint32_t{static_cast<unsigned char>(bytes[4 * i + b])} << (8 * b);
    }
    tokens[i] = static_cast<int32_t>(u);
  }
  return tokens;
}

namespace {

// A message's content: a string, or OpenAI-style parts whose text parts are
// joined; anything else reads as its JSON text, so nothing stored is hidden.
std::string content_text(const nlohmann::json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return {};
  if (content.is_array()) {
    std::string text;
    bool all_parts = true;
    for (const nlohmann::json& part : content) {
      auto t = part.is_object() ? part.find("text") : part.end();
      if (!part.is_object() || t == part.end() || !t->is_string()) {
        all_parts = false;
        break;
      }
      if (!text.empty()) text += '\n';
      text += t->get<std::string>();
    }
    if (all_parts) return text;
  }
  return content.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::optional<std::vector<MessageText>> parse_messages(std::string_view messages_json) {
  const nlohmann::json j =
      nlohmann::json::parse(messages_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return std::nullopt;
  std::vector<MessageText> out;
  for (const nlohmann::json& m : j) {
    if (!m.is_object()) return std::nullopt;
    MessageText t;
    auto role = m.find("role");
    if (role != m.end() && role->is_string()) t.role = role->get<std::string>();
    auto content = m.find("content");
    if (content != m.end()) t.text = content_text(*content);
    out.push_back(std::move(t));
  }
  return out;
}

std::string title_from_messages(std::string_view messages_json, size_t max_chars) {
  const auto messages = parse_messages(messages_json);
  if (!messages) return {};
  // The first user message; failing that (a raw prompt, stored under its own
  // role), the first message that is not the system's.
  auto first = std::find_if(messages->begin(), messages->end(),
                            [](const MessageText& m) { return m.role == "user"; });
  if (first == messages->end()) {
    first = std::find_if(messages->begin(), messages->end(),
                         [](const MessageText& m) { return m.role != "system"; });
  }
  if (first == messages->end()) return {};
  {
    const std::string_view text = first->text;
    std::string title;
    size_t chars = 0;
    bool space = false;  // a whitespace run waiting to be written as one space
    for (size_t i = 0; i < text.size();) {
      const size_t n = utf8_sequence_length(text, i);
      if (n == 0) {  // not UTF-8 (parsed JSON is, but be safe): dropped
        ++i;
        continue;
      }
      const char c = text[i];
      if (n == 1 && is_c_space(c)) {
        space = !title.empty();
      } else if (!(n == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)) &&
                 !(n == 2 && static_cast<unsigned char>(c) == 0xC2 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9F)) {  // nor C1 controls
        if (chars + (space ? 1 : 0) >= max_chars) return title + "…";
        if (space) {
          title += ' ';
          ++chars;
          space = false;
        }
        title.append(text.substr(i, n));
        ++chars;
      }
      i += n;
    }
    return title;
  }
}

}  // namespace quip::store
