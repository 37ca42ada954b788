// A QUIP_HOME of a test's own for tests that run the quip binary: config,
// data and cache folders under a temporary folder, a fixed session, and a
// time limit on every run (a hang fails the test instead of hanging it).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gguf/reader.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli::testing_home {

namespace fs = std::filesystem;
using quip::testing::RunOptions;
using quip::testing::RunResult;

inline constexpr int kTimeoutMs = 60'000;

// A small, fast model with the SentencePiece vocabulary (no chat template).
inline std::string llama_model() {
  return (quip::testing::shared_dir() / "models" / "tiny-llama-spm-e64-f16.gguf").string();
}

// A model with its own chat template (Qwen2.5's) and a byte-level BPE
// vocabulary (whose merge table is cached in the cache folder).
inline std::string qwen_model() {
  return (quip::testing::shared_dir() / "models" / "tiny-qwen2-e64-f16.gguf").string();
}

inline mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// A copy of the model at `from` whose tokenizer.chat_template is `source`
// (padded with a Jinja comment to the length of the original, which must be
// longer: the copy is the same file with those bytes replaced).
inline void copy_with_template(const std::string& from, const fs::path& to,
                               const std::string& source) {
  auto file = gguf::GgufFile::open(from);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto own = file->get<std::string_view>("tokenizer.chat_template");
  ASSERT_TRUE(own.ok()) << own.error().message;
  ASSERT_GE(own->size(), source.size() + 4);
  std::string padded = source + "{#";
  padded += std::string(own->size() - padded.size() - 2, ' ');
  padded += "#}";
  std::string bytes(reinterpret_cast<const char*>(file->bytes().data()), file->bytes().size());
  const size_t at =
      static_cast<size_t>(reinterpret_cast<const std::byte*>(own->data()) - file->bytes().data());
  bytes.replace(at, padded.size(), padded);
  quip::testing::write_bytes(to, bytes);
}

class QuipHome : public ::testing::Test {
 protected:
  fs::path home() const { return home_.path(); }
  fs::path data_dir() const { return home() / "data"; }
  fs::path cache_dir() const { return home() / "cache"; }
  fs::path db_file() const { return data_dir() / "quip.db"; }

  // The options every run gets, plus `more` (variables with an empty value
  // are removed from the environment).
  RunOptions options(RunOptions more = {}) const {
    more.env.insert(more.env.begin(), {{"QUIP_HOME", home().string()},
                                       {"QUIP_SESSION", "test-session"},
                                       {"QUIP_CONFIG", ""},
                                       {"TZ", "UTC"}});
    if (more.timeout_ms == 0) more.timeout_ms = kTimeoutMs;
    return more;
  }

  RunResult run(const std::vector<std::string>& args, RunOptions more = {}) const {
    return quip::testing::run_quip(args, options(std::move(more)));
  }

  // Runs quip under /usr/bin/env with `assignments` ("NAME=value", where
  // the value may be empty: run_quip would remove such a variable).
  RunResult run_with_env(const std::vector<std::string>& assignments,
                         const std::vector<std::string>& args) const {
    std::vector<std::string> command = {"/usr/bin/env"};
    command.insert(command.end(), assignments.begin(), assignments.end());
    command.push_back(QUIP_BINARY);
    command.insert(command.end(), args.begin(), args.end());
    return quip::testing::run_command(command, options());
  }

  // Runs a command that must succeed with nothing on stderr; returns stdout.
  std::string run_ok(const std::vector<std::string>& args, RunOptions more = {}) const {
    const RunResult r = run(args, std::move(more));
    EXPECT_EQ(r.status, 0) << quip::testing::describe(args, r);
    EXPECT_EQ(r.err, "") << quip::testing::describe(args, r);
    return r.out;
  }

  // The error contract: `status`, nothing on stdout, one line on stderr
  // that contains `says`; and no hang.
  RunResult expect_failure(const std::vector<std::string>& args, int status,
                           const std::string& says, RunOptions more = {}) const {
    const RunResult r = run(args, std::move(more));
    EXPECT_FALSE(r.timed_out) << quip::testing::describe(args, r);
    EXPECT_EQ(r.status, status) << quip::testing::describe(args, r);
    EXPECT_EQ(r.out, "") << quip::testing::describe(args, r);
    EXPECT_EQ(quip::testing::count_lines(r.err), 1u) << quip::testing::describe(args, r);
    EXPECT_NE(r.err.find(says), std::string::npos) << "expected stderr to say: " << says << "\n"
                                                   << quip::testing::describe(args, r);
    return r;
  }

  quip::testing::TempDir home_;
};

}  // namespace quip::cli::testing_home
