// The models a server holds: each loaded on first use, shared by the calls
// that use it, and unloaded after it has been idle for the keep-alive time.
// Thread safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "session/loaded_model.h"
#include "session/outcome.h"

namespace quip::serve {

class ModelPool {
 public:
  explicit ModelPool(std::chrono::milliseconds keep_alive) : keep_alive_(keep_alive) {}

  // The model at `path` (made canonical), loaded now if it is not held.
  // Concurrent first uses of one model load it once. Failures: BadData (a
  // file that is not a usable model), Runtime (one that cannot be read).
  session::Outcome<std::shared_ptr<const session::LoadedModel>> get(
      const std::filesystem::path& path);

  // Unloads the models no call uses that have been idle past the
  // keep-alive time; returns their fingerprints.
  std::vector<std::string> unload_idle();

  struct Held {
    std::filesystem::path path;
    uint64_t bytes = 0;  // the file's size: what its mapping may take
    std::chrono::system_clock::time_point expires;
    int in_use = 0;  // calls using it now
  };
  std::vector<Held> held() const;

 private:
  struct Entry {
    std::mutex load;  // held while the model loads
    std::shared_ptr<const session::LoadedModel> model;
    std::chrono::steady_clock::time_point last_used;
    uint64_t bytes = 0;
  };
  std::chrono::milliseconds keep_alive_;
  mutable std::mutex mu_;
  std::map<std::filesystem::path, std::shared_ptr<Entry>> entries_;
};

}  // namespace quip::serve
