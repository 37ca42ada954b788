#include "cli/conversations.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "store/store.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using store::ConversationSummary;
using store::Store;
using store::TurnRecord;

constexpr int kDefaultLogCount = 20;

// The database path, or nullopt after printing why there is none.
std::optional<fs::path> database_path(std::ostream& err) {
  auto path = store::default_database_path();
  if (!path) {
    err << "quip: no folder for the conversation database: set QUIP_HOME, XDG_DATA_HOME or "
           "HOME\n";
  }
  return path;
}

// An existing database opened for reading into `db`. Returns an exit status
// when the command must stop (the error printed); `db` stays empty when
// there is no database yet, which reads as no conversations.
std::optional<int> open_for_reading(std::optional<Store>& db, std::ostream& err) {
  const auto path = database_path(err);
  if (!path) return kExitFailure;
  std::error_code ec;
  // An error here (a folder that cannot be searched) is for SQLite to report.
  if (!fs::exists(*path, ec) && !ec) return std::nullopt;
  auto opened = Store::open_read_only(*path);
  if (!opened) {
    print_error(err, "quip", opened.error().message);
    return kExitBadData;
  }
  db.emplace(std::move(*opened));
  return std::nullopt;
}

// A conversation id as typed: a positive decimal integer, nothing else.
std::optional<int64_t> parse_id(const std::string& text) {
  int64_t id = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, id);
  if (text.empty() || ec != std::errc() || p != end || id <= 0) return std::nullopt;
  return id;
}

// Reads ID (the command's one positional argument) into `id`; returns an
// exit status when the command must stop.
std::optional<int> id_argument(const std::string& command, const std::string& text, int64_t& id,
                               std::ostream& err) {
  auto parsed = parse_id(text);
  if (!parsed) {
    err << "quip " << command << ": invalid conversation id '" << printable(text)
        << "': expected a positive integer (see 'quip log')\n";
    return kExitUsage;
  }
  id = *parsed;
  return std::nullopt;
}

std::string no_conversation(int64_t id) {
  return "quip: no conversation " + std::to_string(id) + "\n";
}

// Local time, to the minute, as people read dates in a listing.
std::string format_time(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return "?";
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm) == 0) return "?";
  return buf;
}

// The file name of a model path, or a remote backend's whole "URL#MODEL"
// (cli/remote_call.h), printable on one line (stored data: any bytes may be
// there).
std::string model_name(const std::string& model_path) {
  if (model_path.starts_with("http://") || model_path.starts_with("https://")) {
    return printable(model_path, 200);
  }
  return printable(fs::path(model_path).filename().string(), 200);
}

// A stored title, on one line.
std::string title_text(const std::string& title) {
  return printable(title, 4096);
}

// A JSON field stored as text: embedded as JSON when it parses, else kept as
// the string it is (a caller may have stored anything).
Json embedded_json(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Json(text);
  return j;
}

Json forked_from_json(const ConversationSummary& c) {
  if (!c.forked_from) return nullptr;
  return Json{{"conversation", c.forked_from->first}, {"turn", c.forked_from->second}};
}

Json summary_json(const ConversationSummary& c) {
  return Json{{"id", c.id},
              {"created_ms", c.created_ms},
              {"updated_ms", c.updated_ms},
              {"turns", c.turns},
              {"title", c.title},
              {"model_path", c.model_path},
              {"session", c.session},
              {"forked_from", forked_from_json(c)}};
}

// Conversations forked from one: (conversation, the turn they follow).
using Branches = std::vector<std::pair<int64_t, int>>;

Json conversation_json(const ConversationSummary& c, const std::vector<TurnRecord>& turns,
                       const Branches& branches) {
  Json j = summary_json(c);
  j["branches"] = Json::array();
  for (const auto& [id, turn] : branches) {
    j["branches"].push_back(Json{{"conversation", id}, {"turn", turn}});
  }
  j["turns"] = Json::array();
  for (const TurnRecord& t : turns) {
    j["turns"].push_back(Json{{"turn", t.turn},
                              {"parent_turn", t.parent_turn},
                              {"time_ms", t.time_ms},
                              {"model_path", t.model_path},
                              {"model_fingerprint", t.model_fingerprint},
                              {"sampler", embedded_json(t.sampler_json)},
                              {"messages", embedded_json(t.messages_json)},
                              {"answer", t.answer},
                              {"reasoning", t.reasoning},
                              {"interrupted", t.interrupted},
                              {"prompt_tokens", t.prompt_tokens},
                              {"answer_tokens", t.answer_tokens},
                              {"timings", embedded_json(t.timings_json)},
                              {"session", t.session}});
  }
  return j;
}

// Stored text may hold bytes that are not UTF-8 (an answer cut inside a
// character): those print as U+FFFD rather than failing the dump.
// The dump escapes C0 controls; terminal_safe_json escapes DEL and C1 too.
void print_json(const Json& j, std::ostream& out) {
  out << terminal_safe_json(j.dump(-1, ' ', false, Json::error_handler_t::replace)) << '\n';
}

