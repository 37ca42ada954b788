#include "support/shared.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace quip::testing {

std::filesystem::path shared_dir() {
  const std::filesystem::path dir = QUIP_SHARED_DIR;
  std::error_code ec;
  return std::filesystem::is_directory(dir / "models", ec) ? dir : std::filesystem::path();
}

std::filesystem::path fetched_model(const std::string& file) {
  const std::filesystem::path path = std::filesystem::path(QUIP_MODELS_DIR) / file;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : std::filesystem::path();
}

std::filesystem::path demo_model() {
  return fetched_model("SmolLM2-135M-Instruct.Q4_1.gguf");
}

std::vector<std::filesystem::path> shared_files(const std::string& sub, const std::string& suffix) {
  std::vector<std::filesystem::path> out;
  const std::filesystem::path dir = shared_dir();
  if (dir.empty()) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir / sub)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= suffix.size() && name.ends_with(suffix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string shared_path(const std::string& sub) {
  return (shared_dir() / sub).string();
}

std::string python_with_jsonschema() {
  for (const char* p : {"python3", "/usr/bin/python3"}) {
    const std::string probe =
        std::string(p) + " -c 'import jsonschema, rfc3339_validator' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return p;
  }
  return "";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace quip::testing
