#include "grammar/json_builtins.h"

#include <map>
#include <vector>

#include "base/check.h"
#include "grammar/gbnf_text.h"

namespace quip::grammar {
namespace {

struct Builtin {
  std::string_view name;
  std::string body;
  std::vector<std::string_view> uses;
};

// RFC 5322's atext: the characters of an unquoted local part.
std::string email_atom_class() {
  CharSet s = CharSet::of('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  for (char c : std::string_view("!#$%&'*+/=?^_`{|}~-")) s.add(c, c);
  return gbnf_class(s);
}

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> table = {
      // White space between tokens, bounded: one space, or a newline and an
      // indentation of up to 20 spaces or tabs. Without a bound a model can
      // pad forever; this still allows pretty-printed output.
      {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
      {"value",
       "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object",
       R"("{" ws ( string ":" ws value ( "," ws string ":" ws value )* ws )? "}")",
       {"ws", "string", "value"}},
      {"array", R"("[" ws ( value ( "," ws value )* ws )? "]")", {"ws", "value"}},
      {"string", R"("\"" char* "\"")", {"char"}},
      // RFC 8259 section 7, lone surrogates excluded (json_chars).
      {"char", json_chars(CharSet::all()), {}},
      // RFC 8259 section 6, with bounded digits (gbnf_text.h's kMaxDigits).
      {"number",
       R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [+\x2D]? [0-9]{1,3} )?)",
       {}},
      {"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))", {}},
      {"boolean", R"("true" | "false")", {}},
      {"null", R"("null")", {}},
      // RFC 3339 full-date with the calendar's day counts: years 0001-9999,
      // February 29 only in leap years (divisible by 4, centuries by 400).
      {"date-div4", R"("0" [48] | [2468] [048] | [13579] [26])", {}},
      {"date-year", R"([1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9])", {}},
      {"date-leap-year", R"([0-9]{2} date-div4 | date-div4 "00")", {"date-div4"}},
      {"date",
       R"(date-year "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | date-leap-year "-02-29")",
       {"date-year", "date-leap-year"}},
      // RFC 3339 full-time without leap seconds; fractions up to 9 digits.
      {"time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( [Zz] | [+\x2D] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}},
      {"date-time", R"(date [Tt] time)", {"date", "time"}},
      // RFC 4122's hyphenated form, either case.
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})",
       {}},
      // An RFC 5321 address of dot-atoms at a host name, bounded in length.
      {"email",
       R"(email-atom ( "." email-atom ){0,8} "@" email-label ( "." email-label ){1,8})",
       {"email-atom", "email-label"}},
      {"email-atom", email_atom_class() + "{1,64}", {}},
      {"email-label", R"([a-zA-Z0-9] ( [a-zA-Z0-9\x2D]{0,61} [a-zA-Z0-9] )?)", {}},
  };
  return table;
}

const Builtin* find(std::string_view name) {
  for (const Builtin& b : builtins()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace

bool is_builtin_rule(std::string_view name) {
  return find(name) != nullptr;
}

std::string_view format_rule(std::string_view format) {
  for (std::string_view f : {"date", "time", "date-time", "uuid", "email"}) {
    if (f == format) return f;
  }
  return "";
}

std::string builtin_rules(const std::set<std::string>& used) {
  std::set<std::string_view> all;
  std::vector<std::string_view> todo(used.begin(), used.end());
  while (!todo.empty()) {
    const std::string_view name = todo.back();
    todo.pop_back();
    if (!all.insert(name).second) continue;
    const Builtin* b = find(name);
    CHECK(b != nullptr);
    todo.insert(todo.end(), b->uses.begin(), b->uses.end());
  }
  std::string out;
  for (const Builtin& b : builtins()) {
    if (all.count(b.name)) out += std::string(b.name) + " ::= " + b.body + "\n";
  }
  return out;
}

}  // namespace quip::grammar
