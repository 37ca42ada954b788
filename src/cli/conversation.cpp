#include "cli/conversation.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "base/paths.h"
#include "base/text.h"

namespace quip::cli {

namespace {

constexpr std::string_view kRawRole = "raw";

bool is_raw(const store::TurnRecord& turn) {
  const auto messages = nlohmann::json::parse(turn.messages_json, nullptr, false);
  return messages.is_array() && !messages.empty() && messages[0].is_object() &&
         messages[0].value("role", "") == kRawRole;
}

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

Result<ConversationRef> parse_conversation_ref(const std::string& text) {
  ConversationRef ref;
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

nlohmann::json Base::history() const {
  nlohmann::json messages = nlohmann::json::array();
  for (const store::TurnRecord& t : turns) {
    const auto added = nlohmann::json::parse(t.messages_json, nullptr, false);
    if (added.is_array()) {
      for (const auto& m : added) messages.push_back(m);
    }
    messages.push_back({{"role", "assistant"}, {"content", t.answer}});
  }
  return messages;
}

std::vector<int32_t> Base::tokens() const {
  if (turns.empty()) return {};
  std::vector<int32_t> ids = turns.back().prompt_tokens;
  ids.insert(ids.end(), turns.back().answer_tokens.begin(), turns.back().answer_tokens.end());
  return ids;
}

Result<Base> find_base(store::Store& store, const std::optional<std::string>& cid) {
  Base base;
  if (!cid) {
    auto last = store.last_turn_in_session(session_scope());
    if (!last) return last.error();
    if (!*last) {
      return Error{"no conversation to continue in this terminal session "
                   "(start one without -c, or pick one from 'quip log' with --cid ID)"};
    }
    base.conversation = (*last)->conversation;
  } else {
    auto ref = parse_conversation_ref(*cid);
    if (!ref) return ref.error();
    base.conversation = ref->id;
    base.fork_turn = ref->turn;
  }
  auto turns = store.turns(base.conversation);
  if (!turns) return turns.error();
  base.turns = std::move(*turns);
  if (base.turns.empty()) {
    return Error{"conversation " + std::to_string(base.conversation) + " has no turns"};
  }
  if (base.fork_turn) {
    const int n = static_cast<int>(base.turns.size());
    if (*base.fork_turn > n) {
      return Error{"--cid: conversation " + std::to_string(base.conversation) + " has " +
                   std::to_string(n) + (n == 1 ? " turn" : " turns") + ", not " +
                   std::to_string(*base.fork_turn)};
    }
    // Even from the last turn a fork is a new conversation: the original
    // stays as it is.
    base.turns.resize(static_cast<size_t>(*base.fork_turn));
  }
  base.raw = is_raw(base.turns.front());
  return base;
}

nlohmann::json raw_messages(const std::string& text) {
  return nlohmann::json::array({{{"role", kRawRole}, {"content", text}}});
}

}  // namespace quip::cli
