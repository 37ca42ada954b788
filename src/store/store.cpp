#include "store/store.h"

#include <sqlite3.h>

#include <chrono>
#include <climits>

namespace quip::store {

namespace {

namespace fs = std::filesystem;

// The columns of a turn after its conversation, in the order read_turn()
// reads them.
constexpr const char* kTurnFields =
    "turn, parent_turn, time_ms, model_path, model_fingerprint, sampler_json, messages_json, "
    "answer, timings_json, prompt_tokens, answer_tokens, interrupted, session, reasoning";
const std::string kTurnColumns = std::string("conversation, ") + kTurnFields;
// The same read from a database of schema version 1 (opened read-only, so
// not migrated), whose turns have no reasoning.
const std::string kTurnColumnsV1 =
    kTurnColumns.substr(0, kTurnColumns.size() - std::string_view(", reasoning").size()) + ", ''";

// The columns of a summary, in the order read_summary() reads them.
constexpr const char* kSummarySelect =
    "SELECT c.id, c.created_ms, c.updated_ms, c.title, c.session, c.forked_from_conversation, "
    "c.forked_from_turn, (SELECT COUNT(*) FROM turns t WHERE t.conversation = c.id), "
    "(SELECT model_path FROM turns t WHERE t.conversation = c.id ORDER BY turn DESC LIMIT 1) "
    "FROM conversations c ";

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Error no_conversation(int64_t id) {
  return Error{"no conversation " + std::to_string(id)};
}

// An integer column that must fit an int (turn numbers, counts): anything
// else is a corrupt row, not a value to wrap around.
Result<int> to_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    return Error{std::string(what) + " " + std::to_string(v) + " is out of range"};
  return static_cast<int>(v);
}

Result<TurnRecord> read_turn(const sql::Statement& s) {
  TurnRecord t;
  t.conversation = s.int64(0);
  const std::string where =
      "conversation " + std::to_string(t.conversation) + " turn " + std::to_string(s.int64(1));
  auto turn = to_int(s.int64(1), "turn number");
  auto parent = to_int(s.int64(2), "parent turn");
  if (!turn) return turn.error().with_context(where);
  if (!parent) return parent.error().with_context(where);
  t.turn = *turn;
  t.parent_turn = *parent;
  t.time_ms = s.int64(3);
  t.model_path = s.text(4);
  t.model_fingerprint = s.text(5);
  t.sampler_json = s.text(6);
  t.messages_json = s.text(7);
  t.answer = s.text(8);
  t.timings_json = s.text(9);
  auto prompt = decode_tokens(s.blob(10));
  if (!prompt) return prompt.error().with_context(where + ": prompt tokens");
  auto answer = decode_tokens(s.blob(11));
  if (!answer) return answer.error().with_context(where + ": answer tokens");
  t.prompt_tokens = std::move(*prompt);
  t.answer_tokens = std::move(*answer);
  t.interrupted = s.int64(12) != 0;
  t.session = s.text(13);
  t.reasoning = s.text(14);
  return t;
}

Result<ConversationSummary> read_summary(const sql::Statement& s) {
  ConversationSummary c;
  c.id = s.int64(0);
  c.created_ms = s.int64(1);
  c.updated_ms = s.int64(2);
  c.title = s.text(3);
  c.session = s.text(4);
  const std::string where = "conversation " + std::to_string(c.id);
  if (!s.is_null(5)) {
    auto turn = to_int(s.int64(6), "forked-from turn");
    if (!turn) return turn.error().with_context(where);
    c.forked_from = std::pair(s.int64(5), *turn);
  }
  auto turns = to_int(s.int64(7), "turn count");
  if (!turns) return turns.error().with_context(where);
  c.turns = *turns;
  c.model_path = s.text(8);
  return c;
}

// Appends `t` (conversation, turn and parent_turn already decided).
Result<void> insert_turn(sqlite3* db, const TurnRecord& t, bool copied) {
  const std::string sql = "INSERT INTO turns (" + kTurnColumns +
                          ", copied) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  auto s = sql::Statement::prepare(db, sql);
  if (!s) return s.error();
  s->bind(1, t.conversation)
      .bind(2, int64_t{t.turn})
      .bind(3, int64_t{t.parent_turn})
      .bind(4, t.time_ms)
      .bind(5, t.model_path)
      .bind(6, t.model_fingerprint)
      .bind(7, t.sampler_json)
      .bind(8, t.messages_json)
      .bind(9, t.answer)
      .bind(10, t.timings_json)
      .bind_blob(11, encode_tokens(t.prompt_tokens))
      .bind_blob(12, encode_tokens(t.answer_tokens))
      .bind(13, int64_t{t.interrupted ? 1 : 0})
      .bind(14, t.session)
      .bind(15, t.reasoning)
      .bind(16, int64_t{copied ? 1 : 0});
  return s->run();
}

// Inserts a conversation row; returns its id.
Result<int64_t> insert_conversation(sqlite3* db, int64_t time_ms, const std::string& session,
                                    const std::string& title,
                                    std::optional<std::pair<int64_t, int>> forked_from) {
  auto s = sql::Statement::prepare(
      db,
      "INSERT INTO conversations (created_ms, updated_ms, session, title, "
      "forked_from_conversation, forked_from_turn) VALUES (?1, ?1, ?2, ?3, ?4, ?5)");
  if (!s) return s.error();
  s->bind(1, time_ms).bind(2, session).bind(3, title);
  if (forked_from) {
    s->bind(4, forked_from->first).bind(5, int64_t{forked_from->second});
  } else {
    s->bind_null(4).bind_null(5);
  }
  if (auto r = s->run(); !r) return r.error();
  return sqlite3_last_insert_rowid(db);
}

// The title and last turn number of a conversation, or nullopt if there is
// no such conversation.
struct ConversationHead {
  std::string title;
  int last_turn = 0;
};
Result<std::optional<ConversationHead>> head(sqlite3* db, int64_t conversation) {
  auto s = sql::Statement::prepare(
      db,
      "SELECT title, (SELECT MAX(turn) FROM turns WHERE conversation = c.id) "
      "FROM conversations c WHERE id = ?");
  if (!s) return s.error();
  s->bind(1, conversation);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<ConversationHead>();
  auto last = to_int(s->is_null(1) ? 0 : s->int64(1), "last turn");
  if (!last) return last.error().with_context("conversation " + std::to_string(conversation));
  return std::optional<ConversationHead>(ConversationHead{s->text(0), *last});
}

// A new conversation (started in `session`) holding copies of turns
// 1..turn of `conversation`, whose head is `h`; returns its id. Inside the
// caller's transaction.
Result<int64_t> fork_locked(sqlite3* db, int64_t conversation, int turn, const std::string& session,
                            const ConversationHead& h, int64_t time_ms) {
  if (turn < 1 || turn > h.last_turn) {
    return Error{"it has no turn " + std::to_string(turn) + " (it has turns 1 to " +
                 std::to_string(h.last_turn) + ")"};
  }
  auto id = insert_conversation(db, time_ms, session, h.title, std::pair(conversation, turn));
  if (!id) return id.error();
  const std::string copy = "INSERT INTO turns (" + kTurnColumns + ", copied) SELECT ?1, " +
                           kTurnFields +
                           ", 1 FROM turns WHERE conversation = ?2 AND turn <= ?3 ORDER BY turn";
  auto s = sql::Statement::prepare(db, copy);
  if (!s) return s.error();
  s->bind(1, *id).bind(2, conversation).bind(3, int64_t{turn});
  if (auto r = s->run(); !r) return r.error();
  return *id;
}

}  // namespace

