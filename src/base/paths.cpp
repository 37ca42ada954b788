#include "base/paths.h"

#include <cstdlib>

namespace quip {

namespace {

std::optional<std::filesystem::path> env_path(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::filesystem::path(v);
}

// QUIP_HOME set, even to nothing: it alone decides (an empty one is an
// error that check_environment reports; here it gives no folder).
std::optional<std::optional<std::filesystem::path>> quip_home(const char* sub) {
  const char* v = std::getenv("QUIP_HOME");
  if (v == nullptr) return std::nullopt;
  if (*v == '\0') return std::optional<std::filesystem::path>();
  return std::filesystem::path(v) / sub;
}

}  // namespace

Result<void> check_environment() {
  for (const char* name : {"QUIP_HOME", "QUIP_CONFIG", "QUIP_SESSION", "QUIP_MAX_INPUT"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v == '\0') {
      return Error{std::string(name) + " is set but empty: give it a value, or unset it"};
    }
  }
  return {};
}

std::optional<std::filesystem::path> cache_dir() {
  if (auto home = quip_home("cache")) return *home;
  if (auto xdg = env_path("XDG_CACHE_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".cache" / "quip";
  return std::nullopt;
}

std::optional<std::filesystem::path> data_dir() {
  if (auto home = quip_home("data")) return *home;
  if (auto xdg = env_path("XDG_DATA_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".local" / "share" / "quip";
  return std::nullopt;
}

std::optional<std::filesystem::path> config_dir() {
  if (auto home = quip_home("config")) return *home;
  if (auto xdg = env_path("XDG_CONFIG_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".config" / "quip";
  return std::nullopt;
}

std::optional<std::filesystem::path> server_socket() {
  if (auto socket = env_path("QUIP_SOCKET")) return *socket;
  // QUIP_HOME keeps everything of a test or script under it, the server too.
  if (auto home = quip_home("serve.sock")) return *home;
  if (auto run = env_path("XDG_RUNTIME_DIR"); run && run->is_absolute()) {
    return *run / "quip" / "serve.sock";
  }
  if (auto cache = cache_dir()) return *cache / "serve.sock";
  return std::nullopt;
}

}  // namespace quip
