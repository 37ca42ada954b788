#include "session/conversation.h"

#include <system_error>

namespace quip::session {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRawRole = "raw";

// A turn's messages as a continuation reads them: a JSON list of objects
// with a string "role" and a "content" that is a string or a list of parts
// (as quip and OpenAI-style clients write them).
bool readable_messages(const store::TurnRecord& turn) {
  const auto messages = nlohmann::json::parse(turn.messages_json, nullptr, false);
  if (!messages.is_array()) return false;
  for (const auto& m : messages) {
    if (!m.is_object()) return false;
    const auto role = m.find("role");
    const auto content = m.find("content");
    if (role == m.end() || !role->is_string()) return false;
    if (content == m.end() || !(content->is_string() || content->is_array())) return false;
  }
  return true;
}

// PRECONDITIONS: readable_messages(turn).
bool is_raw(const store::TurnRecord& turn) {
  const auto messages = nlohmann::json::parse(turn.messages_json, nullptr, false);
  return messages.is_array() && !messages.empty() && messages[0].is_object() &&
         messages[0].value("role", "") == kRawRole;
}

Outcome<Base> read_base(store::Store& store, const std::optional<ConversationRef>& ref,
                        const std::string& session) {
  Base base;
  base.database = store.path();
  if (!ref) {
    auto last = store.last_turn_in_session(session);
    if (!last) return failure(FailureKind::BadData, last.error());
    if (!*last) {
      return Failure{FailureKind::Runtime,
                     "no conversation to continue in this terminal session "
                     "(start one without -c, or pick one from 'quip log' with --cid ID)"};
    }
    base.conversation = (*last)->conversation;
  } else {
    base.conversation = ref->id;
    base.fork_turn = ref->turn;
    // Not there is the user's mistake; unreadable is the database's.
    auto found = store.find(base.conversation);
    if (!found) return failure(FailureKind::BadData, found.error());
    if (!*found) {
      return Failure{FailureKind::Runtime, "no conversation " + std::to_string(base.conversation)};
    }
  }
  auto turns = store.turns(base.conversation);
  if (!turns) return failure(FailureKind::BadData, turns.error());
  base.turns = std::move(*turns);
  if (base.turns.empty()) {
    return Failure{FailureKind::Runtime,
                   "conversation " + std::to_string(base.conversation) + " has no turns"};
  }
  if (base.fork_turn) {
    const int n = static_cast<int>(base.turns.size());
    if (*base.fork_turn > n) {
      return Failure{FailureKind::Runtime, "--cid: conversation " +
                                               std::to_string(base.conversation) + " has " +
                                               std::to_string(n) + (n == 1 ? " turn" : " turns") +
                                               ", not " + std::to_string(*base.fork_turn)};
    }
    // Even from the last turn a fork is a new conversation: the original
    // stays as it is.
    base.turns.resize(static_cast<size_t>(*base.fork_turn));
  }
  // What a continuation reads back is input: a damaged row is the
  // database's fault, said once, not a crash or a history gone quiet.
  for (const store::TurnRecord& t : base.turns) {
    if (!readable_messages(t)) {
      return Failure{FailureKind::BadData,
                     base.database.string() + ": conversation " +
                         std::to_string(base.conversation) + " turn " + std::to_string(t.turn) +
                         ": the stored messages are not a JSON list of {\"role\", \"content\"} "
                         "(a damaged or foreign database)"};
    }
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
    nlohmann::json answer = {{"role", "assistant"}, {"content", t.answer}};
    // Where templates look for it (Qwen3's, DeepSeek-R1's): each decides
    // whether an earlier turn's reasoning is shown again.
    if (!t.reasoning.empty()) answer["reasoning_content"] = t.reasoning;
    messages.push_back(std::move(answer));
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
  if (!store) return failure(FailureKind::BadData, store.error());
  return read_base(*store, ref, session);
}

Result<void> check_stored_tokens(const Base& base, uint32_t n_vocab,
                                 const std::string& model_name) {
  if (base.turns.empty()) return {};
  const store::TurnRecord& last = base.turns.back();
  for (const std::vector<int32_t>* ids : {&last.prompt_tokens, &last.answer_tokens}) {
    for (int32_t id : *ids) {
      if (id >= 0 && static_cast<uint32_t>(id) < n_vocab) continue;
      return Error{base.database.string() + ": conversation " + std::to_string(base.conversation) +
                   " turn " + std::to_string(last.turn) + ": stored " +
                   (ids == &last.prompt_tokens ? "prompt" : "answer") + " token id " +
                   std::to_string(id) + " is not in [0, " + std::to_string(n_vocab) +
                   "), the vocabulary of " + model_name + " (a damaged or foreign database)"};
    }
  }
  return {};
}

nlohmann::json raw_messages(const std::string& text) {
  return nlohmann::json::array({{{"role", kRawRole}, {"content", text}}});
}

}  // namespace quip::session