Error Store::fail(std::string_view what, const Error& e) const {
  return Error{path_.string() + ": " + std::string(what) + ": " + e.message};
}

Result<void> Store::check_writable() const {
  if (read_only_) return Error{path_.string() + ": the database was opened read-only"};
  return {};
}

Result<TurnRecord> Store::record_turn(TurnRecord t) {
  if (auto w = check_writable(); !w) return w.error();
  if (t.time_ms == 0) t.time_ms = now_ms();
  sqlite3* db = db_.get();
  bool missing = false;
  auto done = [&]() -> Result<void> {
    auto tx = sql::Transaction::begin_immediate(db);
    if (!tx) return tx.error();
    if (t.conversation == 0) {
      auto id = insert_conversation(db, t.time_ms, t.session, title_from_messages(t.messages_json),
                                    std::nullopt);
      if (!id) return id.error();
      t.conversation = *id;
      t.turn = 1;
      t.parent_turn = 0;
    } else {
      auto h = head(db, t.conversation);
      if (!h) return h.error();
      if (!*h) {
        missing = true;  // reported without the "cannot" context: it is the whole story
        return Error{};
      }
      if ((*h)->last_turn == INT_MAX) return Error{"the conversation has too many turns"};
      t.parent_turn = (*h)->last_turn;
      t.turn = t.parent_turn + 1;
      // A conversation begun without a user message (a raw prompt) takes its
      // title from the first turn that has one.
      auto s = sql::Statement::prepare(
          db,
          "UPDATE conversations SET updated_ms = MAX(updated_ms, ?2), "
          "title = CASE WHEN title = '' THEN ?3 ELSE title END WHERE id = ?1");
      if (!s) return s.error();
      s->bind(1, t.conversation).bind(2, t.time_ms);
      s->bind(3, (*h)->title.empty() ? title_from_messages(t.messages_json) : std::string());
      if (auto r = s->run(); !r) return r.error();
    }
    if (auto r = insert_turn(db, t, /*copied=*/false); !r) return r.error();
    return tx->commit();
  }();
  if (missing) return no_conversation(t.conversation);
  if (!done) return fail("cannot record the turn", done.error());
  return t;
}

