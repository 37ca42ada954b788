#include "session/conversation.h"

#include <system_error>

namespace quip::session {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRawRole = "raw";

bool is_raw(const store::TurnRecord& turn) {
  const auto messages = nlohmann::json::parse(turn.messages_json, nullptr, false);
  return messages.is_array() && !messages.empty() && messages[0].is_object() &&
         messages[0].value("role", "") == kRawRole;
}

Result<Base> read_base(store::Store& store, const std::optional<ConversationRef>& ref,
                       const std::string& session) {
  Base base;
  if (!ref) {
    auto last = store.last_turn_in_session(session);
    if (!last) return last.error();
    if (!*last) {
      return Error{
          "no conversation to continue in this terminal session "
          "(start one without -c, or pick one from 'quip log' with --cid ID)"};
    }
    base.conversation = (*last)->conversation;
  } else {
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

}  // namespace

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

Outcome<Base> find_base(const std::optional<fs::path>& database,
                        const std::optional<ConversationRef>& ref, const std::string& session) {
  if (!database) {
    return Failure{FailureKind::Runtime,
                   "no folder for the conversation database (set HOME or QUIP_HOME)"};
  }
  std::error_code ec;
  if (!fs::exists(*database, ec)) {  // nothing recorded yet
    return Failure{FailureKind::Runtime,
                   ref ? "no conversation " + std::to_string(ref->id)
                       : std::string("no conversation to continue in this terminal session")};
  }
  auto store = store::Store::open_read_only(*database);
  if (!store) return failure(FailureKind::Runtime, store.error());
  auto base = read_base(*store, ref, session);
  if (!base) return failure(FailureKind::Runtime, base.error());
  return std::move(*base);
}

nlohmann::json raw_messages(const std::string& text) {
  return nlohmann::json::array({{{"role", kRawRole}, {"content", text}}});
}

}  // namespace quip::session
