// One rule per kind of ending, on every command (README.md, "Exit status"):
// - the reader going away (`quip ... | head`) ends a command quietly with
//   status 0, never with a death by SIGPIPE (141);
// - a chat template that calls raise_exception() refuses the messages: 2
//   on every path; any other failure of a template is the template's: 3
//   for the model's own (bad data), 2 for a --template file (usage), on
//   the main path and in `quip template` alike, syntax or render error.
#include "cli/exit_status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "store/store.h"
#include "store/store_helpers.h"

namespace quip::cli {
namespace {

using testing_home::copy_with_template;
using testing_home::llama_model;
using testing_home::QuipHome;
using testing_home::qwen_model;
using testing_home::RunOptions;
using testing_home::RunResult;
namespace fs = std::filesystem;

TEST_F(QuipHome, AClosedPipeEndsEveryCommandQuietly) {
  QUIP_REQUIRE_SHARED();
  {
    auto store = store::Store::open(db_file());
    ASSERT_TRUE(store.ok()) << store.error().message;
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(store->record_turn(store::testing::sample_turn(i)).ok());
  }
  quip::testing::write_bytes(home() / "t.jinja",
                             "{% for m in messages %}{{ m.content }}{% endfor %}");
  quip::testing::write_bytes(home() / "m.json", R"([{"role": "user", "content": "Hi"}])");
  const std::vector<std::vector<std::string>> commands = {
      {"--raw", "-m", llama_model(), "-n", "8", "Once upon a time"},
      {"-m", llama_model(), "-n", "8", "--json", "hi"},
      {"tokenize", "-m", llama_model(), "Hello world, once more"},
      {"tokenize", "--ids", "-m", llama_model(), "Hello world"},
      {"show", "1"},
      {"show", "1", "--json"},
      {"export", "1"},
      {"log"},
      {"log", "--json"},
      {"inspect", llama_model()},
      {"inspect", "--json", "--tensors", llama_model()},
      {"inspect", "--tensors", llama_model()},
      {"template", "--template", (home() / "t.jinja").string(), (home() / "m.json").string()},
      {"template", "-m", qwen_model(), (home() / "m.json").string()},
      {"cache", "stats"},
      {"--help"},
  };
  RunOptions closed;
  closed.stdout_closed_pipe = true;
  for (const auto& args : commands) {
    const RunResult r = run(args, closed);
    EXPECT_FALSE(r.killed) << "killed by a signal\n" << quip::testing::describe(args, r);
    EXPECT_EQ(r.status, kExitOk) << quip::testing::describe(args, r);
    EXPECT_EQ(r.err, "") << quip::testing::describe(args, r);
  }
}

// The status of each kind of template failure, on the two paths.
TEST_F(QuipHome, TemplateFailuresHaveOneStatusOnEveryPath) {
  QUIP_REQUIRE_SHARED();
  struct Kind {
    const char* name;
    std::string source;
    int own_status;   // as the model's own template
    int file_status;  // as a --template file
  };
  const Kind kinds[] = {
      {"syntax error", "{% for m in messages %}{{ m.content }}", kExitBadData, kExitUsage},
      {"render error", "{{ messages | frobnicate }}", kExitBadData, kExitUsage},
      {"undefined call", "{{ nothing() }}", kExitBadData, kExitUsage},
      {"raise_exception", "{{ raise_exception('roles must alternate') }}", kExitUsage, kExitUsage},
  };
  quip::testing::write_bytes(home() / "m.json", R"([{"role": "user", "content": "Hi"}])");
  const std::string messages = (home() / "m.json").string();
  for (const Kind& k : kinds) {
    SCOPED_TRACE(k.name);
    const fs::path file = home() / "t.jinja";
    const fs::path model = home() / "m.gguf";
    quip::testing::write_bytes(file, k.source);
    copy_with_template(qwen_model(), model, k.source);
    expect_failure({"-m", model.string(), "hi"}, k.own_status, "tokenizer.chat_template");
    expect_failure({"template", "-m", model.string(), messages}, k.own_status,
                   "tokenizer.chat_template");
    expect_failure({"-m", llama_model(), "--template", file.string(), "hi"}, k.file_status,
                   "t.jinja");
    expect_failure({"template", "--template", file.string(), messages}, k.file_status, "t.jinja");
  }
}

}  // namespace
}  // namespace quip::cli
