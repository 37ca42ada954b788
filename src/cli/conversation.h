// The conversation side of a `quip` call: which conversation a call
// continues (-c, --cid ID, --cid ID@N), the messages it holds so far, and
// recording the call's turn in the store.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace quip::cli {

// The scope of "the last conversation" for -c: $QUIP_SESSION when set, else
// the id of this process's session (one per terminal), so two terminals do
// not continue each other's conversations.
std::string session_scope();

// The database file: data_dir()/quip.db; an error when there is no data folder.
Result<std::filesystem::path> store_path();

// "42" or "42@3". Errors say what was expected.
struct ConversationRef {
  int64_t id = 0;
  std::optional<int> turn;  // fork after this turn
};
Result<ConversationRef> parse_conversation_ref(const std::string& text);

// What a continued call builds on.
struct Base {
  int64_t conversation = 0;
  std::optional<int> fork_turn;           // set when the call starts a fork
  std::vector<store::TurnRecord> turns;   // the turns it continues, in order
  bool raw = false;                       // a --raw conversation

  // Every message so far, each turn's added messages followed by its answer.
  nlohmann::json history() const;
  // The exact tokens so far: the last turn's prompt and answer.
  std::vector<int32_t> tokens() const;
};

// The conversation that -c (last in this session) or --cid names.
Result<Base> find_base(store::Store& store, const std::optional<std::string>& cid);

// The messages a raw turn records: its text under the role "raw".
nlohmann::json raw_messages(const std::string& text);

}  // namespace quip::cli
