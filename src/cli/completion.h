// `quip completion bash|zsh|fish`: a shell's completion script. The scripts
// hold no knowledge of quip's options: at each Tab they run
// `quip completion --complete -- WORDS...`, which answers from the option
// tables (cli/options.h), the config's model aliases and the stored
// conversations, so an installed script never goes stale.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace quip::cli {

struct Candidate {
  std::string word;
  std::string description;  // may be empty; one line
};

struct Completion {
  // The shell should also offer file names (for the value after `prefix`).
  bool files = false;
  // The part of the word being completed that is not the value: "--format="
  // when completing "--format=j"; the candidates are the values alone.
  std::string prefix;
  std::vector<Candidate> candidates;  // those that start with what is typed
};

// Where dynamic candidates come from; tests give their own.
struct CompletionSources {
  // Model names, given the value of --config on the command line, if any.
  std::function<std::vector<Candidate>(const std::optional<std::string>& config)> models;
  // Conversation ids, the most recent first.
  std::function<std::vector<Candidate>()> conversations;
};

// The user's own: config aliases and the conversation database.
CompletionSources user_sources();

// The candidates for the last of `words`, a command line being typed:
// words[0] is the command ("quip"), the last word is the one being completed
// (possibly empty). Bash's split of "--opt=value" into "--opt", "=", "value"
// reads as the one word it was typed as.
Completion complete(const std::vector<std::string>& words, const CompletionSources& sources);

// The completion script of "bash", "zsh" or "fish"; nullopt for another.
std::optional<std::string> completion_script(std::string_view shell);

int completion_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
