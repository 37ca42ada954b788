// Diagnostics on stderr, and output that quotes text from outside.
//
// Every error and warning line goes through print_error/print_warning, which
// escape it (printable()): messages quote file names, GGUF metadata, stored
// data and template messages, none of which may reach a terminal raw.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "base/result.h"

namespace quip::cli {

// "WHO: MESSAGE\n", the message escaped to one line.
void print_error(std::ostream& err, std::string_view who, std::string_view message);

// "WHO: warning: MESSAGE\n", escaped likewise.
void print_warning(std::ostream& err, std::string_view who, std::string_view message);

// A JSON text (nlohmann's dump, valid UTF-8) with DEL and the C1 controls
// U+0080..U+009F written as \u escapes, which JSON allows: the same value,
// safe on a terminal. (The dump already escapes C0 controls.)
std::string terminal_safe_json(std::string json);

// The exit status of a chat template that failed to parse or render. A
// raise_exception() of the template refuses the messages it was given: a
// usage error (2) on every path. Any other failure is the template's own:
// bad data (3) when it is the model's, a usage error (2) when it is a file
// the user gave (--template).
int template_failure_status(const Error& error, bool models_own_template);

// The message of a chat template that failed to render, naming the
// template: "MODEL: tokenizer.chat_template: line 3: ..." or "FILE: ...".
std::string template_failure_message(const Error& error, const std::string& model_file,
                                     const std::optional<std::filesystem::path>& template_file);

}  // namespace quip::cli
