// --help texts, the man page and the check of a parser against its table,
// all from the option tables of options.cpp.
#include <algorithm>
#include <set>
#include <sstream>

#include "cli/exit_status.h"
#include "cli/options.h"

#ifndef QUIP_PROJECT_VERSION
#error "QUIP_PROJECT_VERSION is set by CMakeLists.txt"
#endif

namespace quip::cli {

namespace {

constexpr size_t kWidth = 80;       // of a --help line
constexpr size_t kHelpColumn = 30;  // where an option's help starts

struct EnvironmentDoc {
  std::string_view name, help;
};

// The variables quip reads; the man page's ENVIRONMENT.
constexpr EnvironmentDoc kEnvironment[] = {
    {"QUIP_HOME", "keep the config, data and cache folders under this one folder"},
    {"QUIP_CONFIG", "the config file (--config wins over it)"},
    {"QUIP_SESSION",
     "the scope of -c/--continue (default: the terminal's session id, so that each terminal "
     "continues its own conversation)"},
    {"QUIP_BACKEND", "an OpenAI-compatible server to answer calls (as --backend)"},
    {"QUIP_API_KEY", "the API key sent to a remote backend"},
    {"QUIP_NO_SERVE", "set to 1: answer in this process even when a quip server runs (as --local)"},
    {"QUIP_SOCKET", "the Unix socket of quip serve"},
    {"QUIP_KERNELS", "ref, avx2 or avx512: force a set of kernels instead of the CPU's best"},
    {"QUIP_MAX_INPUT", "the limit on prompt input (default 64MiB)"},
    {"NO_COLOR", "when set, nothing on a terminal is coloured"},
    {"XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME, XDG_RUNTIME_DIR",
     "where the config, the conversations, the cache and the server's socket go"},
};

constexpr EnvironmentDoc kFiles[] = {
    {"~/.config/quip/config.toml",
     "the default model, model aliases ([models.NAME] path = ...) and default settings"},
    {"~/.local/share/quip/quip.db", "the conversations (SQLite)"},
    {"~/.cache/quip/kv/", "the prefix cache"},
};

constexpr std::string_view kExitStatus =
    "0 success (also when the reader of the output went away), 1 runtime failure (also: the "
    "answer was printed but not recorded), 2 usage, config or input error (and a template's "
    "raise_exception), 3 unusable model or data file, 130 interrupted (143 by SIGTERM, 129 by "
    "SIGHUP).";

// `text` broken into lines of at most `width` columns (longer words stay whole).
std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream words{std::string(text)};
  std::string word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += line.empty() ? "" : " ";
    line += word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Paragraphs (separated by blank lines) wrapped to the help's width.
void put_paragraphs(std::ostream& out, std::string_view text, size_t indent) {
  size_t begin = 0;
  bool first = true;
  while (begin <= text.size()) {
    size_t end = text.find("\n\n", begin);
    if (end == std::string_view::npos) end = text.size();
    if (!first) out << '\n';
    first = false;
    for (const std::string& l : wrap(text.substr(begin, end - begin), kWidth - indent)) {
      out << std::string(indent, ' ') << l << '\n';
    }
    begin = end + 2;
  }
}

// "  LEFT    help that wraps under itself", the help at `column`.
void put_row(std::ostream& out, const std::string& left, std::string_view help,
             size_t column = kHelpColumn) {
  std::string row = "  " + left;
  const std::vector<std::string> lines = wrap(help, kWidth - column);
  if (row.size() + 2 > column && !lines.empty()) {
    out << row << '\n';
    row.clear();
  }
  for (const std::string& l : lines) {
    row.resize(column, ' ');
    out << row << l << '\n';
    row.clear();
  }
  if (lines.empty()) out << row << '\n';
}

std::string left_of(const OptionDoc& o) {
  if (o.positional()) return o.names + (o.repeats ? "..." : "");
  return o.value.empty() ? o.names : o.names + " " + o.value;
}

std::string full_name(const CommandDoc& doc) {
  return doc.name.empty() ? "quip" : "quip " + doc.name;
}

}  // namespace

std::string help_text(const CommandDoc& doc) {
  std::ostringstream out;
  const bool top = doc.name.empty();
  if (top) {
    out << "quip: " << doc.summary << "\n\nUsage:\n";
    for (const UsageLine& u : doc.usage) put_row(out, "quip " + u.synopsis, u.what, 31);
    out << "\nCommands:\n";
    for (const CommandDoc& c : command_docs()) {
      if (!c.name.empty()) put_row(out, c.name, c.summary, 14);
    }
  } else {
    put_paragraphs(out, doc.description, 0);
    out << '\n';
    for (const UsageLine& u : doc.usage) out << "Usage: quip " << u.synopsis << '\n';
  }
  bool any_positional = false;
  for (const OptionDoc& o : doc.options) any_positional |= o.positional() && !o.hidden;
  if (any_positional && !top) {
    out << "\nPositionals:\n";
    for (const OptionDoc& o : doc.options) {
      if (o.positional() && !o.hidden) put_row(out, left_of(o), o.help);
    }
  }
  out << "\nOptions:\n";
  put_row(out, "-h,--help", "print this help and exit");
  for (const OptionDoc& o : doc.options) {
    if (!o.positional() && !o.hidden) put_row(out, left_of(o), o.help);
  }
  if (!doc.actions.empty()) {
    out << "\nActions:\n";
    for (const CommandDoc& a : doc.actions) {
      put_row(out, a.name.substr(a.name.rfind(' ') + 1), a.summary);
    }
    out << "\nRun '" << full_name(doc) << " ACTION --help' for the options of an action.\n";
  }
  if (top) {
    out << "\nRun 'quip COMMAND --help' for the options of a command, 'man quip' for all.\n"
           "Config: ~/.config/quip/config.toml (see README.md); QUIP_HOME moves config,\n"
           "data and cache under one folder.\n"
           "QUIP_MAX_INPUT sets the prompt input limit (default 64MiB).\n\n";
    const std::string status = "Exit status: " + std::string(kExitStatus);
    for (const std::string& l : wrap(status, kWidth)) out << l << '\n';
  }
  return out.str();
}

namespace {

// Text for roff: backslashes, hyphens (minus signs in option names; man(7)
// asks for \- wherever a hyphen must stay one) and a line that would start
// with a control character.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char ch : text) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    line_start = ch == '\n';
    if (ch == '\\') {
      out += "\\e";
    } else if (ch == '-') {
      out += "\\-";
    } else {
      out += ch;
    }
  }
  return out;
}