Result<TurnRecord> Store::record_continuation(TurnRecord t, int after_turn, bool fork) {
  if (auto w = check_writable(); !w) return w.error();
  if (t.time_ms == 0) t.time_ms = now_ms();
  const int64_t conversation = t.conversation;
  sqlite3* db = db_.get();
  bool missing = false;
  auto done = [&]() -> Result<void> {
    // The check of the tip and the write are one transaction: a call that
    // finished meanwhile cannot slip in between.
    auto tx = sql::Transaction::begin_immediate(db);
    if (!tx) return tx.error();
    auto h = head(db, conversation);
    if (!h) return h.error();
    if (!*h) {
      missing = true;
      return Error{};
    }
    if (after_turn == INT_MAX) return Error{"the conversation has too many turns"};
    if (!fork && (*h)->last_turn == after_turn) {
      auto s = sql::Statement::prepare(
          db,
          "UPDATE conversations SET updated_ms = MAX(updated_ms, ?2), "
          "title = CASE WHEN title = '' THEN ?3 ELSE title END WHERE id = ?1");
      if (!s) return s.error();
      s->bind(1, conversation).bind(2, t.time_ms);
      s->bind(3, (*h)->title.empty() ? title_from_messages(t.messages_json) : std::string());
      if (auto r = s->run(); !r) return r.error();
    } else {
      // A fork, or the conversation moved on while this turn was computed
      // from turn `after_turn`: appending it would claim a history the
      // model never saw, so it starts a branch after the turn it used.
      auto id = fork_locked(db, conversation, after_turn, t.session, **h, t.time_ms);
      if (!id) return id.error();
      t.conversation = *id;
    }
    t.parent_turn = after_turn;
    t.turn = after_turn + 1;
    if (auto r = insert_turn(db, t, /*copied=*/false); !r) return r.error();
    return tx->commit();
  }();
  if (missing) return no_conversation(conversation);
  if (!done) return fail("cannot record the turn", done.error());
  return t;
}

Result<int64_t> Store::fork(int64_t conversation, int turn, const std::string& session) {
  if (auto w = check_writable(); !w) return w.error();
  const std::string what = "cannot fork conversation " + std::to_string(conversation);
  sqlite3* db = db_.get();
  bool missing = false;
  auto forked = [&]() -> Result<int64_t> {
    auto tx = sql::Transaction::begin_immediate(db);
    if (!tx) return tx.error();
    auto h = head(db, conversation);
    if (!h) return h.error();
    if (!*h) {
      missing = true;
      return Error{};
    }
    auto id = fork_locked(db, conversation, turn, session, **h, now_ms());
    if (!id) return id.error();
    if (auto r = tx->commit(); !r) return r.error();
    return *id;
  }();
  if (missing) return no_conversation(conversation);
  if (!forked) return fail(what, forked.error());
  return forked;
}

const std::string& Store::turn_columns() const {
  return reasoning_column_ ? kTurnColumns : kTurnColumnsV1;
}

Result<std::optional<TurnRecord>> Store::last_turn_in_session(const std::string& session) {
  if (empty_) return std::optional<TurnRecord>();
  auto found = [&]() -> Result<std::optional<TurnRecord>> {
    auto s = sql::Statement::prepare(db_.get(), "SELECT " + turn_columns() +
                                                    " FROM turns WHERE session = ? AND copied = 0 "
                                                    "ORDER BY seq DESC LIMIT 1");
    if (!s) return s.error();
    s->bind(1, session);
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) return std::optional<TurnRecord>();
    auto t = read_turn(*s);
    if (!t) return t.error();
    return std::optional<TurnRecord>(std::move(*t));
  }();
  if (!found) return fail("cannot read the last turn of this session", found.error());
  return found;
}

Result<std::vector<std::string>> Store::recent_timings(const std::string& model_fingerprint,
                                                       int limit) {
  if (empty_) return std::vector<std::string>();
  auto read = [&]() -> Result<std::vector<std::string>> {
    auto s = sql::Statement::prepare(db_.get(),
                                     "SELECT timings_json FROM turns WHERE model_fingerprint = ? "
                                     "AND copied = 0 ORDER BY seq DESC LIMIT ?");
    if (!s) return s.error();
    s->bind(1, model_fingerprint).bind(2, static_cast<int64_t>(limit));
    std::vector<std::string> out;
    for (;;) {
      auto row = s->step();
      if (!row) return row.error();
      if (!*row) break;
      out.push_back(s->text(0));
    }
    return out;
  }();
  if (!read) return fail("cannot read the timings of earlier turns", read.error());
  return read;
}

