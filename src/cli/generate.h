// `quip [OPTIONS] PROMPT...`: the model's answer, streamed to stdout. The
// prompt goes through the model's chat template (or, with --raw, as it is);
// the call continues a stored conversation with -c/--cid, restores what
// earlier calls evaluated from the prefix cache, and records its turn.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// The options of `quip PROMPT`, as `quip --help` lists them.
std::string generate_options_help();

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
