#include "base/paths.h"

#include <cstdlib>

namespace quip {

namespace {

std::optional<std::filesystem::path> env_path(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::filesystem::path(v);
}

}  // namespace

std::optional<std::filesystem::path> cache_dir() {
  if (auto home = env_path("QUIP_HOME")) return *home / "cache";
  if (auto xdg = env_path("XDG_CACHE_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".cache" / "quip";
  return std::nullopt;
}

std::optional<std::filesystem::path> data_dir() {
  if (auto home = env_path("QUIP_HOME")) return *home / "data";
  if (auto xdg = env_path("XDG_DATA_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".local" / "share" / "quip";
  return std::nullopt;
}

std::optional<std::filesystem::path> config_dir() {
  if (auto home = env_path("QUIP_HOME")) return *home / "config";
  if (auto xdg = env_path("XDG_CONFIG_HOME")) return *xdg / "quip";
  if (auto home = env_path("HOME")) return *home / ".config" / "quip";
  return std::nullopt;
}

}  // namespace quip