// Paragraphs of text, one .PP between two.
void put_roff_paragraphs(std::ostream& out, std::string_view text) {
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find("\n\n", begin);
    if (end == std::string_view::npos) end = text.size();
    if (begin != 0) out << ".PP\n";
    std::string para(text.substr(begin, end - begin));
    std::replace(para.begin(), para.end(), '\n', ' ');
    out << roff(para) << '\n';
    begin = end + 2;
  }
}

// ".TP" and "-m, --model MODEL" in bold and italics, then its help.
void put_roff_option(std::ostream& out, const OptionDoc& o) {
  out << ".TP\n";
  if (o.positional()) {
    out << "\\fI" << roff(o.names) << "\\fR" << (o.repeats ? "..." : "") << '\n';
  } else {
    std::string tag;
    for (const std::string& name : o.each_name()) {
      tag += tag.empty() ? "" : ", ";
      tag += "\\fB" + roff(name) + "\\fR";
    }
    if (!o.value.empty()) tag += " \\fI" + roff(o.value) + "\\fR";
    out << tag << '\n';
  }
  out << roff(o.help) << ".\n";
}

void put_roff_command(std::ostream& out, const CommandDoc& c) {
  for (const UsageLine& u : c.usage) {
    out << ".SS \"" << roff("quip " + u.synopsis) << "\"\n";
  }
  put_roff_paragraphs(out, c.description);
  for (const OptionDoc& o : c.options) {
    if (!o.hidden) put_roff_option(out, o);
  }
}

}  // namespace

