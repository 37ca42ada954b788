// `quip inspect FILE [--json] [--tensors]`: what a user wants to know about a
// GGUF file before running it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// Runs the subcommand on `args` (without "quip inspect"); returns the exit status.
int inspect_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
