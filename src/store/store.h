// The conversation store: every quip call records a turn (what it added to
// the conversation, the answer, the model, the settings and the exact token
// ids) in a SQLite database, by default data_dir()/quip.db.
//
// Safe for concurrent use by many processes: writes are single transactions
// that wait for the write lock (WAL mode, a busy timeout and retries), so
// concurrent calls all succeed, and a process killed in the middle of a write
// leaves the database as it was before that write. Every failure (a read-only
// or full disk, a corrupt or foreign file, a database written by a newer
// quip) is an Error with a one-line message naming the file.
//
// A Store is one connection: use it from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "store/sqlite.h"

namespace quip::store {

// The schema version this quip writes (PRAGMA user_version). A database with
// a higher one is refused; a lower one is migrated by Store::open.
inline constexpr int kSchemaVersion = 2;

// One call's contribution to a conversation.
struct TurnRecord {
  int64_t conversation = 0;  // 0 in record_turn: start a new conversation
  int turn = 0;              // 1-based position in the conversation
  int parent_turn = 0;       // the turn this one follows; 0 for the first
  int64_t time_ms = 0;       // unix time in milliseconds; 0 in record_turn: now
  std::string model_path;
  std::string model_fingerprint;
  // JSON texts written by the caller and stored as given (not validated:
  // a turn is never lost over its metadata).
  std::string sampler_json;   // the sampler settings
  std::string messages_json;  // the messages this turn added: [{"role", "content"}, ...]
  std::string answer;
  std::string timings_json;
  std::vector<int32_t> prompt_tokens;  // the exact ids evaluated for this turn
  std::vector<int32_t> answer_tokens;  // the exact ids generated
  // The model's reasoning before the answer, apart from `answer` (empty
  // where there was none, or it was not told apart).
  std::string reasoning;
  bool interrupted = false;  // the answer was cut short (Ctrl-C)
  std::string session;       // the session scope it was made in
};

struct ConversationSummary {
  int64_t id = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;  // the time of the last turn recorded (or of the fork)
  int turns = 0;
  std::string title;                                   // from the first user message; may be empty
  std::string model_path;                              // the model of the last turn
  std::string session;                                 // where the conversation was started
  std::optional<std::pair<int64_t, int>> forked_from;  // (conversation, turn)
};

class Store {
 public:
  // Opens the database, creating it (and its folder) if needed and migrating
  // an older schema.
  static Result<Store> open(const std::filesystem::path& db_file);
  // Opens an existing database for reading (log, show, export); writes no
  // file, so it works on a read-only disk. A file with no schema yet reads as
  // empty.
  static Result<Store> open_read_only(const std::filesystem::path& db_file);

  Store(Store&&) noexcept = default;
  Store& operator=(Store&&) noexcept = default;

  const std::filesystem::path& path() const { return path_; }

  // Records a turn in one transaction. conversation == 0 starts a new
  // conversation (its title computed from the messages); otherwise the turn
  // is appended as last + 1 with parent_turn = last (the caller's turn and
  // parent_turn are ignored), so concurrent appends never collide. Returns
  // the record as stored (conversation, turn, parent_turn, time_ms filled).
  // A turn computed from a known turn of a conversation is recorded with
  // record_continuation instead, which never appends it after turns it did
  // not see.
  Result<TurnRecord> record_turn(TurnRecord turn);

  // Records a turn computed from turns 1..after_turn of turn.conversation
  // (the turn's own turn and parent_turn are ignored), in one transaction
  // that checks the conversation's last turn: when it is still after_turn
  // and `fork` is false, the turn is appended as after_turn + 1. Otherwise
  // (a fork was asked for, or the conversation moved on while the turn was
  // computed, e.g. by a concurrent call) the turn starts a branch: a new
  // conversation holding copies of turns 1..after_turn, forked_from
  // (conversation, after_turn), followed by this turn. Either way
  // parent_turn is the turn it was computed from. Returns the record as
  // stored; its conversation differs from the one asked for when it
  // branched.
  Result<TurnRecord> record_continuation(TurnRecord turn, int after_turn, bool fork);

  // A new conversation (started in `session`) holding copies of turns
  // 1..turn of `conversation`, with forked_from set; the original is kept.
  // Copied turns keep their time and session but do not count for
  // last_turn_in_session: they were not made there.
  Result<int64_t> fork(int64_t conversation, int turn, const std::string& session);

  // The turn most recently recorded with this session string (what `-c`
  // continues), or nullopt.
  Result<std::optional<TurnRecord>> last_turn_in_session(const std::string& session);

  // The timings_json of the `limit` turns most recently recorded with the
  // model of this fingerprint (not copies made by forks), newest first:
  // the speeds measured on it (--estimate).
  Result<std::vector<std::string>> recent_timings(const std::string& model_fingerprint, int limit);

  // The turns of a conversation in order; an error if there is no such
  // conversation ("no conversation 42").
  Result<std::vector<TurnRecord>> turns(int64_t conversation);

  // The conversations forked from `conversation` (its branches), as
  // (conversation, the turn they continue after), oldest first.
  Result<std::vector<std::pair<int64_t, int>>> forks_of(int64_t conversation);

  // The summary of one conversation, or nullopt if there is none.
  Result<std::optional<ConversationSummary>> find(int64_t conversation);

  // The `limit` most recently updated conversations (all if limit <= 0),
  // most recent first.
  Result<std::vector<ConversationSummary>> list(int limit);

  // Deletes a conversation and its turns; an error if there is none. Forks of
  // it are kept.
  Result<void> remove(int64_t conversation);

 private:
  Store(std::filesystem::path path, sql::Db db, bool read_only, bool empty,
        bool reasoning_column = true)
      : path_(std::move(path)),
        db_(std::move(db)),
        read_only_(read_only),
        empty_(empty),
        reasoning_column_(reasoning_column) {}

  // The columns read_turn() reads (schema version 1's read-only databases
  // have no reasoning: it reads as empty).
  const std::string& turn_columns() const;

  Error fail(std::string_view what, const Error& e) const;
  Result<void> check_writable() const;
  Result<std::optional<ConversationSummary>> find_locked(int64_t conversation);

  std::filesystem::path path_;
  sql::Db db_;
  bool read_only_ = false;
  bool empty_ = false;            // read-only and no schema yet: reads as no conversations
  bool reasoning_column_ = true;  // false: a read-only database of schema version 1
};

// The default database: data_dir()/quip.db; nullopt when there is no data
// folder (no QUIP_HOME, XDG_DATA_HOME or HOME).
std::optional<std::filesystem::path> default_database_path();

// The role and text of each message in a turn's messages_json. A content
// given as OpenAI-style parts ([{"type": "text", "text": ...}, ...]) reads as
// its text parts joined by newlines. Nullopt when messages_json is not a JSON
// array of objects (a turn stores what its caller gave).
struct MessageText {
  std::string role;
  std::string text;
};
std::optional<std::vector<MessageText>> parse_messages(std::string_view messages_json);

// A conversation's title: the text of the first user message (failing that,
// of the first message that is not the system's: a raw prompt) with
// whitespace runs folded to one space and control characters dropped, cut
// to `max_chars` code points followed by "…" when longer. Empty when there
// is no such message or `messages_json` is not a JSON array of objects.
std::string title_from_messages(std::string_view messages_json, size_t max_chars = 60);

// Token ids as stored: little-endian int32, 4 bytes each.
std::string encode_tokens(const std::vector<int32_t>& tokens);
Result<std::vector<int32_t>> decode_tokens(std::string_view bytes);

}  // namespace quip::store
