// Shell completion: complete() on command lines with candidates of the
// test's own, then the scripts of `quip completion bash|zsh|fish` in the
// real shells, asking them for candidates with a config of model aliases
// and recorded conversations in a QUIP_HOME of the test's own.
#include "cli/completion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "store/store.h"
#include "support/run_quip.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using testing::describe;
using testing::RunResult;
using testing::TempDir;

std::vector<std::string> words_of(const Completion& c) {
  std::vector<std::string> out;
  for (const Candidate& k : c.candidates) out.push_back(k.word);
  std::sort(out.begin(), out.end());
  return out;
}

using Words = std::vector<std::string>;

class Complete : public ::testing::Test {
 protected:
  Complete() {
    sources_.models = [this](const std::optional<std::string>& config) {
      config_seen_ = config;
      return std::vector<Candidate>{{"qwen", "/m/qwen.gguf"}, {"llama", "/m/llama.gguf"}};
    };
    sources_.conversations = [] {
      return std::vector<Candidate>{{"12", "What is 1+1?"}, {"7", "Hello"}};
    };
  }
  Completion run(const Words& words) { return complete(words, sources_); }
  Words candidates(const Words& words) { return words_of(run(words)); }

  CompletionSources sources_;
  std::optional<std::string> config_seen_;
};

TEST_F(Complete, FirstWordIsACommand) {
  const Completion c = run({"quip", ""});
  EXPECT_FALSE(c.files);
  EXPECT_EQ(words_of(c), (Words{"bench", "cache", "completion", "export", "inspect", "log", "models",
                                "ps", "pull", "rm", "serve", "show", "template", "tokenize"}));
  EXPECT_EQ(candidates({"quip", "s"}), (Words{"serve", "show"}));
  EXPECT_EQ(run({"quip", "sh"}).candidates.at(0).description,
            "show a conversation's turns (--json)");
}

TEST_F(Complete, OptionsOfTheCommandTyped) {
  EXPECT_EQ(candidates({"quip", "show", "-"}), (Words{"--help", "--json"}));
  EXPECT_EQ(candidates({"quip", "log", "--"}), (Words{"--count", "--help", "--json"}));
  EXPECT_EQ(candidates({"quip", "--te"}), (Words{"--temp", "--template"}));
  EXPECT_EQ(candidates({"quip", "hello", "--ci"}), (Words{"--cid"}));
  // Only the first word names a command: here "log" is part of a prompt.
  EXPECT_EQ(candidates({"quip", "-m", "x", "log", "--no-"}), (Words{"--no-cache"}));
  // A command with no arguments offers its options.
  EXPECT_EQ(candidates({"quip", "ps", ""}), (Words{"--help", "--json", "--socket"}));
  // The internal --complete is no candidate.
  EXPECT_EQ(candidates({"quip", "completion", "--"}), (Words{"--help"}));
}

TEST_F(Complete, ValuesOfOptions) {
  EXPECT_EQ(candidates({"quip", "export", "--format", ""}), (Words{"json", "md"}));
  EXPECT_EQ(candidates({"quip", "--think", "o"}), (Words{"off"}));
  EXPECT_EQ(candidates({"quip", "completion", ""}), (Words{"bash", "fish", "zsh"}));
  // A number: nothing to offer, not even files.
  const Completion temp = run({"quip", "--temp", ""});
  EXPECT_FALSE(temp.files);
  EXPECT_TRUE(temp.candidates.empty());
  // A file: the shell lists them.
  const Completion file = run({"quip", "-f", "no"});
  EXPECT_TRUE(file.files);
  EXPECT_TRUE(file.candidates.empty());
  EXPECT_TRUE(run({"quip", "inspect", ""}).files);
  // An option's value is not an argument: `-n 5` leaves the ID to type.
  EXPECT_EQ(candidates({"quip", "export", "--format", "md", ""}), (Words{"12", "7"}));
}

TEST_F(Complete, ValueAfterAnEqualsSign) {
  const Completion zsh = run({"quip", "export", "--format=j"});
  EXPECT_EQ(zsh.prefix, "--format=");
  EXPECT_EQ(words_of(zsh), (Words{"json"}));
  // Bash splits the word at "=".
  const Completion bash = run({"quip", "export", "--format", "=", "j"});
  EXPECT_EQ(bash.prefix, "--format=");
  EXPECT_EQ(words_of(bash), (Words{"json"}));
  EXPECT_EQ(candidates({"quip", "export", "--format", "="}), (Words{"json", "md"}));
  // A flag takes no value.
  EXPECT_TRUE(run({"quip", "show", "--json="}).candidates.empty());
}

