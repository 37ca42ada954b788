// Usage errors read like quip's other messages: one line naming the option
// as it was typed and what is wrong with it, exit status 2; never CLI11's
// own wording ("At Most 1 required but received 2", "Could not convert")
// nor a message with an empty name in it ("quip: : cannot open").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

using testing_home::llama_model;
using testing_home::QuipHome;
using testing_home::RunResult;

struct Case {
  std::vector<std::string> args;
  std::string message;  // the whole line, without "\n"
};

TEST_F(QuipHome, UsageErrorsSayWhatIsWrongInQuipsWords) {
  const Case cases[] = {
      {{"-m", "a.gguf", "-m", "b.gguf", "hi"}, "quip: -m given twice (see 'quip --help')"},
      {{"--model", "a.gguf", "-m", "b.gguf", "hi"},
       "quip: --model given twice (see 'quip --help')"},
      {{"--temp", "1", "--temp=2", "hi"}, "quip: --temp given twice (see 'quip --help')"},
      {{"log", "-n", "1", "--count", "2"}, "quip log: -n given twice (see 'quip log --help')"},
      {{"cache", "prune", "--max-size", "1", "--max-size", "2"},
       "quip cache: --max-size given twice (see 'quip cache --help')"},
      {{"-m", "", "hi"}, "quip: -m: empty model name (see 'quip --help')"},
      {{"--model=", "hi"}, "quip: --model: empty model name (see 'quip --help')"},
      {{"-f", "", "hi"}, "quip: -f: empty file name (see 'quip --help')"},
      {{"--template", "", "hi"}, "quip: --template: empty file name (see 'quip --help')"},
      {{"--config", "", "hi"}, "quip: --config: empty file name (see 'quip --help')"},
      {{"tokenize", "-m", "", "hi"},
       "quip tokenize: -m: empty model name (see 'quip tokenize --help')"},
      {{"template", "-m", "", "x.json"},
       "quip template: -m: empty model name (see 'quip template --help')"},
      {{"inspect", ""}, "quip inspect: FILE: empty file name (see 'quip inspect --help')"},
      {{"-m"}, "quip: -m needs a value (see 'quip --help')"},
      {{"hi", "--temp"}, "quip: --temp needs a value (see 'quip --help')"},
      // The sampler and size numbers: read as config.toml reads them, so
      // the message gives the range (and the setting's name).
      {{"--temp", "abc", "hi"}, "quip: --temp 'abc' is not a number in [0, 100] (0: greedy)"},
      {{"-n", "1.5", "hi"},
       "quip: --n-predict '1.5' is not an integer in [-1, 2147483647] (-1: no limit)"},
      {{"--seed", "1e3", "hi"},
       "quip: --seed '1e3' is not an integer in [-1, 9223372036854775807] (-1: a fresh one)"},
      {{"--top-k", "99999999999999999999", "hi"},
       "quip: --top-k 99999999999999999999 is not in [0, 2147483647] (0: all)"},
      {{"--top-k", "-99999999999999999999", "hi"},
       "quip: --top-k -99999999999999999999 is not in [0, 2147483647] (0: all)"},
      {{"-t", "0x10", "hi"}, "quip: --threads '0x10' is not an integer in [1, 1024]"},
      // Integers CLI11 reads itself: decimal digits that fit, or an error.
      {{"bench", "-m", "x.gguf", "-t", "0x10"},
       "quip bench: -t: '0x10' is not a decimal integer (see 'quip bench --help')"},
      {{"bench", "-m", "x.gguf", "-p", "010"},
       "quip bench: -p: '010' is not a decimal integer (see 'quip bench --help')"},
      // llama-cli's -c (the context size) is not quip's (continue).
      {{"-c", "4096", "hi"},
       "quip: -c continues a conversation; for the context size use --ctx-size 4096"},
      {{"-m", "x.gguf", "-c", "512"},
       "quip: -c continues a conversation; for the context size use --ctx-size 512"},
      {{"--bogus", "hi"}, "quip: unknown option --bogus (see 'quip --help')"},
      {{"-x", "hi"}, "quip: unknown option -x (see 'quip --help')"},
      {{"log", "extra"}, "quip log: unexpected argument 'extra' (see 'quip log --help')"},
      {{"log", "-n", "abc"}, "quip log: -n: 'abc' is not an integer (see 'quip log --help')"},
      {{"log", "-n", "-1"}, "quip log: --count -1 is not in [0, 2147483647] (0: all)"},
      {{"show", "1", "2"}, "quip show: unexpected argument '2' (see 'quip show --help')"},
      {{"cache"},
       "quip cache: give a command: one of stats, clear, prune (see 'quip cache --help')"},
      {{"cache", "bogus"},
       "quip cache: unknown command 'bogus' (one of stats, clear, prune) (see 'quip cache "
       "--help')"},
  };
  for (const Case& c : cases) {
    const RunResult r = run(c.args);
    EXPECT_EQ(r.status, kExitUsage) << quip::testing::describe(c.args, r);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, c.message + "\n") << quip::testing::describe(c.args, r);
  }
}

// A flag given twice means what it means once.
TEST_F(QuipHome, ARepeatedFlagIsFine) {
  QUIP_REQUIRE_SHARED();
  const RunResult r = run({"tokenize", "--ids", "--ids", "-m", llama_model(), "hi"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
}

}  // namespace
}  // namespace quip::cli