// The messages of a turn as (role, text); a messages field that is not the
// expected JSON shows as its raw text, so nothing stored is hidden.
std::vector<store::MessageText> messages_of(const TurnRecord& t) {
  if (auto m = store::parse_messages(t.messages_json)) return *m;
  return {{"messages", t.messages_json}};
}

std::string forked_note(const ConversationSummary& c) {
  if (!c.forked_from) return "";
  return ", forked from conversation " + std::to_string(c.forked_from->first) + " at turn " +
         std::to_string(c.forked_from->second);
}

// A turn's reasoning folded to one line below its answer: its size and its
// first line, cut at 80 bytes (at a character's start).
std::string folded_reasoning(std::string_view reasoning) {
  size_t lines = 1;
  for (char c : reasoning) lines += c == '\n' ? 1 : 0;
  const size_t text = reasoning.find_first_not_of(" \n\r\t");
  std::string_view first = text == std::string_view::npos ? "" : reasoning.substr(text);
  first = first.substr(0, first.find('\n'));
  bool cut = false;
  if (first.size() > 80) {
    size_t end = 80;
    while (end > 0 && (static_cast<unsigned char>(first[end]) & 0xC0) == 0x80) --end;
    first = first.substr(0, end);
    cut = true;
  }
  return "reasoning (" + std::to_string(lines) + (lines == 1 ? " line" : " lines") + ", " +
         std::to_string(reasoning.size()) + " bytes): " + printable(std::string(first)) +
         (cut ? "..." : "");
}

// A branch is a conversation of its own (a fork with --cid ID@N, or a turn
// recorded while its conversation moved on): it holds copies of the turns
// it follows, and its parent lists it after the turn where it departs.
void print_conversation(const ConversationSummary& c, const std::vector<TurnRecord>& turns,
                        const Branches& branches, std::ostream& out) {
  // Stored text is shown, never obeyed: control characters (ESC, OSC, BEL,
  // CR, BS, C1) and bytes that are not UTF-8 are escaped; lines and tabs stay.
  out << "conversation " << c.id << (c.title.empty() ? "" : ": " + title_text(c.title)) << '\n';
  out << "started " << format_time(c.created_ms) << ", " << c.turns
      << (c.turns == 1 ? " turn" : " turns") << forked_note(c) << '\n';
  for (const TurnRecord& t : turns) {
    out << "\n--- turn " << t.turn << ", " << format_time(t.time_ms) << ", "
        << model_name(t.model_path) << (t.interrupted ? " (interrupted)" : "") << '\n';
    for (const store::MessageText& m : messages_of(t)) {
      out << (m.role.empty() ? "message" : printable(m.role)) << ": " << printable_lines(m.text)
          << '\n';
    }
    out << "assistant: " << printable_lines(t.answer) << (t.interrupted ? " [interrupted]" : "")
        << '\n';
    if (!t.reasoning.empty()) out << folded_reasoning(t.reasoning) << '\n';
    std::string after;
    int n = 0;
    for (const auto& [id, turn] : branches) {
      if (turn != t.turn) continue;
      after += (n++ == 0 ? "" : ", ") + std::to_string(id);
    }
    if (n > 0) {
      out << "(branched after turn " << t.turn << " into conversation" << (n > 1 ? "s " : " ")
          << after << "; see quip show ID)\n";
    }
  }
}

std::string heading(std::string role) {
  if (role.empty()) return "Message";
  role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
  return printable(role);
}

void print_markdown(const ConversationSummary& c, const std::vector<TurnRecord>& turns,
                    std::ostream& out) {
  // As in show: stored text is escaped (the JSON export keeps it exact).
  out << "# " << (c.title.empty() ? "Conversation " + std::to_string(c.id) : title_text(c.title))
      << "\n\n";
  const std::string first_model = turns.empty() ? c.model_path : turns.front().model_path;
  out << "*Conversation " << c.id << ", started " << format_time(c.created_ms) << " with "
      << model_name(first_model) << forked_note(c) << ".*\n";
  std::string model = first_model;
  for (const TurnRecord& t : turns) {
    if (t.model_path != model) {
      model = t.model_path;
      out << "\n*Model: " << model_name(model) << "*\n";
    }
    for (const store::MessageText& m : messages_of(t)) {
      out << "\n## " << heading(m.role) << "\n\n" << printable_lines(m.text) << '\n';
    }
    out << "\n## Assistant\n\n" << printable_lines(t.answer) << '\n';
    if (!t.reasoning.empty()) {
      out << "\n<details><summary>Reasoning</summary>\n\n"
          << printable_lines(t.reasoning) << "\n\n</details>\n";
    }
    if (t.interrupted) out << "\n*(interrupted)*\n";
  }
}

// show and export: one conversation, as text, Markdown or JSON.
enum class Format { kText, kMarkdown, kJson };

