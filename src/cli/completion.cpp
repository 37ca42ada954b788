#include "cli/completion.h"

#include <algorithm>
#include <filesystem>

#include "base/text.h"
#include "cli/config.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "session/model_stores.h"
#include "store/store.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;

// The scripts print the first line of `quip completion --complete` as
// "files" or "words", a tab and Completion::prefix; then one candidate a
// line, with a tab and its description when it has one. Each reads its
// words the way its shell gives them and does nothing else.
constexpr std::string_view kBash = R"(# bash completion for quip, written by 'quip completion bash'.
# The candidates come from quip itself: 'quip completion --complete -- WORDS'
# prints "files" or "words", a tab and the text before the value being
# completed, then one candidate a line (a tab and a description after it).
_quip() {
    local -a lines
    local cur=${COMP_WORDS[COMP_CWORD]} line file
    COMPREPLY=()
    mapfile -t lines < <("${COMP_WORDS[0]}" completion --complete -- \
        "${COMP_WORDS[@]:0:COMP_CWORD+1}" 2>/dev/null)
    (( ${#lines[@]} > 0 )) || return 0
    for line in "${lines[@]:1}"; do
        COMPREPLY+=("${line%%$'\t'*}")
    done
    if [[ ${lines[0]%%$'\t'*} == files ]]; then
        # Bash splits "--opt=value" at "=": the value is what follows it.
        [[ $cur == = ]] && cur=
        while IFS= read -r file; do
            COMPREPLY+=("$file")
        done < <(compgen -f -- "$cur")
        compopt -o filenames 2>/dev/null
    fi
    return 0
}
complete -F _quip quip
)";

constexpr std::string_view kZsh = R"(#compdef quip
# zsh completion for quip, written by 'quip completion zsh'.
# The candidates come from quip itself: 'quip completion --complete -- WORDS'
# prints "files" or "words", a tab and the text before the value being
# completed, then one candidate a line (a tab and a description after it).
_quip() {
    local -a lines described
    local line word head
    lines=("${(@f)$("${(Q)words[1]}" completion --complete -- "${(@Q)words[1,CURRENT]}" 2>/dev/null)}")
    (( ${#lines} > 0 )) && [[ -n ${lines[1]} ]] || return 1
    head=${lines[1]}
    # "--opt=value": complete the value after the "=".
    [[ $head == *$'\t'?* ]] && compset -P '*='
    for line in "${(@)lines[2,-1]}"; do
        [[ -n $line ]] || continue
        word=${line%%$'\t'*}
        if [[ $line == *$'\t'* ]]; then
            described+=("${word//:/\\:}:${line#*$'\t'}")
        else
            described+=("${word//:/\\:}")
        fi
    done
    (( ${#described} )) && _describe -t quip-candidates 'quip' described
    [[ ${head%%$'\t'*} == files ]] && _files
    return 0
}
if [[ ${funcstack[1]} == _quip ]]; then
    _quip "$@"
else
    compdef _quip quip
fi
)";

constexpr std::string_view kFish = R"(# fish completion for quip, written by 'quip completion fish'.
# The candidates come from quip itself: 'quip completion --complete -- WORDS'
# prints "files" or "words", a tab and the text before the value being
# completed, then one candidate a line (a tab and a description after it).
function __quip_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l lines (command $tokens[1] completion --complete -- $tokens "$current" 2>/dev/null)
    or return
    set -l head (string split -m 1 \t -- $lines[1])
    set -l prefix "$head[2]"
    for line in $lines[2..-1]
        printf '%s%s\n' "$prefix" "$line"
    end
    if test "$head[1]" = files
        set -l value (string sub -s (math (string length -- "$prefix") + 1) -- "$current")
        for path in (__fish_complete_path "$value")
            printf '%s%s\n' "$prefix" "$path"
        end
    end
end
complete -c quip -f -a '(__quip_complete)'
)";

// The option of `doc` that `token` names ("--model", "--model=x", "-m",
// "-mx"), or null.
const OptionDoc* option_named(const CommandDoc& doc, std::string_view token) {
  std::string_view name = token;
  if (token.starts_with("--")) {
    name = token.substr(0, token.find('='));
  } else if (token.size() > 2) {
    name = token.substr(0, 2);
  }
  for (const OptionDoc& o : doc.options) {
    if (o.positional()) continue;
    for (const std::string& n : o.each_name()) {
      if (n == name) return &o;
    }
  }
  return nullptr;
}

// Whether `token` names an option whose value is the next word.
bool value_follows(const OptionDoc* o, std::string_view token) {
  if (o == nullptr || o->value.empty()) return false;
  return token.starts_with("--") ? token.find('=') == std::string_view::npos : token.size() == 2;
}

// Bash splits "--opt=value" into "--opt", "=", "value": one word again.
std::vector<std::string> joined_words(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  bool joining = false;
  for (const std::string& w : words) {
    if (w == "=" && !out.empty() && out.back().starts_with("--") &&
        out.back().find('=') == std::string::npos) {
      out.back() += '=';
      joining = true;
    } else if (joining) {
      out.back() += w;
      joining = false;
    } else {
      out.push_back(w);
    }
  }
  return out;
}

void add_values(Completion& c, const OptionDoc& o, const std::optional<std::string>& config,
                const CompletionSources& sources) {
  switch (o.completes) {
    case Completes::kNothing: break;
    case Completes::kFile: c.files = true; break;
    case Completes::kModel:
      c.files = true;
      if (sources.models) c.candidates = sources.models(config);
      break;
    case Completes::kConversation:
      if (sources.conversations) c.candidates = sources.conversations();
      break;
    case Completes::kChoice:
      for (const std::string& choice : o.choices) c.candidates.push_back({choice, ""});
      break;
  }
}

void add_options(Completion& c, const CommandDoc& doc) {
  c.candidates.push_back({"--help", "print this help and exit"});
  if (doc.name.empty()) {
    c.candidates.push_back({"--version", "version, commit, build and the CPU's kernels"});
  }
  for (const OptionDoc& o : doc.options) {
    if (o.positional() || o.hidden) continue;
    for (const std::string& name : o.each_name()) c.candidates.push_back({name, o.help});
  }
}

}  // namespace

Completion complete(const std::vector<std::string>& typed, const CompletionSources& sources) {
  Completion c;
  const std::vector<std::string> words = joined_words(typed);
  if (words.size() < 2) return c;
  std::string current = words.back();
  const size_t last = words.size() - 1;

  // The command: only the first word names one (`quip -m x log` is a prompt).
  const CommandDoc* doc = find_command_doc("");
  size_t i = 1;
  if (last > 1) {
    if (const CommandDoc* named = find_command_doc(words[1]);
        named != nullptr && words[1].find(' ') == std::string::npos && !words[1].empty()) {
      doc = named;
      i = 2;
    }
  }
  const bool first_word = i == 1 && last == 1;
  bool options_end = false, action_chosen = false;
  size_t positionals = 0;
  std::optional<std::string> config;
  const OptionDoc* value_of = nullptr;  // the option whose value is being typed
  for (; i < last; ++i) {
    const std::string& w = words[i];
    if (options_end) {
      ++positionals;
    } else if (w == "--") {
      options_end = true;
    } else if (w.size() > 1 && w[0] == '-') {
      const OptionDoc* o = option_named(*doc, w);
      const bool next_is_value = value_follows(o, w);
      std::optional<std::string> value;
      if (next_is_value && i + 1 < last) value = words[i + 1];
      if (!next_is_value && o != nullptr && w.starts_with("--") && w.find('=') != std::string::npos)
        value = w.substr(w.find('=') + 1);
      if (o != nullptr && o->names.ends_with("--config") && value) config = value;
      if (next_is_value) {
        if (i + 1 == last) value_of = o;
        ++i;
      }
    } else if (!doc->actions.empty() && !action_chosen) {
      if (const CommandDoc* action = find_command_doc(doc->name + " " + w)) doc = action;
      action_chosen = true;
    } else {
      ++positionals;
    }
  }
  if (value_of == nullptr && !options_end && current.starts_with("--") &&
      current.find('=') != std::string::npos) {
    const OptionDoc* o = option_named(*doc, current);
    if (o == nullptr || o->value.empty()) return c;
    value_of = o;
    c.prefix = current.substr(0, current.find('=') + 1);
    current = current.substr(c.prefix.size());
  }

  if (value_of != nullptr) {
    add_values(c, *value_of, config, sources);
  } else if (!options_end && current.starts_with('-')) {
    add_options(c, *doc);
  } else if (first_word) {
    for (const CommandDoc& command : command_docs()) {
      if (!command.name.empty()) c.candidates.push_back({command.name, command.summary});
    }
  } else if (!doc->actions.empty() && !action_chosen) {
    for (const CommandDoc& a : doc->actions) {
      c.candidates.push_back({a.name.substr(a.name.rfind(' ') + 1), a.summary});
    }
  } else {
    const auto positional = std::find_if(doc->options.begin(), doc->options.end(),
                                         [](const OptionDoc& o) { return o.positional(); });
    if (positional == doc->options.end()) {
      if (!options_end) add_options(c, *doc);  // nothing else to type
    } else if (positional->repeats || positionals == 0) {
      add_values(c, *positional, config, sources);
    }
  }
  std::erase_if(c.candidates, [&](const Candidate& k) { return !k.word.starts_with(current); });
  return c;
}

// Model names for -m: the config's aliases, with the file each names.
// When quip keeps models of its own (`quip models`), their names belong
// here too: this is the one place the completions learn model names.
std::vector<Candidate> model_candidates(const std::optional<std::string>& config_file) {
  std::vector<Candidate> out;
  auto config = load_config(config_file ? std::optional<fs::path>(*config_file) : std::nullopt);
  if (!config) return out;
  for (const auto& [name, alias] : config->models) {
    out.push_back({name, printable(alias.path.string(), 200)});
  }
  // The models of other tools' stores (quip models), by the names -m takes.
  const session::StoreRoots roots = session::store_roots();
  for (const session::StoreModel& m : session::list_stores(roots)) {
    out.push_back({session::usable_name(m, roots), printable(m.path.string(), 200)});
  }
  return out;
}

// The ids of the most recent conversations, with their titles; none when
// there is no database (completion never creates one).
std::vector<Candidate> conversation_candidates() {
  constexpr int kMostRecent = 200;
  std::vector<Candidate> out;
  const auto path = store::default_database_path();
  std::error_code ec;
  if (!path || !fs::exists(*path, ec)) return out;
  auto db = store::Store::open_read_only(*path);
  if (!db) return out;
  auto list = db->list(kMostRecent);
  if (!list) return out;
  for (const store::ConversationSummary& s : *list) {
    out.push_back({std::to_string(s.id), printable(s.title, 60)});
  }
  return out;
}

CompletionSources user_sources() {
  return CompletionSources{model_candidates, conversation_candidates};
}

std::optional<std::string> completion_script(std::string_view shell) {
  if (shell == "bash") return std::string(kBash);
  if (shell == "zsh") return std::string(kZsh);
  if (shell == "fish") return std::string(kFish);
  return std::nullopt;
}

int completion_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"", "quip completion"};
  std::vector<std::string> words;  // SHELL; with --complete, the command line
  bool complete_words = false;
  app.add_option("SHELL", words, "bash, zsh or fish");
  app.add_flag("--complete", complete_words, "print the candidates for a command line");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  if (complete_words) {
    const Completion c = complete(words, user_sources());
    out << (c.files ? "files" : "words") << '\t' << printable(c.prefix, 4096) << '\n';
    for (const Candidate& k : c.candidates) {
      out << printable(k.word, 4096);
      if (!k.description.empty()) out << '\t' << printable(k.description, 4096);
      out << '\n';
    }
    return kExitOk;
  }
  if (words.size() != 1) {
    print_error(err, "quip completion",
                "give one shell: bash, zsh or fish (see 'quip completion --help')");
    return kExitUsage;
  }
  const std::optional<std::string> script = completion_script(words[0]);
  if (!script) {
    print_error(err, "quip completion",
                "unknown shell '" + printable(words[0]) +
                    "' (one of bash, zsh, fish; see 'quip completion --help')");
    return kExitUsage;
  }
  out << *script;
  return kExitOk;
}

}  // namespace quip::cli
