// `quip bench -m MODEL [-p 512] [-n 128] [-t N] [-r REPS] [--json]`: prompt
// processing and generation speed, measured as llama-bench measures them
// (random tokens, a fresh context each repetition, mean and spread).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int bench_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
