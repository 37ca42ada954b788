// Helpers for the store tests: sample turns, direct SQL on a database file
// (to check what the Store API does not show, or to break a file on
// purpose), and running code in a child process.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "store/store.h"

namespace quip::store::testing {

// A turn with every field set, distinct for each n.
inline TurnRecord sample_turn(int n, const std::string& session = "session-a") {
  TurnRecord t;
  t.model_path = "/models/model-" + std::to_string(n % 3) + ".gguf";
  t.model_fingerprint = "fp" + std::to_string(n % 3);
  t.sampler_json = R"({"temp":0.7,"seed":)" + std::to_string(n) + "}";
  t.messages_json = R"([{"role":"user","content":"question )" + std::to_string(n) + R"("}])";
  t.answer = "answer " + std::to_string(n);
  t.timings_json = R"({"prompt_ms":12.5})";
  t.prompt_tokens = {1, n, -n, 2147483647, -2147483647 - 1};
  t.answer_tokens = std::vector<int32_t>(static_cast<size_t>(n % 5), n);
  t.interrupted = n % 4 == 3;
  t.session = session;
  t.reasoning = n % 2 == 0 ? "reasoning " + std::to_string(n) : "";
  return t;
}

// Runs SQL on `db_file` through a connection of its own; returns the first
// column of the first row as text ("" when none). A failure fails the test.
inline std::string sql_value(const std::filesystem::path& db_file, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value;
  if (sqlite3_open(db_file.c_str(), &db) != SQLITE_OK) {
    ADD_FAILURE() << db_file << ": " << sqlite3_errmsg(db);
  } else {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    } else {
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (value.empty() && sqlite3_column_text(s, 0) != nullptr) {
          value = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        }
      }
      if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return value;
}

// Runs `fn` in a forked child and returns its exit status (128 + signal
// when killed). The child never returns into the test framework.
// PRECONDITIONS: no Store is used across the fork (SQLite connections must
// not cross one).
inline int in_child(const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (pid == 0) ::_exit(fn());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The error contract: one line naming the file.
inline void expect_one_line_about(const Error& e, const std::filesystem::path& file) {
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(file.string()), std::string::npos) << e.message;
}

}  // namespace quip::store::testing
