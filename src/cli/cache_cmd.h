// `quip cache stats|clear|prune`: the prefix cache's folder (see
// store/prefix_cache.h) as the user manages it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int cache_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