std::string man_page() {
  const CommandDoc& top = command_docs().front();
  std::ostringstream out;
  // .nh: no hyphenation, which would break option names and paths.
  out << ".TH QUIP 1 \"\" \"quip " << QUIP_PROJECT_VERSION << "\" \"User Commands\"\n"
      << ".nh\n"
      << ".SH NAME\nquip \\- " << roff(top.summary) << '\n'
      << ".SH SYNOPSIS\n";
  bool first = true;
  for (const UsageLine& u : top.usage) {
    if (!first) out << ".br\n";
    first = false;
    out << ".B quip\n" << roff(u.synopsis) << '\n';
  }
  out << ".SH DESCRIPTION\n";
  put_roff_paragraphs(out, top.description);
  out << ".PP\nThe options below are those of a prompt; each command under COMMANDS has its "
         "own.\n"
      << ".SH OPTIONS\n";
  for (const OptionDoc& o : top.options) {
    if (!o.hidden) put_roff_option(out, o);
  }
  put_roff_option(out, flag_doc("-h,--help", "print the help of quip or of a command and exit"));
  put_roff_option(out, flag_doc("-V,--version",
                                "print the version, the git commit, the build type and the "
                                "kernels this CPU selects"));
  out << ".SH COMMANDS\n";
  for (const CommandDoc& c : command_docs()) {
    if (c.name.empty()) continue;
    put_roff_command(out, c);
    for (const CommandDoc& a : c.actions) put_roff_command(out, a);
  }
  out << ".SH ENVIRONMENT\n";
  for (const EnvironmentDoc& e : kEnvironment) {
    out << ".TP\n.B " << roff(e.name) << '\n' << roff(e.help) << ".\n";
  }
  out << ".SH FILES\n";
  for (const EnvironmentDoc& f : kFiles) {
    out << ".TP\n.I " << roff(f.name) << '\n' << roff(f.help) << ".\n";
  }
  out << ".PP\nXDG_CONFIG_HOME, XDG_DATA_HOME and XDG_CACHE_HOME move these folders; QUIP_HOME "
         "puts all three under one.\n"
      << ".SH \"EXIT STATUS\"\n"
      << roff(kExitStatus) << '\n'
      << ".SH EXAMPLES\n.nf\n"
      << roff(
             "quip -m qwen 'What is 1+1?'\n"
             "quip -c 'Not that trivial, is it?'\n"
             "git diff | quip 'Write a commit message for this change.'\n"
             "quip log -n 5\n")
      << ".fi\n";
  return out.str();
}

namespace {

struct ParserOption {
  std::set<std::string> names;  // "-m", "--model"; a positional argument: "ID"
  bool takes_value = false;
  bool positional = false;
};

std::vector<ParserOption> parser_options(const CLI::App& app) {
  std::vector<ParserOption> out;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_name() == "--help") continue;
    ParserOption p;
    p.positional = o->get_positional();
    if (p.positional) {
      p.names.insert(o->get_name());
    } else {
      for (const std::string& l : o->get_lnames()) p.names.insert("--" + l);
      for (const std::string& s : o->get_snames()) p.names.insert("-" + s);
    }
    p.takes_value = o->get_items_expected_max() > 0;
    out.push_back(std::move(p));
  }
  return out;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