Result<std::vector<TurnRecord>> Store::turns(int64_t conversation) {
  if (empty_) return no_conversation(conversation);
  auto read = [&]() -> Result<std::vector<TurnRecord>> {
    auto s = sql::Statement::prepare(db_.get(), "SELECT " + turn_columns() +
                                                    " FROM turns WHERE conversation = ? "
                                                    "ORDER BY turn");
    if (!s) return s.error();
    s->bind(1, conversation);
    std::vector<TurnRecord> out;
    for (;;) {
      auto row = s->step();
      if (!row) return row.error();
      if (!*row) break;
      auto t = read_turn(*s);
      if (!t) return t.error();
      out.push_back(std::move(*t));
    }
    return out;
  }();
  if (!read) return fail("cannot read conversation " + std::to_string(conversation), read.error());
  if (read->empty()) {
    auto c = find(conversation);
    if (!c) return c.error();
    if (!*c) return no_conversation(conversation);
  }
  return read;
}

Result<std::vector<std::pair<int64_t, int>>> Store::forks_of(int64_t conversation) {
  using Forks = std::vector<std::pair<int64_t, int>>;
  if (empty_) return Forks();
  auto read = [&]() -> Result<Forks> {
    auto s = sql::Statement::prepare(db_.get(),
                                     "SELECT id, forked_from_turn FROM conversations "
                                     "WHERE forked_from_conversation = ? ORDER BY id");
    if (!s) return s.error();
    s->bind(1, conversation);
    Forks out;
    for (;;) {
      auto row = s->step();
      if (!row) return row.error();
      if (!*row) break;
      auto turn = to_int(s->int64(1), "forked-from turn");
      if (!turn) return turn.error().with_context("conversation " + std::to_string(s->int64(0)));
      out.emplace_back(s->int64(0), *turn);
    }
    return out;
  }();
  if (!read) {
    return fail("cannot read the branches of conversation " + std::to_string(conversation),
                read.error());
  }
  return read;
}

Result<std::optional<ConversationSummary>> Store::find(int64_t conversation) {
  if (empty_) return std::optional<ConversationSummary>();
  auto found = [&]() -> Result<std::optional<ConversationSummary>> {
    auto s = sql::Statement::prepare(db_.get(), std::string(kSummarySelect) + "WHERE c.id = ?");
    if (!s) return s.error();
    s->bind(1, conversation);
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) return std::optional<ConversationSummary>();
    auto c = read_summary(*s);
    if (!c) return c.error();
    return std::optional<ConversationSummary>(std::move(*c));
  }();
  if (!found)
    return fail("cannot read conversation " + std::to_string(conversation), found.error());
  return found;
}

Result<std::vector<ConversationSummary>> Store::list(int limit) {
  if (empty_) return std::vector<ConversationSummary>();
  auto read = [&]() -> Result<std::vector<ConversationSummary>> {
    // Most recently updated = holding the most recently inserted turn: seq
    // orders insertions whatever the clocks did.
    auto s = sql::Statement::prepare(
        db_.get(), std::string(kSummarySelect) +
                       "ORDER BY (SELECT MAX(seq) FROM turns t WHERE t.conversation = c.id) DESC, "
                       "c.id DESC LIMIT ?");
    if (!s) return s.error();
    s->bind(1, int64_t{limit > 0 ? limit : -1});  // a negative LIMIT is none
    std::vector<ConversationSummary> out;
    for (;;) {
      auto row = s->step();
      if (!row) return row.error();
      if (!*row) break;
      auto c = read_summary(*s);
      if (!c) return c.error();
      out.push_back(std::move(*c));
    }
    return out;
  }();
  if (!read) return fail("cannot list the conversations", read.error());
  return read;
}

Result<void> Store::remove(int64_t conversation) {
  if (auto w = check_writable(); !w) return w.error();
  sqlite3* db = db_.get();
  bool missing = false;
  auto removed = [&]() -> Result<void> {
    auto tx = sql::Transaction::begin_immediate(db);
    if (!tx) return tx.error();
    auto s = sql::Statement::prepare(db, "DELETE FROM conversations WHERE id = ?");
    if (!s) return s.error();
    s->bind(1, conversation);
    if (auto r = s->run(); !r) return r.error();
    if (sqlite3_changes(db) == 0) {
      missing = true;
      return Error{};
    }
    return tx->commit();
  }();
  if (missing) return no_conversation(conversation);
  if (!removed)
    return fail("cannot remove conversation " + std::to_string(conversation), removed.error());
  return {};
}

}  // namespace quip::store
