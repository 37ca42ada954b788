// Diagnostics on stderr, and output that quotes text from outside.
//
// Every error and warning line goes through print_error/print_warning, which
// escape it (printable()): messages quote file names, GGUF metadata, stored
// data and template messages, none of which may reach a terminal raw.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace quip::cli {

// "WHO: MESSAGE\n", the message escaped to one line.
void print_error(std::ostream& err, std::string_view who, std::string_view message);

// "WHO: warning: MESSAGE\n", escaped likewise.
void print_warning(std::ostream& err, std::string_view who, std::string_view message);

// A JSON text (nlohmann's dump, valid UTF-8) with DEL and the C1 controls
// U+0080..U+009F written as \u escapes, which JSON allows: the same value,
// safe on a terminal. (The dump already escapes C0 controls.)
std::string terminal_safe_json(std::string json);

}  // namespace quip::cli
