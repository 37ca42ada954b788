// Where quip keeps its files.
#pragma once

#include <filesystem>
#include <optional>

namespace quip {

// The folder for derived data that can always be rebuilt (vocabulary
// indexes, the prefix cache): $QUIP_HOME/cache, else $XDG_CACHE_HOME/quip,
// else $HOME/.cache/quip. Nullopt when none of these is set. The folder may
// not exist yet.
std::optional<std::filesystem::path> cache_dir();

}  // namespace quip
