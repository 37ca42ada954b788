#include "cli/conversation.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "base/paths.h"
#include "base/text.h"

namespace quip::cli {

namespace {

template <class T>
bool parse_whole(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string session_scope() {
  if (const char* s = std::getenv("QUIP_SESSION"); s != nullptr && *s != '\0') return s;
  return "sid:" + std::to_string(getsid(0));
}

Result<std::filesystem::path> store_path() {
  auto dir = data_dir();
  if (!dir) return Error{"no folder for the conversation database (set HOME or QUIP_HOME)"};
  return *dir / "quip.db";
}

Result<session::ConversationRef> parse_conversation_ref(const std::string& text) {
  session::ConversationRef ref;
  const size_t at = text.find('@');
  const std::string_view id = std::string_view(text).substr(0, at);
  const auto bad = [&] {
    return Error{"--cid: '" + printable(text) +
                 "' is not a conversation id (ID or ID@TURN, as 'quip log' lists them)"};
  };
  if (!parse_whole(id, ref.id) || ref.id <= 0) return bad();
  if (at != std::string::npos) {
    int turn = 0;
    if (!parse_whole(std::string_view(text).substr(at + 1), turn) || turn <= 0) return bad();
    ref.turn = turn;
  }
  return ref;
}

}  // namespace quip::cli
