// The option tables (cli/options.h) against the commands' parsers, and the
// --help texts and the man page made from them.
#include "cli/options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/run_quip.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using testing::describe;
using testing::RunResult;
using testing::TempDir;

// Every table: the commands and their actions.
std::vector<const CommandDoc*> all_docs() {
  std::vector<const CommandDoc*> out;
  for (const CommandDoc& c : command_docs()) {
    out.push_back(&c);
    for (const CommandDoc& a : c.actions) out.push_back(&a);
  }
  return out;
}

std::vector<std::string> words_of(const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(name);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool has_line_starting(const std::string& text, const std::string& start) {
  return text.starts_with(start) || text.find("\n" + start) != std::string::npos;
}

// --help goes through each command's own parser, which parse_args compares
// with the command's table: a difference is an internal error on stderr
// (see MismatchesAreReported for that check). So status 0 with nothing on
// stderr says the parser and the table agree, and the text shows each
// option of the table.
TEST(OptionTables, EveryCommandsHelpAgreesWithItsParser) {
  for (const CommandDoc* doc : all_docs()) {
    std::vector<std::string> args = words_of(doc->name);
    // `quip --help` is main's; a prompt's option before it reaches the parser.
    if (doc->name.empty()) args.push_back("--json");
    args.push_back("--help");
    const RunResult r = testing::run_quip(args);
    EXPECT_EQ(r.status, 0) << describe(args, r);
    EXPECT_EQ(r.err, "") << describe(args, r);
    if (!doc->name.empty()) {
      EXPECT_TRUE(has_line_starting(r.out, "Usage: quip " + doc->name)) << describe(args, r);
    }
    for (const OptionDoc& o : doc->options) {
      if (o.hidden) continue;
      for (const std::string& name : o.each_name()) {
        EXPECT_NE(r.out.find(name), std::string::npos) << name << " missing in\n"
                                                       << describe(args, r);
      }
    }
  }
}

TEST(OptionTables, MainHelpListsEveryCommand) {
  const RunResult r = testing::run_quip({"--help"});
  EXPECT_EQ(r.status, 0) << describe({"--help"}, r);
  EXPECT_EQ(r.err, "") << describe({"--help"}, r);  // main's commands are the tables'
  for (const char* name : {"bench", "cache", "completion", "export", "inspect", "log", "models",
                           "ps", "pull", "rm", "serve", "show", "template", "tokenize"}) {
    EXPECT_TRUE(has_line_starting(r.out, std::string("  ") + name + " ")) << name << '\n' << r.out;
  }
  size_t commands = 0;
  for (const CommandDoc& c : command_docs()) commands += c.name.empty() ? 0 : 1;
  EXPECT_EQ(commands, 14u);
}

TEST(OptionTables, MismatchesAreReported) {
  const CommandDoc* show = find_command_doc("show");
  ASSERT_NE(show, nullptr);
  std::string id;
  bool json = false;
  std::optional<std::string> extra;
  {
    CLI::App app{"", "quip show"};
    app.add_option("ID", id);
    app.add_flag("--json", json);
    EXPECT_TRUE(table_mismatches(app, *show).empty());
    app.add_option("-x,--extra", extra);
    const std::vector<std::string> m = table_mismatches(app, *show);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0], "'quip show' accepts --extra,-x, which its option table lacks");
  }
  {
    CLI::App app{"", "quip show"};
    app.add_option("ID", id);
    const std::vector<std::string> m = table_mismatches(app, *show);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0], "the option table of 'quip show' has --json, which its parser does not accept");
  }
  {
    CLI::App app{"", "quip show"};
    app.add_option("ID", id);
    app.add_option("--json", extra);
    const std::vector<std::string> m = table_mismatches(app, *show);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0], "'quip show': --json takes a value in its parser, but none in its table");
  }
  const CommandDoc* cache = find_command_doc("cache");
  ASSERT_NE(cache, nullptr);
  {
    CLI::App app{"", "quip cache"};
    app.add_option("--config", extra);
    app.add_subcommand("stats")->add_flag("--json", json);
    app.add_subcommand("clear");
    app.add_subcommand("purge");
    const std::vector<std::string> m = table_mismatches(app, *cache);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0], "'quip cache' has the action purge, which its option table lacks");
    EXPECT_EQ(m[1],
              "the option table of 'quip cache' has the action prune, which its parser lacks");
  }
}

