// The conversation side of a `quip` call as the command line gives it: the
// terminal session that -c is scoped to, the database file, and --cid's
// "ID" or "ID@N". Finding the conversation and recording the turn are the
// session layer's (session/conversation.h, session/session.h).
#pragma once

#include <filesystem>
#include <string>

#include "base/result.h"
#include "session/conversation.h"

namespace quip::cli {

// The scope of "the last conversation" for -c: $QUIP_SESSION when set, else
// the id of this process's session (one per terminal), so two terminals do
// not continue each other's conversations.
std::string session_scope();

// The database file: data_dir()/quip.db; an error when there is no data folder.
Result<std::filesystem::path> store_path();

// "42" or "42@3". Errors say what was expected.
Result<session::ConversationRef> parse_conversation_ref(const std::string& text);

}  // namespace quip::cli