TEST_F(Complete, ModelNamesAndFiles) {
  const Completion m = run({"quip", "-m", ""});
  EXPECT_TRUE(m.files);
  EXPECT_EQ(words_of(m), (Words{"llama", "qwen"}));
  EXPECT_EQ(config_seen_, std::nullopt);
  EXPECT_EQ(candidates({"quip", "--config", "/x/c.toml", "--model", "q"}), (Words{"qwen"}));
  EXPECT_EQ(config_seen_, "/x/c.toml");
  EXPECT_EQ(candidates({"quip", "--config=/y.toml", "serve", "-m", ""}), (Words{"llama", "qwen"}));
  EXPECT_EQ(candidates({"quip", "serve", "-m", ""}), (Words{"llama", "qwen"}));
  // tokenize and bench take a file, not an alias.
  const Completion t = run({"quip", "tokenize", "-m", ""});
  EXPECT_TRUE(t.files);
  EXPECT_TRUE(t.candidates.empty());
}

TEST_F(Complete, ConversationIds) {
  EXPECT_EQ(candidates({"quip", "--cid", ""}), (Words{"12", "7"}));
  EXPECT_EQ(candidates({"quip", "--cid", "1"}), (Words{"12"}));
  EXPECT_EQ(candidates({"quip", "show", ""}), (Words{"12", "7"}));
  EXPECT_EQ(candidates({"quip", "rm", "7"}), (Words{"7"}));
  EXPECT_EQ(candidates({"quip", "export", "--", ""}), (Words{"12", "7"}));
  // show takes one ID.
  EXPECT_TRUE(candidates({"quip", "show", "12", ""}).empty());
}

TEST_F(Complete, ActionsOfCache) {
  EXPECT_EQ(candidates({"quip", "cache", ""}), (Words{"clear", "prune", "stats"}));
  EXPECT_EQ(candidates({"quip", "cache", "--config", "c.toml", "p"}), (Words{"prune"}));
  EXPECT_EQ(candidates({"quip", "cache", "stats", "-"}), (Words{"--help", "--json"}));
  EXPECT_EQ(candidates({"quip", "cache", "prune", "--"}), (Words{"--help", "--max-size"}));
}

TEST_F(Complete, NothingForTheCommandWordItself) {
  EXPECT_TRUE(candidates({"qu"}).empty());
  EXPECT_TRUE(candidates({}).empty());
}

// Command lines half typed or mistyped: an answer, never a crash.
TEST_F(Complete, OddCommandLines) {
  EXPECT_TRUE(candidates({"quip", "="}).empty());
  EXPECT_TRUE(candidates({"quip", "--="}).empty());
  EXPECT_TRUE(candidates({"quip", "--nope=x"}).empty());
  EXPECT_TRUE(candidates({"quip", "\xff\xfe"}).empty());
  EXPECT_EQ(candidates({"quip", "--ver"}), (Words{"--version"}));
  EXPECT_EQ(candidates({"quip", "-m"}), (Words{"-m"}));
  EXPECT_EQ(candidates({"quip", "export", "--format"}), (Words{"--format"}));
  // After "--" every word is an argument, even one that looks like an option.
  EXPECT_TRUE(candidates({"quip", "show", "--", "--"}).empty());
  EXPECT_TRUE(candidates({"quip", "cache", "stats", "extra", ""}).size() == 2);  // its options
  EXPECT_TRUE(candidates({"quip", "cache", "nope", ""}).size() == 2);            // --help, --config
  EXPECT_TRUE(candidates({"quip", "=", "=", "="}).empty());
  // Bash gives "--cid=" as these words too.
  EXPECT_EQ(candidates({"quip", "--cid", "=", ""}), (Words{"12", "7"}));
}

TEST(CompletionCli, UsageErrors) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"completion"}, std::vector<std::string>{"completion", "tcsh"},
        std::vector<std::string>{"completion", "bash", "zsh"},
        std::vector<std::string>{"completion", "--bogus"}}) {
    const RunResult r = testing::expect_failure(args, 2);
    EXPECT_TRUE(r.err.starts_with("quip completion: ")) << describe(args, r);
  }
}

