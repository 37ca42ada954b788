// `quip serve`: a resident engine. It holds models loaded (serve/model_pool.h)
// and answers, on a Unix socket of its user and optionally on a TCP port:
//
//   OpenAI   POST /v1/chat/completions, POST /v1/completions, GET /v1/models
//   Ollama   POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show,
//            GET /api/ps, GET /api/version
//   both     GET /health, GET /metrics (Prometheus text)
//   socket   POST /quip/generate (serve/attach.h), POST /quip/cancel,
//            POST /quip/shutdown: the shell's own routes, never on TCP
//
// Calls run through the session layer exactly as the command runs them,
// with the same prefix cache on disk. At most `parallel` calls generate at
// once; others wait in a bounded queue (503 with Retry-After beyond it).
// stop() stops taking requests and lets those in flight finish within the
// grace period, after which they are stopped as a Ctrl-C stops a call.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "kernels/dot.h"
#include "store/prefix_cache.h"

namespace quip::serve {

struct ServeOptions {
  // The models clients may name, by name (a config alias, a file's name or
  // its name without .gguf); the first is the default for requests that
  // name none.
  struct Named {
    std::string name;
    std::filesystem::path path;
    bool listed = true;  // false: a second name of a listed model (its file name)
  };
  std::vector<Named> models;
  std::filesystem::path socket;
  std::optional<std::string> host;  // TCP, with port
  std::optional<int> port;
  std::optional<std::string> api_key;  // required as a Bearer token on TCP when set
  std::chrono::milliseconds keep_alive{std::chrono::minutes(5)};
  std::chrono::milliseconds grace{std::chrono::seconds(30)};
  int parallel = 4;
  // Calls generating at once decode together (serve/batcher.h); false: each
  // on its own forward pass, with its share of the threads (a baseline).
  bool batching = true;
  // The memory tier above the prefix cache (session/warm_cache.h); 0: none.
  uint64_t cache_ram_bytes = uint64_t{1} << 30;
  size_t max_queue = 32;
  size_t max_body_bytes = 8u << 20;
  int threads = 1;  // for all calls together
  kernels::Isa isa = kernels::Isa::Reference;
  size_t n_ctx = 0;  // 0: each model's own
  std::optional<std::filesystem::path> cache_dir;
  uint64_t cache_max_bytes = store::kDefaultCacheBytes;
  std::string version;
};

class Server {
 public:
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the socket (mode 0600, replacing a stale one; refusing one a live
  // server answers on) and the port. Errors are one line.
  Result<void> bind();
  // Serves until stop(), then drains; returns when every call has ended.
  void serve();
  // Thread safe; also what POST /quip/shutdown does.
  void stop();
  // Whether stop() was asked (by a request); serve() has returned then.
  bool stop_requested() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace quip::serve