std::vector<std::string> table_mismatches(const CLI::App& app, const CommandDoc& doc) {
  std::vector<std::string> out;
  const std::string who = "'" + full_name(doc) + "'";
  const std::vector<ParserOption> parsed = parser_options(app);
  std::vector<bool> documented(doc.options.size(), false);
  for (const ParserOption& p : parsed) {
    bool found = false;
    for (size_t i = 0; i < doc.options.size(); ++i) {
      const OptionDoc& d = doc.options[i];
      const std::vector<std::string> names = d.each_name();
      if (std::set<std::string>(names.begin(), names.end()) != p.names) continue;
      found = documented[i] = true;
      if (!p.positional && p.takes_value != !d.value.empty()) {
        out.push_back(who + ": " + joined(p.names) + (p.takes_value ? " takes a" : " takes no") +
                      " value in its parser, but" + (d.value.empty() ? " none" : " one") +
                      " in its table");
      }
    }
    if (!found) {
      out.push_back(who + " accepts " + joined(p.names) + ", which its option table lacks");
    }
  }
  for (size_t i = 0; i < doc.options.size(); ++i) {
    if (!documented[i]) {
      out.push_back("the option table of " + who + " has " + doc.options[i].names +
                    ", which its parser does not accept");
    }
  }
  const std::vector<const CLI::App*> subs =
      app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* sub : subs) {
    const std::string name = doc.name + " " + sub->get_name();
    const auto action = std::find_if(doc.actions.begin(), doc.actions.end(),
                                     [&](const CommandDoc& a) { return a.name == name; });
    if (action == doc.actions.end()) {
      out.push_back(who + " has the action " + sub->get_name() + ", which its option table lacks");
      continue;
    }
    const std::vector<std::string> more = table_mismatches(*sub, *action);
    out.insert(out.end(), more.begin(), more.end());
  }
  for (const CommandDoc& a : doc.actions) {
    const std::string_view name = std::string_view(a.name).substr(a.name.rfind(' ') + 1);
    if (std::none_of(subs.begin(), subs.end(),
                     [&](const CLI::App* s) { return s->get_name() == name; })) {
      out.push_back("the option table of " + who + " has the action " + std::string(name) +
                    ", which its parser lacks");
    }
  }
  return out;
}

int print_command_help(const CLI::App& app, std::ostream& out, std::ostream& err) {
  std::string name = app.get_name();
  name = name == "quip" ? "" : name.starts_with("quip ") ? name.substr(5) : name;
  const CommandDoc* root = find_command_doc(name);
  if (root == nullptr) {
    out << app.help();
    err << app.get_name() << ": internal error: this command has no option table\n";
    return kExitFailure;
  }
  // `quip cache stats --help`: the action's help.
  const CommandDoc* shown = root;
  for (const CLI::App* a = &app;;) {
    const std::vector<CLI::App*> chosen = a->get_subcommands();
    if (chosen.empty()) break;
    a = chosen.front();
    name += " " + a->get_name();
    if (const CommandDoc* action = find_command_doc(name)) shown = action;
  }
  out << help_text(*shown);
  const std::vector<std::string> mismatches = table_mismatches(app, *root);
  for (const std::string& m : mismatches) err << "quip: internal error: " << m << '\n';
  return mismatches.empty() ? kExitOk : kExitFailure;
}

bool commands_match(const std::vector<std::string_view>& dispatched, std::ostream& err) {
  bool same = true;
  for (std::string_view name : dispatched) {
    const CommandDoc* doc = find_command_doc(name);
    if (doc == nullptr || name.find(' ') != std::string_view::npos) {
      err << "quip: internal error: the command '" << name << "' has no option table\n";
      same = false;
    }
  }
  for (const CommandDoc& c : command_docs()) {
    if (!c.name.empty() &&
        std::find(dispatched.begin(), dispatched.end(), c.name) == dispatched.end()) {
      err << "quip: internal error: the option table of '" << c.name << "' has no command\n";
      same = false;
    }
  }
  return same;
}

int print_man_page(const std::vector<std::string_view>& dispatched, std::ostream& out,
                   std::ostream& err) {
  out << man_page();
  return commands_match(dispatched, err) ? kExitOk : kExitFailure;
}

}  // namespace quip::cli
