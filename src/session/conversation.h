// The conversation a call continues: which one (-c: the last of a session;
// --cid ID; --cid ID@N: a fork after turn N), the turns it builds on, and
// the messages and exact tokens those hold.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "session/outcome.h"
#include "store/store.h"

namespace quip::session {

// A conversation by id, optionally from one of its turns: "42" or "42@3".
struct ConversationRef {
  int64_t id = 0;
  std::optional<int> turn;  // fork after this turn
};

// What a continued call builds on.
struct Base {
  std::filesystem::path database;  // where it was read from (for messages)
  int64_t conversation = 0;
  std::optional<int> fork_turn;          // set when the call starts a fork
  std::vector<store::TurnRecord> turns;  // the turns it continues, in order
  bool raw = false;                      // a --raw conversation

  // Every message so far, each turn's added messages followed by its answer
  // (with its reasoning as "reasoning_content" where it has one).
  nlohmann::json history() const;
  // The exact tokens so far: the last turn's prompt and answer.
  std::vector<int32_t> tokens() const;
};

// The conversation `ref` names, or without one the last conversation that
// `session` recorded a turn in, read from `database`. Failures: Runtime for
// a conversation that is not there (or a database not created yet);
// BadData for a database that cannot be read (not a database, a newer
// schema, damaged rows).
Outcome<Base> find_base(const std::optional<std::filesystem::path>& database,
                        const std::optional<ConversationRef>& ref, const std::string& session);

// Everything read from a database is input: the stored tokens a
// continuation reuses must be ids of `n_vocab`-token vocabulary of the model
// (`model_name`) they are reused with. The error names the database, the
// conversation and turn, and the id.
Result<void> check_stored_tokens(const Base& base, uint32_t n_vocab, const std::string& model_name);

// The messages a raw turn records: its text under the role "raw".
nlohmann::json raw_messages(const std::string& text);

}  // namespace quip::session