// The ids come from a database only when there is one that opens: none is
// created, and a broken one gives no candidates and no message.
TEST(CompletionCli, NoOrBrokenDatabase) {
  TempDir home;
  testing::RunOptions o;
  o.env = {{"QUIP_HOME", home.path().string()}, {"QUIP_CONFIG", ""}};
  const std::vector<std::string> args = {"completion", "--complete", "--", "quip", "show", ""};
  RunResult r = testing::run_quip(args, o);
  EXPECT_EQ(r.status, 0) << describe(args, r);
  EXPECT_EQ(r.out, "words\t\n");
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(fs::exists(home / "data" / "quip.db"));
  fs::create_directories(home / "data");
  std::ofstream(home / "data" / "quip.db") << "not a database, long enough to be read as one....";
  fs::create_directories(home / "config");
  std::ofstream(home / "config" / "config.toml") << "[models.x\n";  // broken too
  r = testing::run_quip(args, o);
  EXPECT_EQ(r.status, 0) << describe(args, r);
  EXPECT_EQ(r.out, "words\t\n");
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> model = {"completion", "--complete", "--", "quip", "-m", ""};
  r = testing::run_quip(model, o);
  EXPECT_EQ(r.status, 0) << describe(model, r);
  EXPECT_EQ(r.out, "files\t\n");
  EXPECT_EQ(r.err, "");
}

// ---- The scripts in the shells -------------------------------------------

