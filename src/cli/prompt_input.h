// What the user asked: the joined PROMPT words, a -f FILE, and stdin when it
// is not a terminal (read whole, placed first, as context for the words).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace quip::cli {

struct PromptSources {
  std::vector<std::string> words;   // a lone "-" means: stdin is the prompt
  std::optional<std::string> file;  // -f FILE
  bool read_stdin = true;           // when stdin is not a terminal
};

// The parts in order: stdin, the file, the words. Empty parts are left out.
// Errors name the file that cannot be read. -f takes a regular file only
// (a FIFO, a device or a folder is refused without blocking: streams come
// on stdin), and stdin and the file together hold at most input_limit()
// bytes.
Result<std::vector<std::string>> read_prompt_parts(const PromptSources& sources);

// The most bytes quip reads as a prompt (stdin and -f together), or as a
// template or messages file: $QUIP_MAX_INPUT (a size such as "256MiB"),
// else kDefaultInputLimit. An error names a bad $QUIP_MAX_INPUT.
inline constexpr uint64_t kDefaultInputLimit = uint64_t{64} << 20;  // 64 MiB
Result<uint64_t> input_limit();

// stdin read whole, at most `limit` bytes (the error says how to raise it).
Result<std::string> read_stdin_input(uint64_t limit);

// A user's text file (a --template, a messages file): a regular file of at
// most input_limit() bytes.
Result<std::string> read_input_file(const std::string& path);

// A chat message: the parts, each without its trailing newlines, separated
// by a blank line.
std::string join_for_chat(const std::vector<std::string>& parts);

// A raw prompt: the parts as they are, with a newline between two parts when
// the first does not end with one.
std::string join_raw(const std::vector<std::string>& parts);

}  // namespace quip::cli
