// Opening a database: the checks that refuse what quip cannot use, the
// switch to WAL, and the schema with its migrations.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <system_error>

#include "base/file_io.h"
#include "base/paths.h"
#include "store/store.h"

namespace quip::store {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// PRAGMA application_id: "quip" in ASCII, so that a quip database is told
// apart from another program's SQLite file.
constexpr int64_t kApplicationId = 0x71756970;

// Migrations from version - 1 to version, applied in order in one
// transaction. Never edit a released entry: append a new one.
struct Migration {
  int version;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE conversations (
  -- AUTOINCREMENT: an id is never reused, even after the newest is removed,
  -- so an id in a script or a shell history never names another conversation.
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  session TEXT NOT NULL,
  title TEXT NOT NULL,
  -- No foreign key: a fork outlives its original and keeps where it came from.
  forked_from_conversation INTEGER,
  forked_from_turn INTEGER,
  CHECK ((forked_from_conversation IS NULL) = (forked_from_turn IS NULL))
);
CREATE TABLE turns (
  -- Insertion order: the newest turn of a session has the largest seq
  -- (a new rowid is above every existing one), whatever the clocks say.
  seq INTEGER PRIMARY KEY,
  conversation INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  turn INTEGER NOT NULL CHECK (turn BETWEEN 1 AND 2147483647),
  parent_turn INTEGER NOT NULL CHECK (parent_turn >= 0 AND parent_turn < turn),
  time_ms INTEGER NOT NULL,
  model_path TEXT NOT NULL,
  model_fingerprint TEXT NOT NULL,
  sampler_json TEXT NOT NULL,
  messages_json TEXT NOT NULL,
  answer TEXT NOT NULL,
  timings_json TEXT NOT NULL,
  -- Little-endian int32 token ids.
  prompt_tokens BLOB NOT NULL CHECK (length(prompt_tokens) % 4 = 0),
  answer_tokens BLOB NOT NULL CHECK (length(answer_tokens) % 4 = 0),
  interrupted INTEGER NOT NULL CHECK (interrupted IN (0, 1)),
  session TEXT NOT NULL,
  -- 1 for a turn copied by a fork: it was not made in its session now.
  copied INTEGER NOT NULL CHECK (copied IN (0, 1)),
  UNIQUE (conversation, turn)
);
CREATE INDEX turns_by_session ON turns (session, copied);
)sql"},
    // The turn's reasoning (a thinking model's section before its answer),
    // kept apart from the answer.
    {2, R"sql(
ALTER TABLE turns ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';
)sql"},
};
static_assert(std::size(kMigrations) == kSchemaVersion);

// Reads the header fields quip relies on and refuses what it cannot use: a
// file that is not SQLite (the first read fails), another program's
// database, or a newer quip's. Returns the schema version.
Result<int> check_header(sqlite3* db) {
  // One statement, so one snapshot: read one by one, the fields could come
  // from before and after another process set up the schema.
  auto s = sql::Statement::prepare(
      db,
      "SELECT (SELECT application_id FROM pragma_application_id), "
      "(SELECT user_version FROM pragma_user_version), (SELECT COUNT(*) FROM sqlite_schema)");
  if (!s) return s.error();
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return Error{"cannot read the database header"};
  const int64_t app = s->int64(0), version = s->int64(1), objects = s->int64(2);
  const bool foreign = app == 0 ? (version != 0 || objects != 0) : app != kApplicationId;
  if (foreign) {
    return Error{"not a quip conversation database (a SQLite file of another program)"};
  }
  if (version > kSchemaVersion) {
    return Error{"database schema version " + std::to_string(version) +
                 " is newer than this quip understands (" + std::to_string(kSchemaVersion) +
                 "): it was written by a newer quip"};
  }
  if (version < 0) return Error{"invalid schema version " + std::to_string(version)};
  return static_cast<int>(version);
}

// Switches to WAL (readers never block the writer nor each other). The
// switch itself needs an exclusive lock, so it is retried like a write; a
// database already in WAL mode only reads its header.
Result<void> use_wal(sqlite3* db) {
  const auto deadline = Clock::now() + sql::kWritePatience;
  for (;;) {
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return {};
    if ((rc & 0xFF) != SQLITE_BUSY || Clock::now() >= deadline) {
      return Error{sql::last_error(db)};
    }
    sqlite3_sleep(5);
  }
}

// Brings the schema to kSchemaVersion. Several processes may start on a new
// database at once: the version is read again under the write lock, so only
// the first one migrates.
Result<void> migrate(sqlite3* db) {
  auto tx = sql::Transaction::begin_immediate(db);
  if (!tx) return tx.error();
  auto version = check_header(db);
  if (!version) return version.error();
  for (const Migration& m : kMigrations) {
    if (m.version <= *version) continue;
    if (auto r = sql::exec(db, m.sql); !r) {
      return r.error().with_context("migrating to schema version " + std::to_string(m.version));
    }
  }
  const std::string set_version = "PRAGMA user_version = " + std::to_string(kSchemaVersion) +
                                  "; PRAGMA application_id = " + std::to_string(kApplicationId);
  if (auto r = sql::exec(db, set_version.c_str()); !r) return r.error();
  return tx->commit();
}

fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

bool can_read_as_immutable(const fs::path& db_file) {
  std::error_code ec;
  return ::faccessat(AT_FDCWD, folder_of(db_file).c_str(), W_OK, AT_EACCESS) != 0 &&
         !fs::exists(db_file.string() + "-wal", ec) && !ec;
}

