#include "cli/prompt_input.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace quip::cli {

namespace {

Result<std::string> read_stream(std::istream& in, const std::string& name) {
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{name + ": cannot read: " + std::strerror(errno)};
  return text.str();
}

}  // namespace

Result<std::vector<std::string>> read_prompt_parts(const PromptSources& sources) {
  std::vector<std::string> parts;
  const bool stdin_is_prompt = sources.words.size() == 1 && sources.words[0] == "-";
  if (stdin_is_prompt || (sources.read_stdin && isatty(STDIN_FILENO) == 0)) {
    std::cin.clear();
    auto text = read_stream(std::cin, "stdin");
    if (!text) return text.error();
    if (!text->empty()) parts.push_back(std::move(*text));
  }
  if (sources.file) {
    std::ifstream in(*sources.file, std::ios::binary);
    if (!in) return Error{*sources.file + ": cannot read: " + std::strerror(errno)};
    auto text = read_stream(in, *sources.file);
    if (!text) return text.error();
    if (!text->empty()) parts.push_back(std::move(*text));
  }
  if (!stdin_is_prompt && !sources.words.empty()) {
    std::string joined;
    for (size_t i = 0; i < sources.words.size(); ++i) {
      if (i > 0) joined += ' ';
      joined += sources.words[i];
    }
    if (!joined.empty()) parts.push_back(std::move(joined));
  }
  return parts;
}

std::string join_for_chat(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& p : parts) {
    std::string_view v = p;
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.remove_suffix(1);
    if (v.empty()) continue;
    if (!text.empty()) text += "\n\n";
    text += v;
  }
  return text;
}

std::string join_raw(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& p : parts) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += p;
  }
  return text;
}

}  // namespace quip::cli
