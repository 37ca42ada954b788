// Argument parsing shared by the subcommands: CLI11 with quip's error contract
// (one line on stderr, exit status 2; --help on stdout, exit status 0).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// Parses `args` into `app`. Returns an exit status when the command is done
// (help printed, or a usage error reported), nullopt when it should run.
std::optional<int> parse_args(CLI::App& app, const std::vector<std::string>& args,
                              std::ostream& out, std::ostream& err);

}  // namespace quip::cli
