// `quip serve` (a resident engine: serve/server.h) and `quip ps` (what a
// running one holds).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int serve_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int ps_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