TEST(OptionTables, CommandsOfMainAgainstTheTables) {
  std::vector<std::string_view> names;
  for (const CommandDoc& c : command_docs()) {
    if (!c.name.empty()) names.push_back(c.name);
  }
  std::ostringstream err;
  EXPECT_TRUE(commands_match(names, err));
  EXPECT_EQ(err.str(), "");
  names.push_back("frobnicate");
  names.erase(std::find(names.begin(), names.end(), "log"));
  EXPECT_FALSE(commands_match(names, err));
  EXPECT_EQ(err.str(),
            "quip: internal error: the command 'frobnicate' has no option table\n"
            "quip: internal error: the option table of 'log' has no command\n");
}

TEST(OptionTables, HelpLinesFitEightyColumns) {
  for (const CommandDoc* doc : all_docs()) {
    std::istringstream lines(help_text(*doc));
    std::string line;
    while (std::getline(lines, line)) {
      EXPECT_LE(line.size(), 80u) << doc->name << ": " << line;
    }
  }
}

// ---- quip(1) -------------------------------------------------------------

class ManPage : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RunOptions to_file;
    to_file.stdout_to = page().string();
    const RunResult r = testing::run_quip({"--man"}, to_file);
    ASSERT_EQ(r.status, 0) << describe({"--man"}, r);
    ASSERT_EQ(r.err, "");
  }
  fs::path page() const { return dir_ / "quip.1"; }

  TempDir dir_;
};

TEST_F(ManPage, GroffAndManFindNothingToWarnAbout) {
  if (!fs::exists("/usr/bin/groff")) GTEST_SKIP() << "no groff (scripts/setup.sh installs it)";
  const RunResult g =
      testing::run_command({"/usr/bin/groff", "-ww", "-man", "-Tutf8", "-z", page().string()});
  EXPECT_EQ(g.status, 0) << g.err;
  EXPECT_EQ(g.err, "");
  if (!fs::exists("/usr/bin/man")) GTEST_SKIP() << "no man (scripts/setup.sh installs man-db)";
  testing::RunOptions no_pager;
  no_pager.env = {{"MANPAGER", "cat"}, {"PAGER", "cat"}};
  const RunResult m =
      testing::run_command({"/usr/bin/man", "--warnings", "-l", page().string()}, no_pager);
  EXPECT_EQ(m.status, 0) << m.err;
  EXPECT_EQ(m.err, "");
  EXPECT_NE(m.out.find("quip - a local LLM for the Unix shell"), std::string::npos) << m.out;
}

// The page in plain text: what groff prints for a reader, without the
// bold and underline of a terminal.
std::string rendered(const fs::path& page) {
  const RunResult r = testing::run_command(
      {"/usr/bin/groff", "-man", "-Tutf8", "-P-cbou", "-rLL=200n", page.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

// `text` with each run of spaces and newlines made one space: lines break
// and justify where they do.
std::string flattened(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

TEST_F(ManPage, CoversEveryCommandAndOption) {
  if (!fs::exists("/usr/bin/groff")) GTEST_SKIP() << "no groff (scripts/setup.sh installs it)";
  std::string text = rendered(page());
  // groff writes the minus of "\-" as U+2212 in some setups: read it as "-".
  for (size_t at; (at = text.find("\u2212")) != std::string::npos;) text.replace(at, 3, "-");
  const std::string flat = flattened(text);
  for (const std::string section :
       {"SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "ENVIRONMENT", "FILES", "EXIT STATUS"}) {
    EXPECT_TRUE(has_line_starting(text, section)) << section;
  }
  for (const CommandDoc* doc : all_docs()) {
    for (const UsageLine& u : doc->usage) {
      EXPECT_NE(text.find("quip " + u.synopsis), std::string::npos) << u.synopsis;
    }
    for (const OptionDoc& o : doc->options) {
      if (o.hidden) continue;
      for (const std::string& name : o.each_name()) {
        EXPECT_NE(text.find(name), std::string::npos) << doc->name << ' ' << name;
      }
      EXPECT_NE(flat.find(flattened(o.help)), std::string::npos) << doc->name << ' ' << o.help;
    }
  }
  EXPECT_NE(text.find("-V, --version"), std::string::npos);
  EXPECT_EQ(text.find("--complete"), std::string::npos);  // internal
}

}  // namespace
}  // namespace quip::cli
