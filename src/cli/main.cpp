// quip: a local LLM for the Unix shell. This file only dispatches to the
// subcommands; each lives in its own file under cli/.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/paths.h"
#include "base/text.h"
#include "cli/bench.h"
#include "cli/cache_cmd.h"
#include "cli/conversations.h"
#include "cli/exit_status.h"
#include "cli/generate.h"
#include "cli/inspect.h"
#include "cli/models_cmd.h"
#include "cli/pull.h"
#include "cli/report.h"
#include "cli/serve_cmd.h"
#include "cli/template_cmd.h"
#include "cli/tokenize.h"
#include "kernels/dot.h"
#include "quip_version.h"

namespace {

using quip::cli::kExitFailure;
using quip::cli::kExitOk;
using quip::cli::kExitUsage;

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};

constexpr Subcommand kSubcommands[] = {
    {"bench", "measure prompt and generation speed (-p, -n, -t, -r, --json)",
     quip::cli::bench_main},
    {"cache", "the prefix cache on disk (stats, clear, prune)", quip::cli::cache_main},
    {"export", "write a conversation as Markdown or JSON (--format md|json)",
     quip::cli::export_main},
    {"inspect", "show what a GGUF model file holds (--json, --tensors)", quip::cli::inspect_main},
    {"log", "list the most recent conversations (-n N, --json)", quip::cli::log_main},
    {"models", "list the models Ollama, Hugging Face, LM Studio, llama.cpp keep (--json)",
     quip::cli::models_main},
    {"ps", "list the models a running quip server holds (--json)", quip::cli::ps_main},
    {"pull", "download a GGUF model from Hugging Face (hf:ORG/REPO[:QUANT])", quip::cli::pull_main},
    {"rm", "delete a conversation", quip::cli::rm_main},
    {"serve", "keep models loaded; answer the shell and OpenAI/Ollama clients (--port)",
     quip::cli::serve_main},
    {"show", "show a conversation's turns (--json)", quip::cli::show_main},
    {"template", "render messages with a chat template (-m, --template)", quip::cli::template_main},
    {"tokenize", "print the tokens of a text (--ids, --no-bos, --parse-special)",
     quip::cli::tokenize_main},
};

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "an unknown compiler";
#endif
}

void print_help(std::ostream& out) {
  out << "quip: a local LLM for the Unix shell\n\n"
         "Usage:\n"
         "  quip [OPTIONS] PROMPT...     answer a prompt; stdin, when piped, comes first as "
         "context\n"
         "  quip -c PROMPT...            continue this terminal's last conversation\n"
         "  quip --cid ID[@N] PROMPT...  continue conversation ID (from turn N: a fork)\n"
         "  quip --raw PROMPT...         continue a text as it is, without the chat template\n"
         "  quip COMMAND [OPTIONS]\n"
         "  quip --version               version, commit, build and the CPU's kernels\n\n"
         "Commands:\n";
  for (const Subcommand& s : kSubcommands) {
    out << "  " << s.name << std::string(12 - s.name.size(), ' ') << s.summary << '\n';
  }
  out << "\n"
      << quip::cli::generate_options_help()
      << "\nRun 'quip COMMAND --help' for the options of a command.\n"
         "Config: ~/.config/quip/config.toml (see README.md); QUIP_HOME moves config, data and\n"
         "cache under one folder.\n"
         "QUIP_MAX_INPUT sets the prompt input limit (default 64MiB).\n"
         "\nExit status: 0 success (also when the reader of the output went away), 1 runtime\n"
         "failure (also: the answer was printed but not recorded), 2 usage, config or input\n"
         "error (and a template's raise_exception), 3 unusable model or data file, 130\n"
         "interrupted (143 by SIGTERM, 129 by SIGHUP).\n";
}

// What was built and what this CPU runs: enough for a bug report.
void print_version(std::ostream& out) {
  out << "quip " << QUIP_VERSION << '\n'
      << "commit " << QUIP_COMMIT << '\n'
      << "build " << QUIP_BUILD_TYPE << ", " << compiler() << '\n';
  auto isa = quip::kernels::chosen_isa();
  out << "kernels ";
  if (isa) {
    out << quip::kernels::isa_name(*isa)
        << " (detected: " << quip::kernels::isa_name(quip::kernels::detected_isa())
        << "; QUIP_KERNELS=ref|avx2|avx512 chooses)\n";
  } else {
    out << "none: " << quip::printable(isa.error().message, 200) << '\n';
  }
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "quip: no command given (see 'quip --help')\n";
    return kExitUsage;
  }
  const std::string_view first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_help(std::cout);
    return kExitOk;
  }
  if (first == "--version" || first == "-V") {
    print_version(std::cout);
    return kExitOk;
  }
  if (auto env = quip::check_environment(); !env) {
    quip::cli::print_error(std::cerr, "quip", env.error().message);
    return kExitUsage;
  }
  for (const Subcommand& s : kSubcommands) {
    if (first == s.name) {
      const std::vector<std::string> args(argv + 2, argv + argc);
      return s.run(args, std::cout, std::cerr);
    }
  }
  // Anything else is a prompt with its options.
  const std::vector<std::string> args(argv + 1, argv + argc);
  return quip::cli::generate_main(args, std::cout, std::cerr);
}

// Whether stdout is a pipe or socket whose reader has gone (poll reports
// POLLERR on the write end of such a pipe).
bool reader_gone() {
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

// The exit status of a command that returned `status`, once its output is
// flushed: a full disk or a closed file must not pass for success. The one
// rule for every command: the reader going away (`quip ... | head`) ends
// it quietly with the status it had, as if the rest had been read.
int finish(int status) {
  // A write that failed already (a large one goes straight to the file) left
  // its errno; otherwise the flush says.
  int e = errno;
  if (std::cout) {
    errno = 0;
    std::cout.flush();
    e = errno;
  }
  if (std::cout) return status;
  if (e == EPIPE || reader_gone()) return status;  // the reader went away: end quietly
  std::cerr << "quip: cannot write the output"
            << (e != 0 ? std::string(": ") + std::strerror(e) : "") << '\n';
  return status == kExitOk ? kExitFailure : status;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe is an EPIPE write error, seen and handled in finish(),
  // never a death by SIGPIPE (status 141) halfway through a command.
  std::signal(SIGPIPE, SIG_IGN);
  std::ios::sync_with_stdio(false);
  return finish(run(argc, argv));
}
