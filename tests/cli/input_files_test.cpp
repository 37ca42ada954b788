// Files and streams quip reads, when they are not what they should be: a
// FIFO, a device or a folder where a model, a prompt file, a template, a
// config, a cache file or the database should be is refused at once with
// one line (never a hang), and an endless stdin or a huge -f is cut at the
// input limit ($QUIP_MAX_INPUT) with a message that says how to raise it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

using testing_home::llama_model;
using testing_home::QuipHome;
using testing_home::qwen_model;
using testing_home::RunOptions;
using testing_home::RunResult;
namespace fs = std::filesystem;

class InputFiles : public QuipHome {
 protected:
  fs::path make_fifo(const fs::path& path) const {
    fs::create_directories(path.parent_path());
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path;
  }
};

TEST_F(InputFiles, AFifoModelIsRefusedByEveryCommand) {
  const std::string fifo = make_fifo(home() / "model.gguf").string();
  quip::testing::write_bytes(home() / "m.json", R"([{"role": "user", "content": "Hi"}])");
  const std::vector<std::vector<std::string>> commands = {
      {"-m", fifo, "hi"},
      {"inspect", fifo},
      {"inspect", "--json", fifo},
      {"tokenize", "-m", fifo, "hi"},
      {"template", "-m", fifo, (home() / "m.json").string()},
      {"bench", "-m", fifo},
  };
  for (const auto& args : commands) {
    expect_failure(args, kExitBadData, "is a FIFO, expected a regular file");
  }
}

TEST_F(InputFiles, APromptFileMustBeARegularFile) {
  QUIP_REQUIRE_SHARED();
  const std::string fifo = make_fifo(home() / "prompt").string();
  fs::create_directories(home() / "folder");
  expect_failure({"-m", llama_model(), "-f", fifo}, kExitUsage, "is a FIFO");
  expect_failure({"-m", llama_model(), "-f", "/dev/zero"}, kExitUsage,
                 "/dev/zero: is a character device, expected a regular file");
  expect_failure({"-m", llama_model(), "-f", (home() / "folder").string()}, kExitUsage,
                 "is a directory");
}

TEST_F(InputFiles, TemplateMessagesAndConfigFilesMustBeRegularFiles) {
  QUIP_REQUIRE_SHARED();
  const std::string fifo = make_fifo(home() / "fifo").string();
  quip::testing::write_bytes(home() / "t.jinja", "{{ messages[0].content }}");
  quip::testing::write_bytes(home() / "m.json", R"([{"role": "user", "content": "Hi"}])");
  expect_failure({"-m", llama_model(), "--template", fifo, "hi"}, kExitUsage, "is a FIFO");
  expect_failure({"template", "--template", fifo, (home() / "m.json").string()}, kExitUsage,
                 "is a FIFO");
  expect_failure({"template", "--template", (home() / "t.jinja").string(), fifo}, kExitUsage,
                 "is a FIFO");
  expect_failure({"-m", llama_model(), "--config", fifo, "hi"}, kExitUsage, "is a FIFO");
  expect_failure({"cache", "--config", fifo, "stats"}, kExitUsage, "is a FIFO");
  RunOptions env;
  env.env = {{"QUIP_CONFIG", fifo}};
  expect_failure({"-m", llama_model(), "hi"}, kExitUsage, "is a FIFO", env);
}

// stdin is read to its end, but never past the input limit.
TEST_F(InputFiles, AnEndlessStdinIsCutAtTheInputLimit) {
  QUIP_REQUIRE_SHARED();
  RunOptions zero;
  zero.stdin_from = "/dev/zero";
  // The default limit.
  expect_failure({"-m", llama_model(), "summarize"}, kExitUsage,
                 "stdin: longer than 64 MiB (the input limit; set QUIP_MAX_INPUT", zero);
  zero.env = {{"QUIP_MAX_INPUT", "1MiB"}};
  quip::testing::write_bytes(home() / "t.jinja", "{{ messages[0].content }}");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-m", llama_model(), "summarize"},
        std::vector<std::string>{"-m", llama_model(), "-"},
        std::vector<std::string>{"--raw", "-m", llama_model(), "go on"},
        std::vector<std::string>{"tokenize", "-m", llama_model(), "-"},
        std::vector<std::string>{"template", "--template", (home() / "t.jinja").string(), "-"}}) {
    expect_failure(args, kExitUsage,
                   "stdin: longer than 1 MiB (the input limit; set QUIP_MAX_INPUT to raise it",
                   zero);
  }
}