int print_one(const std::string& command, const std::string& id_text, Format format,
              std::ostream& out, std::ostream& err) {
  int64_t id = 0;
  if (auto status = id_argument(command, id_text, id, err)) return *status;
  std::optional<Store> db;
  if (auto status = open_for_reading(db, err)) return *status;
  if (!db) {
    err << no_conversation(id);
    return kExitFailure;
  }
  auto summary = db->find(id);
  if (!summary) {
    print_error(err, "quip", summary.error().message);
    return kExitFailure;
  }
  if (!*summary) {
    err << no_conversation(id);
    return kExitFailure;
  }
  auto turns = db->turns(id);
  if (!turns) {
    print_error(err, "quip", turns.error().message);
    return kExitFailure;
  }
  Branches branches;
  if (format != Format::kMarkdown) {
    auto forks = db->forks_of(id);
    if (!forks) {
      print_error(err, "quip", forks.error().message);
      return kExitFailure;
    }
    branches = std::move(*forks);
  }
  switch (format) {
    case Format::kText: print_conversation(**summary, *turns, branches, out); break;
    case Format::kMarkdown: print_markdown(**summary, *turns, out); break;
    case Format::kJson: print_json(conversation_json(**summary, *turns, branches), out); break;
  }
  return kExitOk;
}

}  // namespace

int log_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"List the most recent conversations, newest first: id, date, turns, model, title.",
               "quip log"};
  int count = kDefaultLogCount;
  bool json = false;
  app.add_option("-n,--count", count, "how many to list (0: all)")->capture_default_str();
  app.add_flag("--json", json, "print a JSON array of objects instead");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  if (count < 0) {
    print_error(err, "quip log",
                "--count " + std::to_string(count) + " is not in [0, " +
                    std::to_string(std::numeric_limits<int>::max()) + "] (0: all)");
    return kExitUsage;
  }

  std::optional<Store> db;
  if (auto status = open_for_reading(db, err)) return *status;
  std::vector<ConversationSummary> list;
  if (db) {
    auto listed = db->list(count);
    if (!listed) {
      print_error(err, "quip", listed.error().message);
      return kExitFailure;
    }
    list = std::move(*listed);
  }
  if (json) {
    Json j = Json::array();
    for (const ConversationSummary& c : list) j.push_back(summary_json(c));
    print_json(j, out);
    return kExitOk;
  }
  // Columns aligned over the rows shown, so that titles line up.
  size_t id_width = 0, turns_width = 0, model_width = 0;
  for (const ConversationSummary& c : list) {
    id_width = std::max(id_width, std::to_string(c.id).size());
    turns_width = std::max(turns_width, std::to_string(c.turns).size());
    model_width = std::max(model_width, model_name(c.model_path).size());
  }
  for (const ConversationSummary& c : list) {
    const std::string id = std::to_string(c.id), turns = std::to_string(c.turns);
    const std::string model = model_name(c.model_path);
    std::string line = std::string(id_width - id.size(), ' ') + id + "  " +
                       format_time(c.updated_ms) + "  " +
                       std::string(turns_width - turns.size(), ' ') + turns +
                       (c.turns == 1 ? " turn   " : " turns  ") + model +
                       std::string(model_width - model.size(), ' ') + "  " + title_text(c.title);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
  return kExitOk;
}

int show_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "Show a conversation's turns: the messages, the answers, interrupted ones marked.\n"
      "A branch (a fork made with --cid ID@N, or a turn recorded as one because the\n"
      "conversation moved on while it was computed) is a conversation of its own that\n"
      "starts with copies of the turns it follows: its header says \"forked from\n"
      "conversation ID at turn N\", and the conversation it left lists it after turn N.",
      "quip show"};
  std::string id;
  bool json = false;
  app.add_option("ID", id, "the conversation (see 'quip log')")->required();
  app.add_flag("--json", json, "print everything stored as one JSON object, token ids included");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  return print_one("show", id, json ? Format::kJson : Format::kText, out, err);
}

int export_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Write a conversation as a Markdown transcript or as JSON.", "quip export"};
  std::string id, format = "md";
  app.add_option("ID", id, "the conversation (see 'quip log')")->required();
  app.add_option("--format", format, "md: Markdown transcript; json: as 'quip show --json'")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  return print_one("export", id, format == "json" ? Format::kJson : Format::kMarkdown, out, err);
}

int rm_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Delete a conversation and all its turns (forks of it are kept).", "quip rm"};
  std::string id_text;
  app.add_option("ID", id_text, "the conversation (see 'quip log')")->required();
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  int64_t id = 0;
  if (auto status = id_argument("rm", id_text, id, err)) return *status;

  const auto path = database_path(err);
  if (!path) return kExitFailure;
  std::error_code ec;
  // No database yet: nothing to delete, and no reason to create one.
  if (!fs::exists(*path, ec) && !ec) {
    err << no_conversation(id);
    return kExitFailure;
  }
  auto db = Store::open(*path);
  if (!db) {
    print_error(err, "quip", db.error().message);
    return kExitBadData;
  }
  // An unknown id gets remove()'s own "no conversation 42".
  if (auto r = db->remove(id); !r) {
    print_error(err, "quip", r.error().message);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace quip::cli