// SQLite reads a 1-byte file as an empty database (and would then write
// over it), while any real database has at least a 100-byte header.
Result<void> check_not_a_stub(const fs::path& db_file) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(db_file, ec);
  if (!ec && size > 0 && size < 100) {
    return Error{"file is not a database (" + std::to_string(size) + " bytes)"};
  }
  return {};
}

// "file:PATH?immutable=1" with the characters that URIs reserve escaped.
std::string immutable_uri(const fs::path& db_file) {
  std::string uri = "file:";
  for (const char c : db_file.string()) {
    if (c == '%' || c == '?' || c == '#') {
      static const char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[static_cast<unsigned char>(c) >> 4];
      uri += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

// SQLite opens the database and the files beside it with a blocking open()
// and reads them: a FIFO in their place would hang the call, and a folder
// gets a vague "unable to open".
Result<void> check_regular(const fs::path& db_file) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    if (auto r = check_regular_if_exists(db_file.string() + suffix); !r) {
      return r.error().with_context("cannot open the conversation database");
    }
  }
  return {};
}

// The database and the files SQLite keeps beside it, made 0600 when older
// ones are open to others. (SQLite gives a new -wal or -shm the mode of the
// database file.)
void make_private_files(const fs::path& db_file) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    make_private(fs::path(db_file.string() + suffix));
  }
}

// Creates an empty database file 0600 when there is none (SQLite would
// create it 0644, less the umask), and repairs the modes of existing ones.
Result<void> create_private(const fs::path& db_file) {
  const int fd = ::open(db_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    return Error{std::strerror(errno)};
  }
  make_private_files(db_file);
  return {};
}

}  // namespace

Result<Store> Store::open(const fs::path& db_file) {
  const auto fail = [&](const std::string& what, const Error& e) {
    return Error{db_file.string() + ": " + what + ": " + e.message};
  };
  // The folder is 0700 and the files 0600: conversations are the user's
  // alone (modes of older, looser ones are repaired here).
  if (db_file.has_parent_path()) {
    if (auto made = make_private_dir(db_file.parent_path()); !made) {
      return Error{made.error().message}.with_context("cannot create the database folder");
    }
  }
  // SQLite writes files beside the database (the -wal and -shm of WAL
  // mode), so the folder must be writable even when the file is; said here
  // because SQLite's own message then names the wrong cause ("No such file").
  const fs::path dir = folder_of(db_file);
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return fail(
        "cannot open the conversation database for writing",
        Error{"the folder " + dir.string() + " is not writable (" + std::strerror(errno) + ")"});
  }
  if (auto r = check_regular(db_file); !r) return r.error();
  if (auto r = create_private(db_file); !r) {
    return fail("cannot create the conversation database", r.error());
  }
  if (auto r = check_not_a_stub(db_file); !r) {
    return fail("cannot open the conversation database", r.error());
  }
  auto db = sql::open(db_file.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return fail("cannot open the conversation database", db.error());
  // SQLite quietly opens a file it may not write read-only; every write
  // would then fail with a vaguer message.
  if (sqlite3_db_readonly(db->get(), "main") == 1) {
    return fail("cannot open the conversation database for writing",
                Error{"the file is read-only"});
  }
  auto version = check_header(db->get());
  if (!version) return fail("cannot open the conversation database", version.error());
  // FULL: a committed turn survives a power cut too, at one more fsync per
  // call (the cost is small next to generating an answer).
  if (auto r = sql::exec(db->get(), "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL"); !r) {
    return fail("cannot open the conversation database", r.error());
  }
  if (auto r = use_wal(db->get()); !r) {
    return fail("cannot open the conversation database", r.error());
  }
  if (*version < kSchemaVersion) {
    if (auto r = migrate(db->get()); !r) return fail("cannot set up the database", r.error());
  }
  return Store(db_file, std::move(*db), /*read_only=*/false, /*empty=*/false);
}

Result<Store> Store::open_read_only(const fs::path& db_file) {
  const auto fail = [&](const Error& e) {
    return Error{db_file.string() + ": cannot open the conversation database: " + e.message};
  };
  if (auto r = check_regular(db_file); !r) return r.error();
  if (db_file.has_parent_path()) make_private(db_file.parent_path());
  make_private_files(db_file);
  if (auto r = check_not_a_stub(db_file); !r) return fail(r.error());
  auto db = sql::open(db_file.string(), SQLITE_OPEN_READONLY);
  if (!db) return fail(db.error());
  auto version = check_header(db->get());
  if (!version && can_read_as_immutable(db_file)) {
    // A WAL database in a folder no one may write (a read-only disk): SQLite
    // cannot create the -shm file readers share. With no -wal file the main
    // file holds every committed turn and no writer can come (it would need
    // that folder too), so it is read as an immutable file.
    auto immutable = sql::open(immutable_uri(db_file), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    if (immutable) {
      auto v = check_header(immutable->get());
      if (v) {
        db = std::move(immutable);
        version = v;
      }
    }
  }
  if (!version) return fail(version.error());
  // A reader does not migrate: a database of version 1 reads as it is,
  // its turns without reasoning (a quip call that writes upgrades it).
  return Store(db_file, std::move(*db), /*read_only=*/true, /*empty=*/*version == 0,
               /*reasoning_column=*/*version == 0 || *version >= 2);
}

std::optional<fs::path> default_database_path() {
  auto dir = data_dir();
  if (!dir) return std::nullopt;
  return *dir / "quip.db";
}

}  // namespace quip::store