TEST_F(InputFiles, TheLimitCoversStdinAndTheFileTogether) {
  QUIP_REQUIRE_SHARED();
  quip::testing::write_bytes(home() / "stdin", std::string(600, 'a'));
  quip::testing::write_bytes(home() / "file", std::string(600, 'b'));
  quip::testing::write_bytes(home() / "big", std::string(2000, 'c'));
  RunOptions o;
  o.env = {{"QUIP_MAX_INPUT", "1K"}};
  o.stdin_from = (home() / "stdin").string();
  const std::string model = llama_model();
  expect_failure({"--raw", "-m", model, "-f", (home() / "file").string(), "--print-prompt"},
                 kExitUsage, "stdin and -f together are longer than 1 KiB", o);
  o.stdin_from = "/dev/null";
  expect_failure({"--raw", "-m", model, "-f", (home() / "big").string(), "--print-prompt"},
                 kExitUsage, "big: longer than 1 KiB", o);
  // Within the limit: read whole.
  const RunResult r =
      run({"--raw", "-m", model, "-f", (home() / "file").string(), "--print-prompt"}, o);
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.out.find(std::string(600, 'b')), std::string::npos);
  // Raised: the same input goes through.
  o.stdin_from = (home() / "stdin").string();
  o.env = {{"QUIP_MAX_INPUT", "2K"}};
  EXPECT_EQ(
      run({"--raw", "-m", model, "-f", (home() / "file").string(), "--print-prompt"}, o).status,
      kExitOk);
}

TEST_F(InputFiles, ABadInputLimitIsAUsageError) {
  QUIP_REQUIRE_SHARED();
  for (const char* bad : {"lots", "0", "-5"}) {
    RunOptions o;
    o.env = {{"QUIP_MAX_INPUT", bad}};
    expect_failure({"-m", llama_model(), "hi"}, kExitUsage, "QUIP_MAX_INPUT", o);
  }
}

// A FIFO with a segment's name in the cache folder: every call that looks
// that prefix up used to block in open().
TEST_F(InputFiles, AFifoInTheCacheFolderIsIgnored) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"--raw", "-m",     llama_model(),     "-n",
                                         "4",     "--json", "Once upon a time"};
  const RunResult first = run(args);
  ASSERT_EQ(first.status, kExitOk) << first.err;
  size_t replaced = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache_dir() / "kv")) {
    if (e.path().extension() != ".kv") continue;
    fs::remove(e.path());
    make_fifo(e.path());
    ++replaced;
  }
  ASSERT_GT(replaced, 0u);
  const RunResult again = run(args);
  EXPECT_FALSE(again.timed_out) << "blocked on a FIFO in the cache folder";
  ASSERT_EQ(again.status, kExitOk) << again.err;
  EXPECT_NE(again.err.find("is a FIFO, not a cache file"), std::string::npos) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out).at("tokens"),
            nlohmann::json::parse(first.out).at("tokens"));
  // Not quip's to remove: left where it is.
  size_t fifos = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache_dir() / "kv")) {
    if (e.is_fifo()) ++fifos;
  }
  EXPECT_EQ(fifos, replaced);
}

// The vocabulary index (a byte-level BPE model's merge table) in the cache
// folder, as a FIFO.
TEST_F(InputFiles, AFifoInPlaceOfTheVocabularyIndexIsIgnored) {
  QUIP_REQUIRE_SHARED();
  const std::vector<std::string> args = {"tokenize", "--ids", "-m", qwen_model(), "Hello world"};
  const std::string ids = run_ok(args);
  size_t replaced = 0;
  for (const auto& e : fs::directory_iterator(cache_dir())) {
    if (!e.path().filename().string().starts_with("tokenizer-merges-")) continue;
    fs::remove(e.path());
    make_fifo(e.path());
    ++replaced;
  }
  ASSERT_EQ(replaced, 1u);
  const RunResult r = run(args);
  EXPECT_FALSE(r.timed_out) << "blocked on a FIFO in place of the vocabulary index";
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out, ids);
}

TEST_F(InputFiles, AFifoInPlaceOfTheDatabaseIsAnError) {
  QUIP_REQUIRE_SHARED();
  make_fifo(db_file());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"log"}, std::vector<std::string>{"show", "1"},
        std::vector<std::string>{"export", "1"}, std::vector<std::string>{"rm", "1"}}) {
    expect_failure(args, kExitBadData, "is a FIFO, expected a regular file");
  }
  // -c reads the database as log does: unusable data (3).
  expect_failure({"-m", llama_model(), "-c", "hi"}, kExitBadData, "is a FIFO");
  // The answer is printed; only its record fails.
  const RunResult r = run({"--raw", "-m", llama_model(), "-n", "2", "hi"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, kExitFailure);
  EXPECT_NE(r.err.find("the answer was not recorded"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is a FIFO"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace quip::cli
