#include "store/sqlite.h"

#include <sqlite3.h>

#include <cstring>
#include <random>
#include <string_view>
#include <thread>

#include "base/text.h"

namespace quip::store::sql {

namespace {

// SQLite's messages may quote a damaged schema, line breaks and all: runs
// of white space fold to one space, and other control bytes are escaped,
// so an error stays one line.
std::string one_line(std::string_view message) {
  std::string folded;
  for (const char c : message) {
    if (!is_c_space(c)) {
      folded += c;
    } else if (!folded.empty() && folded.back() != ' ') {
      folded += ' ';
    }
  }
  return printable(folded, 300);
}

std::string rc_message(sqlite3* db, int rc) {
  // After a failed step the connection's message is the specific one
  // ("UNIQUE constraint failed: ..."); sqlite3_errstr only names the code.
  if (db != nullptr && sqlite3_errcode(db) != SQLITE_OK) return last_error(db);
  return sqlite3_errstr(rc);
}

}  // namespace

// close_v2 because a statement outliving its connection (a bug) must not
// leave the file open forever; it closes once the last statement goes.
void DbCloser::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

void Statement::Finalizer::operator()(sqlite3_stmt* s) const {
  sqlite3_finalize(s);
}

std::string last_error(sqlite3* db) {
  std::string m = one_line(sqlite3_errmsg(db));
  const int os_errno = sqlite3_system_errno(db);
  const int primary = sqlite3_errcode(db) & 0xFF;
  if (os_errno != 0 && (primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR ||
                        primary == SQLITE_FULL || primary == SQLITE_READONLY)) {
    m += " (";
    m += std::strerror(os_errno);
    m += ")";
  }
  return m;
}

Result<Db> open(const std::string& file, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, flags, nullptr);
  Db db(raw);  // open_v2 hands back a handle to close even when it fails
  if (rc != SQLITE_OK) {
    return Error{db ? last_error(db.get()) : std::string(sqlite3_errstr(rc))};
  }
  sqlite3_busy_timeout(db.get(), static_cast<int>(kBusyTimeout.count()));
  sqlite3_extended_result_codes(db.get(), 1);
  // A database file is outside input: it must not be able to run functions
  // from its schema (views, triggers) or be corrupted through SQL.
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  return db;
}

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  Statement s(db, raw);
  if (rc != SQLITE_OK) return Error{last_error(db)};
  CHECK(raw != nullptr);  // only empty SQL prepares to nothing
  return s;
}

void Statement::note_bind(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Statement& Statement::bind(int index, int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_.get(), index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  note_bind(sqlite3_bind_text64(stmt_.get(), index, text.data(), text.size(), SQLITE_TRANSIENT,
                                SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob bound from a null pointer would read as NULL.
  static const char kEmpty = 0;
  note_bind(sqlite3_bind_blob64(stmt_.get(), index, bytes.empty() ? &kEmpty : bytes.data(),
                                bytes.size(), SQLITE_TRANSIENT));
  return *this;
}

Statement& Statement::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_.get(), index));
  return *this;
}

Result<bool> Statement::step() {
  if (bind_rc_ != SQLITE_OK) return Error{std::string(sqlite3_errstr(bind_rc_))};
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error{rc_message(db_, rc)};
}

Result<void> Statement::run() {
  for (;;) {
    Result<bool> row = step();
    if (!row) return row.error();
    if (!*row) return {};
  }
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL;
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(stmt_.get(), column);
}

std::string Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_.get(), column);
  const int n = sqlite3_column_bytes(stmt_.get(), column);  // after the pointer: see sqlite docs
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), n);
}

std::string Statement::blob(int column) const {
  const void* p = sqlite3_column_blob(stmt_.get(), column);
  const int n = sqlite3_column_bytes(stmt_.get(), column);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
}

Result<void> exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return {};
  std::string m = one_line(message != nullptr ? message : sqlite3_errstr(rc));
  sqlite3_free(message);
  return Error{std::move(m)};
}

Result<Transaction> Transaction::begin_immediate(sqlite3* db,
                                                 std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  // Jittered sleeps so that processes that collided do not collide again.
  std::minstd_rand rng(static_cast<unsigned>(
      std::chrono::steady_clock::now().time_since_epoch().count()));
  for (;;) {
    const int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return Transaction(db);
    if ((rc & 0xFF) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
      return Error{last_error(db)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 20));
  }
}

Transaction::~Transaction() {
  // After some errors (SQLITE_FULL, IOERR) SQLite has already rolled back;
  // the ROLLBACK then fails harmlessly.
  if (db_ != nullptr && !sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Result<void> Transaction::commit() {
  CHECK(db_ != nullptr);
  Result<void> r = exec(db_, "COMMIT");
  if (r) db_ = nullptr;
  return r;
}

}  // namespace quip::store::sql
