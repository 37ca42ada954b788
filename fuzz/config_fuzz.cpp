// libFuzzer target: any bytes as config.toml text give a Config or a
// one-line error naming the file, never a crash, a hang or a leak.
//
// Seeds: the example in src/cli/config.h and broken variants
// (scripts/fuzz.sh ... config).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cli/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const quip::Result<quip::cli::Config> config = quip::cli::parse_config(text, "/fuzz/config.toml");
  if (!config) {
    const std::string& message = config.error().message;
    if (message.empty() || message.find('\n') != std::string::npos) std::abort();
    if (message.rfind("/fuzz/config.toml", 0) != 0) std::abort();
    return 0;
  }
  for (const auto& [name, alias] : config->models) {
    if (name.empty() || alias.path.empty()) std::abort();
  }
  return 0;
}