class CompletionShells : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(home_ / "config");
    std::ofstream(home_ / "config" / "config.toml") << "[models.qwen]\npath = \"/m/qwen.gguf\"\n"
                                                       "[models.llama]\npath = \"/m/l.gguf\"\n";
    auto db = store::Store::open(home_ / "data" / "quip.db");
    ASSERT_TRUE(db.ok()) << db.error().message;
    for (const char* question : {"What is 1+1?", "Name a colour.", "Why?"}) {
      store::TurnRecord t;
      t.time_ms = 1704164640000;
      t.model_path = "/m/qwen.gguf";
      t.model_fingerprint = "fp";
      t.sampler_json = R"({"temp":0})";
      t.messages_json = nlohmann::json::array({{{"role", "user"}, {"content", question}}}).dump();
      t.answer = "ok";
      t.timings_json = R"({"total_ms":5})";
      t.session = "s";
      auto r = db->record_turn(t);
      ASSERT_TRUE(r.ok()) << r.error().message;
      ids_.push_back(std::to_string(r->conversation));
    }
    std::sort(ids_.begin(), ids_.end());
    // A file for -m to offer beside the aliases, in the folder the shells run in.
    fs::create_directories(work_ / "in");
    std::ofstream(work_ / "in" / "qwen-local.gguf") << "x";
    for (const char* shell : {"bash", "zsh", "fish"}) {
      testing::RunOptions to_file;
      to_file.stdout_to = (work_ / shell).string();
      const RunResult r = testing::run_quip({"completion", shell}, to_file);
      ASSERT_EQ(r.status, 0) << describe({"completion", shell}, r);
    }
  }

  // The environment of the shells: quip on PATH, the test's QUIP_HOME.
  testing::RunOptions options() const {
    testing::RunOptions o;
    o.env = {{"PATH", fs::path(QUIP_BINARY).parent_path().string() + ":/usr/bin:/bin"},
             {"QUIP_HOME", home_.path().string()},
             {"QUIP_CONFIG", ""},
             {"HOME", work_.path().string()}};
    o.timeout_ms = 60'000;
    return o;
  }

  // The candidates bash's _quip gives for `words`, the last one being typed.
  Words bash(const Words& words) const {
    std::string array;
    for (const std::string& w : words) array += " '" + w + "'";
    const std::string script = "cd '" + (work_ / "in").string() + "' && source '" +
                               (work_ / "bash").string() + "' && COMP_WORDS=(" + array +
                               ") && COMP_CWORD=" + std::to_string(words.size() - 1) +
                               " && _quip && printf '%s\\n' \"${COMPREPLY[@]}\"";
    const RunResult r =
        testing::run_command({"/bin/bash", "--norc", "--noprofile", "-c", script}, options());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return sorted_lines(r.out);
  }

  // What fish's `complete -C LINE` offers, descriptions left out.
  Words fish(const std::string& line) const {
    const std::string script = "cd '" + (work_ / "in").string() + "'; source '" +
                               (work_ / "fish").string() + "'; complete -C '" + line + "'";
    const RunResult r =
        testing::run_command({"/usr/bin/fish", "--no-config", "-c", script}, options());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    Words out;
    for (const std::string& l : sorted_lines(r.out)) out.push_back(l.substr(0, l.find('\t')));
    return out;
  }

  static Words sorted_lines(const std::string& text) {
    Words out;
    size_t begin = 0;
    while (begin < text.size()) {
      const size_t end = text.find('\n', begin);
      const std::string line = text.substr(begin, end - begin);
      if (!line.empty()) out.push_back(line);
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  TempDir home_, work_;
  Words ids_;
};

TEST_F(CompletionShells, Bash) {
  EXPECT_EQ(bash({"quip", "sh"}), (Words{"show"}));
  EXPECT_EQ(bash({"quip", "log", "--"}), (Words{"--count", "--help", "--json"}));
  EXPECT_EQ(bash({"quip", "--cid", ""}), ids_);
  EXPECT_EQ(bash({"quip", "show", ""}), ids_);
  EXPECT_EQ(bash({"quip", "-m", "q"}), (Words{"qwen", "qwen-local.gguf"}));
  EXPECT_EQ(bash({"quip", "-m", ""}), (Words{"llama", "qwen", "qwen-local.gguf"}));
  EXPECT_EQ(bash({"quip", "export", "--format", "=", "j"}), (Words{"json"}));
  EXPECT_EQ(bash({"quip", "cache", ""}), (Words{"clear", "prune", "stats"}));
}

TEST_F(CompletionShells, Fish) {
  if (!fs::exists("/usr/bin/fish")) GTEST_SKIP() << "no fish (scripts/setup.sh installs it)";
  EXPECT_EQ(fish("quip sh"), (Words{"show"}));
  EXPECT_EQ(fish("quip log --"), (Words{"--count", "--help", "--json"}));
  EXPECT_EQ(fish("quip --cid "), ids_);
  EXPECT_EQ(fish("quip rm "), ids_);
  EXPECT_EQ(fish("quip -m q"), (Words{"qwen", "qwen-local.gguf"}));
  EXPECT_EQ(fish("quip export --format=j"), (Words{"--format=json"}));
}

// zsh completes only in its line editor: a zsh on a pseudo-terminal (zpty)
// is typed each line and a Tab, and a key bound to a widget of the test's
// own writes the edited line to a file.
TEST_F(CompletionShells, Zsh) {
  if (!fs::exists("/usr/bin/zsh")) GTEST_SKIP() << "no zsh (scripts/setup.sh installs it)";
  fs::create_directories(work_ / "fpath");
  fs::copy_file(work_ / "zsh", work_ / "fpath" / "_quip");
  const fs::path lines = work_ / "lines";
  const Words typed = {"quip sh",           "quip show --j",          "quip -m ll",
                       "quip -m qwen-",     "quip export --format=j", "quip cache st",
                       "quip rm " + ids_[0]};
  std::string script =
      "zmodload zsh/zpty\n"
      "zpty z 'zsh -f -i'\n"
      "zpty -w z 'PS1=; cd " +
      (work_ / "in").string() + "; fpath=(" + (work_ / "fpath").string() +
      " $fpath); autoload -U compinit; compinit -u -D'\n"
      "zpty -w z 'dump() { print -r -- \"$BUFFER\" >> " +
      lines.string() + "; BUFFER=; }; zle -N dump; bindkey \"^X\" dump'\n";
  for (const std::string& t : typed) script += "zpty -w -n z $'" + t + "\\t\\x18'\n";
  script += "for i in {1..300}; do [[ -f " + lines.string() + " && $(wc -l < " + lines.string() +
            ") -ge " + std::to_string(typed.size()) +
            " ]] && break; sleep 0.1; done\n"
            "zpty -d z\n";
  const RunResult r = testing::run_command({"/usr/bin/zsh", "-f", "-c", script}, options());
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream in(lines);
  Words edited;
  for (std::string l; std::getline(in, l);) edited.push_back(l);
  EXPECT_EQ(edited,
            (Words{"quip show ", "quip show --json ", "quip -m llama ", "quip -m qwen-local.gguf ",
                   "quip export --format=json ", "quip cache stats ", "quip rm " + ids_[0] + " "}));
}

}  // namespace
}  // namespace quip::cli
