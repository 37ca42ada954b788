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
#include "cli/completion.h"
#include "cli/conversations.h"
#include "cli/exit_status.h"
#include "cli/generate.h"
#include "cli/inspect.h"
#include "cli/models_cmd.h"
#include "cli/pull.h"
#include "cli/options.h"
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

// Each command's summary, synopsis and options are in its option table
// (cli/options.cpp), which --help checks against this list.
struct Subcommand {
  std::string_view name;
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};

constexpr Subcommand kSubcommands[] = {
    {"bench", quip::cli::bench_main},
    {"cache", quip::cli::cache_main},
    {"completion", quip::cli::completion_main},
    {"export", quip::cli::export_main},
    {"inspect", quip::cli::inspect_main},
    {"log", quip::cli::log_main},
    {"models", quip::cli::models_main},
    {"ps", quip::cli::ps_main},
    {"pull", quip::cli::pull_main},
    {"rm", quip::cli::rm_main},
    {"serve", quip::cli::serve_main},
    {"show", quip::cli::show_main},
    {"template", quip::cli::template_main},
    {"tokenize", quip::cli::tokenize_main},
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

std::vector<std::string_view> command_names() {
  std::vector<std::string_view> names;
  for (const Subcommand& s : kSubcommands) names.push_back(s.name);
  return names;
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
    const int status = quip::cli::generate_help(std::cout, std::cerr);
    return quip::cli::commands_match(command_names(), std::cerr) ? status : kExitFailure;
  }
  // The man page, quip(1), from the same tables as --help; the build
  // writes it with this (undocumented: `man quip` is how to read it).
  if (first == "--man") {
    return quip::cli::print_man_page(command_names(), std::cout, std::cerr);
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
