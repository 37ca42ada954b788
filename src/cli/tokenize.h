// `quip tokenize -m MODEL [--ids] [--no-bos] [--parse-special] [TEXT... | -]`:
// the tokens a model's vocabulary makes of a text.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int tokenize_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
