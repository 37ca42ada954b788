// A thin RAII layer over the SQLite C API for store/: a connection and a
// prepared statement that close themselves, transactions that roll back
// unless committed, and errors as one-line messages.
//
// Not thread-safe: one connection per thread (quip uses one per process).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"

// Declared here so that store.h, which holds a connection, does not bring
// <sqlite3.h> to its users.
struct sqlite3;
struct sqlite3_stmt;

namespace quip::store::sql {

struct DbCloser {
  void operator()(sqlite3* db) const;
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

// The connection's last error: SQLite's message, and the OS's own reason
// (strerror) when SQLite got one from the OS ("unable to open database file
// (Permission denied)").
std::string last_error(sqlite3* db);

// How long SQLite's own busy handler waits for a lock before a statement
// gives up. Writes are short (one turn), so a wait this long means a stuck
// process rather than a busy one.
inline constexpr std::chrono::milliseconds kBusyTimeout{10'000};
// How long a write keeps trying to get the write lock in all.
inline constexpr std::chrono::milliseconds kWritePatience{30'000};

// Opens `file` with `flags` (SQLITE_OPEN_*), kBusyTimeout and the defensive
// settings (no writable schema, no untrusted functions in a schema that a
// foreign file could bring). The error is the bare reason, without the file
// name.
Result<Db> open(const std::string& file, int flags);

class Statement {
 public:
  // The statement is bound to `db`, which must outlive it.
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  // Bind by 1-based index. A failed bind (out of memory, a value over
  // SQLite's length limit) is reported by the next step().
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, std::string_view text);
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_null(int index);

  // Runs to the next row: true when one is ready, false when done.
  Result<bool> step();
  // Runs a statement that returns no rows that matter.
  Result<void> run();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  std::string text(int column) const;
  std::string blob(int column) const;

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const;
  };
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void note_bind(int rc);

  sqlite3* db_ = nullptr;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  int bind_rc_ = 0;  // the first failed bind (not SQLITE_OK), reported by step()
};

// Runs one or more statements that return nothing.
Result<void> exec(sqlite3* db, const char* sql);

// A write transaction, begun with BEGIN IMMEDIATE so that it holds the write
// lock from the start: a deferred transaction that reads and then writes can
// fail with SQLITE_BUSY whatever the timeout, when another process committed
// in between. Rolls back on destruction unless committed.
class Transaction {
 public:
  // Waits for the write lock: SQLite's busy handler first, then retries with
  // short sleeps for up to `patience` in all (the handler is not called in
  // every case, for instance while another connection recovers the WAL).
  static Result<Transaction> begin_immediate(sqlite3* db,
                                             std::chrono::milliseconds patience = kWritePatience);
  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  Result<void> commit();

 private:
  explicit Transaction(sqlite3* db) : db_(db) {}
  sqlite3* db_;  // null once committed or moved from
};

}  // namespace quip::store::sql
