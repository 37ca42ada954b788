// `quip [OPTIONS] PROMPT...`: the model's answer, streamed to stdout. The
// prompt goes through the model's chat template (or, with --raw, as it is);
// the call continues a stored conversation with -c/--cid, restores what
// earlier calls evaluated from the prefix cache, and records its turn.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// `quip --help`: the overview and the options of `quip PROMPT`, from the
// option tables (cli/options.h), checked against this command's parser.
int generate_help(std::ostream& out, std::ostream& err);

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
