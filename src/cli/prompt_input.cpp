#include "cli/prompt_input.h"

#include <unistd.h>

#include <cstdlib>

#include "base/file_io.h"
#include "store/prefix_cache.h"

namespace quip::cli {

namespace {

std::string limit_hint(uint64_t limit) {
  return " (the input limit; set QUIP_MAX_INPUT to raise it, e.g. QUIP_MAX_INPUT=" +
         std::to_string(2 * (limit >> 20 > 0 ? limit >> 20 : 1)) + "MiB)";
}

}  // namespace

Result<uint64_t> input_limit() {
  const char* env = std::getenv("QUIP_MAX_INPUT");
  if (env == nullptr) return kDefaultInputLimit;
  auto size = store::parse_size(env);
  if (!size) return Error{"QUIP_MAX_INPUT: " + size.error().message};
  if (*size == 0) return Error{"QUIP_MAX_INPUT: 0 allows no input; give a size such as 64MiB"};
  return *size;
}

Result<std::string> read_stdin_input(uint64_t limit) {
  return read_bounded(STDIN_FILENO, "stdin", limit, limit_hint(limit));
}

Result<std::string> read_input_file(const std::string& path) {
  auto limit = input_limit();
  if (!limit) return limit.error();
  return read_regular_file(path, *limit, limit_hint(*limit));
}

Result<std::vector<std::string>> read_prompt_parts(const PromptSources& sources) {
  std::vector<std::string> parts;
  auto limit = input_limit();
  if (!limit) return limit.error();
  uint64_t left = *limit;
  const bool stdin_is_prompt = sources.words.size() == 1 && sources.words[0] == "-";
  if (stdin_is_prompt || (sources.read_stdin && isatty(STDIN_FILENO) == 0)) {
    auto text = read_bounded(STDIN_FILENO, "stdin", left, limit_hint(*limit));
    if (!text) return text.error();
    left -= text->size();
    if (!text->empty()) parts.push_back(std::move(*text));
  }
  if (sources.file) {
    if (sources.file->empty()) return Error{"-f: empty file name"};
    auto text = read_regular_file(*sources.file, *limit, limit_hint(*limit));
    if (!text) return text.error();
    if (text->size() > left) {
      return Error{"stdin and -f together are longer than " + human_size(*limit) +
                   limit_hint(*limit)};
    }
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
