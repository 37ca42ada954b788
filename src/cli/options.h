// The documentation of quip's command line, in one place: for each command
// its synopsis, its description and every option it accepts, with what a
// shell completes for the option's value. `--help`, the man page (`quip
// --man`) and the shell completions (`quip completion`) are all printed from
// these tables.
//
// The parsers stay where they are (CLI11, in each command's own file); at
// every --help, parse_args() compares the parser it holds with the table
// (table_mismatches()) and reports a difference as an internal error, so a
// test that asks every command for --help keeps the two from drifting. The
// help strings the parsers still give CLI11 are not printed anywhere.
//
// A new command needs an entry here (options.cpp) as well as in main.cpp's
// list: until it has one, quip --help and quip --man report it as an
// internal error, and the build, which writes the man page, fails.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace quip::cli {

// What a shell offers for an option's value or a positional argument.
enum class Completes {
  kNothing,       // free text or a number
  kFile,          // a file name
  kModel,         // a config alias or a model file
  kConversation,  // a stored conversation's id
  kChoice,        // one of OptionDoc::choices
};

struct OptionDoc {
  std::string names;  // "-m,--model"; a positional argument: its name, "ID"
  std::string value;  // what an option's value is called, "MODEL"; empty: a flag
  std::string help;   // one sentence, no trailing period
  Completes completes = Completes::kNothing;
  std::vector<std::string> choices;  // for Completes::kChoice
  bool repeats = false;              // a positional argument that takes every remaining word
  bool hidden = false;  // accepted but internal: not in --help, the man page or completions

  bool positional() const { return !names.starts_with('-'); }
  // "-m", "--model": each name, as typed.
  std::vector<std::string> each_name() const;
};

// A flag, an option with a value, and a positional argument.
OptionDoc flag_doc(std::string names, std::string help);
OptionDoc option_doc(std::string names, std::string value, std::string help,
                     Completes completes = Completes::kNothing);
OptionDoc choice_doc(std::string names, std::string value, std::vector<std::string> choices,
                     std::string help);
OptionDoc positional_doc(std::string name, std::string help,
                         Completes completes = Completes::kNothing, bool repeats = false);

struct UsageLine {
  std::string synopsis;  // after "quip ": "[OPTIONS] PROMPT..."
  std::string what;      // empty when the command has one usage
};

struct CommandDoc {
  std::string name;     // "" for `quip PROMPT` itself; "show"; "cache stats"
  std::string summary;  // one line for quip --help's list of commands
  std::vector<UsageLine> usage;
  std::string description;          // paragraphs, separated by blank lines
  std::vector<OptionDoc> options;   // positional arguments and options, --help aside
  std::vector<CommandDoc> actions;  // the subcommands of a command (`quip cache stats`)
};

// `quip PROMPT` first, then every command in the order quip --help lists them.
const std::vector<CommandDoc>& command_docs();

// The table of "show" or "cache stats"; "" is `quip PROMPT`. Null when none.
const CommandDoc* find_command_doc(std::string_view name);

// --help of a command whose parser is `app` (its name "quip show", and the
// action parsed, if any): the table's text, and an internal error on `err`
// (exit status 1) for each difference between the parser and the table.
int print_command_help(const CLI::App& app, std::ostream& out, std::ostream& err);

// Where `app` (with its subcommands) and `doc` disagree: an option or an
// argument one has and the other lacks, or one that takes a value in one and
// is a flag in the other. Empty when they agree.
std::vector<std::string> table_mismatches(const CLI::App& app, const CommandDoc& doc);

// The --help text of one command (of `quip PROMPT`: quip --help).
std::string help_text(const CommandDoc& doc);

// quip(1), in roff (man(7) macros).
std::string man_page();

// Whether the commands main() dispatches are those of the tables; one line
// on `err` for each command without a table or table without a command.
bool commands_match(const std::vector<std::string_view>& dispatched, std::ostream& err);

// `quip --man`: man_page(), and commands_match() (exit status 1 when not).
int print_man_page(const std::vector<std::string_view>& dispatched, std::ostream& out,
                   std::ostream& err);

}  // namespace quip::cli
