// The server's inside, shared by server.cpp (calls, the shell's routes,
// metrics, the lifecycle) and api_routes.cpp (the OpenAI and Ollama
// routes). Not part of the interface: serve/server.h is.
#pragma once

#include <httplib.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/model_pool.h"
#include "serve/server.h"
#include "session/session.h"

namespace quip::serve {

namespace detail {

using nlohmann::json;

// JSON out: bytes that are not UTF-8 (a model may write them) are replaced,
// never a reason to fail an answer.
inline std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

inline int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A file's modification time in seconds since 1970; 0 when unknown.
inline int64_t modified_unix(const std::filesystem::path& p) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

inline int http_status(const session::Failure& f) {
  switch (f.kind) {
    case session::FailureKind::Usage: return 400;
    case session::FailureKind::BadData:
    case session::FailureKind::Runtime: return 500;
  }
  return 500;
}

inline void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

inline void send_openai_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, openai_error(e));
}

inline void send_ollama_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, {{"error", e.message}});
}

}  // namespace detail

struct Server::Impl {
  ServeOptions o;
  ModelPool pool;
  httplib::Server unix_server, tcp_server;
  std::thread tcp_thread, reaper;
  std::atomic<bool> stopping{false}, hard_stop{false}, stop_asked{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;

  // Calls: at most o.parallel generate; the others wait.
  std::mutex slots_mu;
  std::condition_variable slots_cv;
  int running = 0;
  size_t waiting = 0;

  // Calls in flight by id, for /quip/cancel.
  std::mutex calls_mu;
  std::map<int64_t, std::shared_ptr<std::atomic<bool>>> calls;
  std::atomic<int64_t> next_call{1};

  // Metrics.
  std::mutex metrics_mu;
  std::map<std::string, uint64_t> requests;  // by route
  std::atomic<uint64_t> failed{0}, cancelled{0}, prompt_tokens{0}, cached_tokens{0},
      generated_tokens{0}, cache_hits{0};

  explicit Impl(ServeOptions options)
      : o(std::move(options)), pool(o.keep_alive), warm(o.cache_ram_bytes) {}
  session::WarmCache warm;

  // A running slot, released when the last holder drops it.
  struct Slot {
    Impl* impl;
    ~Slot() {
      std::lock_guard lock(impl->slots_mu);
      --impl->running;
      impl->slots_cv.notify_one();
    }
  };
  // Waits for a slot; none when the queue is full (bounded unless
  // `wait_always`). `threads`: the call's threads. All of the server's with
  // batching, as the calls' forward passes take turns; without, its share,
  // all of them for a call that runs alone.
  std::shared_ptr<Slot> acquire(bool wait_always, int& threads) {
    std::unique_lock lock(slots_mu);
    if (running >= o.parallel && !wait_always && waiting >= o.max_queue) return nullptr;
    ++waiting;
    slots_cv.wait(lock, [&] { return running < o.parallel; });
    --waiting;
    ++running;
    threads = o.batching ? o.threads : std::max(1, o.threads / running);
    return std::shared_ptr<Slot>(new Slot{this});
  }

  // The batcher of the calls on `model` with a context of n_ctx, made for
  // the first of them; it lives (and holds the model) while calls use it.
  std::mutex batchers_mu;
  std::map<std::pair<const session::LoadedModel*, size_t>, std::weak_ptr<Batcher>> batchers;
  std::shared_ptr<Batcher> batcher_for(const std::shared_ptr<const session::LoadedModel>& model,
                                       size_t n_ctx) {
    std::lock_guard lock(batchers_mu);
    std::weak_ptr<Batcher>& slot = batchers[{model.get(), n_ctx}];
    if (auto b = slot.lock()) return b;
    auto b = std::make_shared<Batcher>(
        model, engine::ForwardOptions{.n_threads = o.threads, .isa = o.isa, .n_ctx = n_ctx},
        [this](size_t rows) { count_step(rows); });
    slot = b;
    return b;
  }
  // Forgets the batchers no call uses any more (each went with its last call).
  void forget_idle_batchers() {
    std::lock_guard lock(batchers_mu);
    std::erase_if(batchers, [](const auto& entry) { return entry.second.expired(); });
  }
  // Shared steps and their rows, and steps by rows: 1, 2, 3-4, 5-8, 9-16, more.
  std::atomic<uint64_t> batch_steps{0}, batch_rows{0};
  std::array<std::atomic<uint64_t>, 6> steps_by_rows{};
  void count_step(size_t rows) {
    ++batch_steps;
    batch_rows += rows;
    size_t bucket = 0;
    while (bucket < 5 && rows > (size_t{1} << bucket)) ++bucket;
    ++steps_by_rows[bucket];
  }

  void count(const std::string& route) {
    std::lock_guard lock(metrics_mu);
    ++requests[route];
  }

  // The model a client names: a known name, or with none the default.
  std::optional<std::filesystem::path> model_named(const std::string& name) const {
    if (o.models.empty()) return std::nullopt;
    if (name.empty()) return o.models.front().path;
    for (const auto& m : o.models) {
      if (m.name == name) return m.path;
    }
    // Ollama's clients add ":latest" to a bare name.
    if (name.size() > 7 && name.ends_with(":latest")) {
      return model_named(name.substr(0, name.size() - 7));
    }
    return std::nullopt;
  }

  std::string name_of(const std::filesystem::path& p) const {
    for (const auto& m : o.models) {
      if (m.path == p && m.listed) return m.name;
    }
    return p.filename().string();
  }

  // A call ready to generate: its slot, model, request and prompt.
  struct Prepared {
    std::shared_ptr<Slot> slot;
    std::shared_ptr<const session::LoadedModel> model;
    session::Request request;
    session::Prompt prompt;
    std::string model_name;
    std::shared_ptr<Batcher> batcher;  // where its steps run
  };

  // The request's defaults that the server sets (kernels, context).
  void server_settings(session::Request& r) const {
    r.isa = o.isa;
    if (r.n_ctx == 0) r.n_ctx = o.n_ctx;
  }

  // An API request as a session request on a model; errors as HTTP ones.
  std::variant<Prepared, ApiError> prepare(const ApiRequest& a, bool bounded);

  // The slot, the model and the prompt of `p`, whose request is set.
  std::optional<ApiError> load(Prepared& p, bool bounded);

  // Registers a call for cancelling; the flag it returns stops it.
  std::pair<int64_t, std::shared_ptr<std::atomic<bool>>> register_call() {
    auto flag = std::make_shared<std::atomic<bool>>(false);
    const int64_t id = next_call++;
    std::lock_guard lock(calls_mu);
    calls[id] = flag;
    return {id, flag};
  }
  void end_call(int64_t id) {
    std::lock_guard lock(calls_mu);
    calls.erase(id);
  }

  // Generates `p` with `callbacks` (keep_going is the server's and the
  // caller's together) and counts the outcome.
  session::Outcome<session::Answer> run(Prepared& p, session::Callbacks callbacks,
                                        const std::atomic<bool>& cancel);
  // A call whose answer goes out as it comes: each piece of the answer up to
  // the first of `stops` (text that may begin one is held back until it
  // cannot), and each piece of its reasoning, goes to `send`, which returns
  // false once the client is gone. `gone` says so (true on entry: nothing is
  // sent); a call whose client went away stops and counts as cancelled.
  // `probe`, when given, writes bytes the protocol ignores and returns
  // false once the client is gone: it is called as each batch of the
  // prompt but the first begins, so that a client gone during a long
  // prompt stops it there (a write to a closed connection fails by the
  // second).
  session::Outcome<session::Answer> run_streamed(
      Prepared& p, const std::vector<std::string>& stops,
      const std::function<bool(std::string_view text, std::string_view reasoning)>& send,
      bool& gone, const std::function<bool()>& probe = {});
  // A call answered whole (not streamed): `text` is its answer up to the
  // first of `stops`.
  session::Outcome<session::Answer> run_whole(Prepared& p, const std::vector<std::string>& stops,
                                              std::string& text);

  void routes(httplib::Server& s, bool socket);
  void openai_routes(httplib::Server& s);
  void ollama_routes(httplib::Server& s);
  void attach_routes(httplib::Server& s);
  std::string metrics_text();
  nlohmann::json models_json_openai() const;
};

}  // namespace quip::serve
