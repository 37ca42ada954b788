// What the user asked: the joined PROMPT words, a -f FILE, and stdin when it
// is not a terminal (read whole, placed first, as context for the words).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace quip::cli {

struct PromptSources {
  std::vector<std::string> words;    // a lone "-" means: stdin is the prompt
  std::optional<std::string> file;   // -f FILE
  bool read_stdin = true;            // when stdin is not a terminal
};

// The parts in order: stdin, the file, the words. Empty parts are left out.
// Errors name the file that cannot be read.
Result<std::vector<std::string>> read_prompt_parts(const PromptSources& sources);

// A chat message: the parts, each without its trailing newlines, separated
// by a blank line.
std::string join_for_chat(const std::vector<std::string>& parts);

// A raw prompt: the parts as they are, with a newline between two parts when
// the first does not end with one.
std::string join_raw(const std::vector<std::string>& parts);

}  // namespace quip::cli
