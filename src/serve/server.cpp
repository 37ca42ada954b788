#include "serve/server.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <random>

#include "base/text.h"
#include "grammar/grammar.h"
#include "serve/attach.h"
#include "serve/server_impl.h"
#include "serve/socket_client.h"

namespace quip::serve {

namespace fs = std::filesystem;
using namespace detail;

std::variant<Server::Impl::Prepared, ApiError> Server::Impl::prepare(const ApiRequest& a,
                                                                     bool bounded) {
  auto path = model_named(a.model);
  if (!path) {
    return ApiError{404, "model '" + printable(a.model, 80) + "' is not served here (GET " +
                             "/v1/models lists them)"};
  }
  Prepared p;
  p.model_name = name_of(*path);
  session::Request& r = p.request;
  r.model_path = *path;
  r.cache_dir = o.cache_dir;
  r.cache_max_bytes = o.cache_max_bytes;
  if (a.chat) {
    r.messages = a.messages;
  } else if (a.raw) {
    r.raw = true;
    r.raw_text = a.prompt;
  } else {
    r.messages = json::array();
    if (a.system) r.messages.push_back({{"role", "system"}, {"content", *a.system}});
    r.messages.push_back({{"role", "user"}, {"content", a.prompt}});
  }
  if (a.temperature) r.sampler.temperature = static_cast<float>(*a.temperature);
  if (a.top_p) r.sampler.top_p = static_cast<float>(*a.top_p);
  if (a.min_p) r.sampler.min_p = static_cast<float>(*a.min_p);
  if (a.repeat_penalty) r.sampler.repeat_penalty = static_cast<float>(*a.repeat_penalty);
  if (a.top_k) r.sampler.top_k = static_cast<int32_t>(*a.top_k);
  r.sampler.seed = a.seed && *a.seed >= 0 ? static_cast<uint64_t>(*a.seed) : std::random_device{}();
  if (auto check = engine::Sampler::create(r.sampler); !check) {
    return ApiError{400, check.error().message};
  }
  r.n_predict = a.max_tokens;
  r.ignore_eos = a.ignore_eos;
  r.n_ctx = a.n_ctx;
  r.logprobs = a.logprobs ? std::max(1, a.top_logprobs) : 0;
  if (a.think && !*a.think) r.think = chat::ThinkMode::Off;
  if (a.grammar) {
    auto g = grammar::compile_gbnf(*a.grammar);
    if (!g) return ApiError{400, "the response format: " + g.error().message};
    r.grammar = *g;
    r.think = chat::ThinkMode::Off;
  }
  server_settings(r);
  if (auto e = load(p, bounded)) return *e;
  return p;
}

std::optional<ApiError> Server::Impl::load(Server::Impl::Prepared& p, bool bounded) {
  if (stopping) return ApiError{503, "the server is shutting down"};
  p.slot = acquire(!bounded, p.request.threads);
  if (!p.slot) return ApiError{503, "the server is busy: too many requests wait"};
  auto model = pool.get(p.request.model_path);
  if (!model) return ApiError{http_status(model.failure()), model.failure().message};
  p.model = *model;
  auto prompt = session::build_prompt(*p.model, p.request);
  if (!prompt) return ApiError{http_status(prompt.failure()), prompt.failure().message};
  p.prompt = std::move(*prompt);
  if (o.batching) p.batcher = batcher_for(p.model, session::context_size(*p.model, p.request));
  return std::nullopt;
}

session::Outcome<session::Answer> Server::Impl::run(Server::Impl::Prepared& p,
                                                    session::Callbacks callbacks,
                                                    const std::atomic<bool>& cancel) {
  auto caller = callbacks.keep_going;
  callbacks.keep_going = [&, caller] { return !hard_stop && !cancel && (!caller || caller()); };
  callbacks.stepper = p.batcher.get();
  if (o.cache_ram_bytes > 0) callbacks.warm = &warm;
  p.request.start = std::chrono::steady_clock::now();
  auto answer = session::generate(*p.model, p.request, p.prompt, callbacks);
  if (!answer) {
    ++failed;
    return answer;
  }
  prompt_tokens += answer->usage.prompt_tokens;
  cached_tokens += answer->usage.cached_tokens;
  generated_tokens += answer->usage.generated_tokens;
  if (answer->usage.cached_tokens > 0) ++cache_hits;
  if (cancel || hard_stop) ++cancelled;
  return answer;
}

session::Outcome<session::Answer> Server::Impl::run_streamed(
    Prepared& p, const std::vector<std::string>& stops,
    const std::function<bool(std::string_view text, std::string_view reasoning)>& send, bool& gone,
    const std::function<bool()>& probe) {
  std::atomic<bool> cancel{false};
  StopMatcher matcher(stops);
  const auto pass = [&](std::string_view text, std::string_view reasoning) {
    if (!gone && (!text.empty() || !reasoning.empty())) gone = !send(text, reasoning);
  };
  session::Callbacks cb;
  cb.on_token = [&](int32_t, std::string_view piece) {
    pass(matcher.push(piece), {});
    return !gone && !matcher.stopped();
  };
  cb.on_reasoning = [&](std::string_view piece) { pass({}, piece); };
  if (probe) {
    // Not before the first batch: a prompt of one batch sends nothing.
    cb.on_prompt_progress = [&](size_t done, size_t total, size_t cached) {
      if (!gone && done > cached && done < total) gone = !probe();
    };
  }
  cb.keep_going = [&] { return !gone; };
  auto answer = run(p, cb, cancel);
  if (gone) {
    ++cancelled;
    return answer;
  }
  if (answer) pass(matcher.flush(), {});
  return answer;
}

session::Outcome<session::Answer> Server::Impl::run_whole(Prepared& p,
                                                          const std::vector<std::string>& stops,
                                                          std::string& text) {
  bool gone = false;
  return run_streamed(
      p, stops,
      [&](std::string_view piece, std::string_view) {
        text += piece;
        return true;
      },
      gone);
}

void Server::Impl::attach_routes(httplib::Server& s) {
  s.Post("/quip/generate", [this](const httplib::Request& req, httplib::Response& res) {
    count("/quip/generate");
    res.set_header(kProtocolHeader, kProtocolVersion);
    if (req.get_header_value(kProtocolHeader) != kProtocolVersion) {
      // A quip of another version: it runs the call itself.
      res.status = 409;
      res.set_content("", "application/x-ndjson");
      return;
    }
    if (stopping) {
      // No answer at all: the shell runs the call itself.
      res.status = 503;
      res.set_content("", "application/x-ndjson");
      return;
    }
    const json body = json::parse(req.body, nullptr, false);
    auto request = request_from_json(body);
    auto p = std::make_shared<Prepared>();
    std::optional<session::Failure> failure;
    if (!request) {
      failure = request.failure();
    } else {
      p->request = std::move(*request);
      // A call that names no model gets the server's first.
      if (p->request.model_path.empty()) p->request.model_path = o.models.front().path;
      server_settings(p->request);
      if (auto e = load(*p, /*bounded=*/false)) {
        failure = session::Failure{e->status == 400   ? session::FailureKind::Usage
                                   : e->status == 500 ? session::FailureKind::BadData
                                                      : session::FailureKind::Runtime,
                                   e->message};
      }
    }
    if (failure) {
      res.set_content(dump({{"failure", failure_json(*failure)}}) + "\n", "application/x-ndjson");
      return;
    }
    res.set_chunked_content_provider("application/x-ndjson", [this, p](size_t,
                                                                       httplib::DataSink& sink) {
      auto [id, flag] = register_call();
      bool gone = false;
      const auto line = [&](const json& j) {
        const std::string l = dump(j) + "\n";
        if (!gone) gone = !sink.write(l.data(), l.size());
      };
      line({{"call", id}});
      session::Callbacks cb;
      cb.on_token = [&](int32_t tid, std::string_view text) {
        line({{"token", tid}, {"text", byte_string(text)}});
        return !gone;
      };
      cb.on_reasoning = [&](std::string_view text) { line({{"reasoning", byte_string(text)}}); };
      cb.on_prompt_progress = [&](size_t done, size_t total, size_t cached) {
        line({{"progress", {done, total, cached}}});
      };
      cb.keep_going = [&] { return !gone; };
      auto answer = run(*p, cb, *flag);
      end_call(id);
      if (gone) ++cancelled;
      if (answer) {
        line({{"answer", answer_json(*answer)}, {"prompt_tokens", p->prompt.tokens}});
      } else {
        line({{"failure", failure_json(answer.failure())}});
      }
      sink.done();
      return true;
    });
  });
  s.Post("/quip/cancel", [this](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("call") || !body["call"].is_number_integer()) {
      return send_json(res, 400, {{"error", "'call' must be an integer"}});
    }
    std::lock_guard lock(calls_mu);
    auto it = calls.find(body["call"].get<int64_t>());
    if (it == calls.end()) return send_json(res, 404, {{"error", "no such call"}});
    *it->second = true;
    send_json(res, 200, {{"cancelled", true}});
  });
  s.Post("/quip/shutdown", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"stopping", true}});
    stop_asked = true;
    // The listener cannot stop from inside a request: the main thread does.
    std::lock_guard lock(stop_mu);
    stopping = true;
    stop_cv.notify_all();
  });
}

std::string Server::Impl::metrics_text() {
  std::string out;
  const auto metric = [&](const std::string& name, const char* type, const char* help,
                          const std::string& samples) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
  };
  std::string reqs;
  {
    std::lock_guard lock(metrics_mu);
    for (const auto& [route, n] : requests) {
      reqs += "quip_requests_total{route=\"" + route + "\"} " + std::to_string(n) + "\n";
    }
  }
  metric("quip_requests_total", "counter", "Requests by route.", reqs);
  const auto one = [&](const char* name, const char* type, const char* help, uint64_t v) {
    metric(name, type, help, std::string(name) + " " + std::to_string(v) + "\n");
  };
  one("quip_requests_failed_total", "counter", "Calls that failed.", failed);
  one("quip_requests_cancelled_total", "counter",
      "Calls stopped before their end (client gone, cancel, shutdown).", cancelled);
  one("quip_prompt_tokens_total", "counter", "Prompt tokens of finished calls.", prompt_tokens);
  one("quip_cached_tokens_total", "counter", "Prompt tokens restored from the prefix cache.",
      cached_tokens);
  one("quip_generated_tokens_total", "counter", "Tokens generated.", generated_tokens);
  one("quip_cache_hits_total", "counter", "Calls that restored a cached prefix.", cache_hits);
  size_t queue = 0;
  int active = 0;
  {
    std::lock_guard lock(slots_mu);
    queue = waiting;
    active = running;
  }
  one("quip_queue_depth", "gauge", "Calls waiting for a slot.", queue);
  one("quip_active_calls", "gauge", "Calls generating now.", static_cast<uint64_t>(active));
  one("quip_batch_steps_total", "counter",
      "Decoding steps, each one forward pass for the calls generating together.", batch_steps);
  one("quip_batch_rows_total", "counter",
      "Tokens those steps decoded (over steps: the mean batch).", batch_rows);
  std::string buckets;
  uint64_t cumulative = 0;
  for (size_t b = 0; b < steps_by_rows.size(); ++b) {
    cumulative += steps_by_rows[b];
    buckets += "quip_batch_size_bucket{le=\"";
    buckets += b + 1 < steps_by_rows.size() ? std::to_string(size_t{1} << b) : "+Inf";
    buckets += "\"} " + std::to_string(cumulative) + "\n";
  }
  buckets += "quip_batch_size_sum " + std::to_string(batch_rows) + "\n";
  buckets += "quip_batch_size_count " + std::to_string(batch_steps) + "\n";
  metric("quip_batch_size", "histogram", "Calls decoded per step.", buckets);
  one("quip_models_loaded", "gauge", "Models held in memory.", pool.held().size());
  const session::WarmCache::Stats w = warm.stats();
  one("quip_cache_ram_bytes", "gauge", "Bytes of the caches kept in memory.", w.bytes);
  one("quip_cache_ram_entries", "gauge", "Caches kept in memory.", w.entries);
  one("quip_cache_ram_hits_total", "counter", "Calls that took a cache kept in memory.", w.hits);
  one("quip_cache_ram_tokens_total", "counter", "Prompt tokens those caches held.",
      w.reused_tokens);
  return out;
}

void Server::Impl::routes(httplib::Server& s, bool socket) {
  s.set_payload_max_length(o.max_body_bytes);
  // Threads for the calls that run, the ones that wait, and quick routes.
  const size_t threads = static_cast<size_t>(o.parallel) + o.max_queue + 4;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_read_timeout(30, 0);
  s.set_write_timeout(30, 0);
  if (!socket && o.api_key) {
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      if (req.get_header_value("Authorization") == "Bearer " + *o.api_key) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      send_openai_error(res, {401, "a valid API key is required (Authorization: Bearer KEY)"});
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  s.set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        ++failed;
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what += std::string(": ") + e.what();
        } catch (...) {
        }
        send_openai_error(res, {500, what});
      });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int st = res.status;
    send_json(res, st,
              openai_error({st, st == 404   ? "no such route"
                                : st == 413 ? "the request body is too large"
                                            : "the request failed"}));
  });
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, stopping ? 503 : 200, {{"status", stopping ? "stopping" : "ok"}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  openai_routes(s);
  ollama_routes(s);
  if (socket) attach_routes(s);
}

Server::Server(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->routes(impl_->unix_server, true);
  impl_->routes(impl_->tcp_server, false);
}

Server::~Server() = default;

namespace {

// bind_to_port with room for a burst of connections. cpp-httplib listens
// with a backlog of CPPHTTPLIB_LISTEN_BACKLOG, 5, compiled into Debian's
// library (a definition here does not reach it): the sixth of a burst of
// shell calls connecting at once, while the accepting thread waits for a
// core, is refused and runs in-process. Linux takes a second listen() on a
// listening socket as its new backlog.
bool bind_with_backlog(httplib::Server& s, const std::string& host, int port) {
  int fd = -1;
  s.set_socket_options([&fd](socket_t sock) {
    httplib::default_socket_options(sock);
    fd = sock;  // the last one tried is the one bound
  });
  if (!s.bind_to_port(host, port)) return false;
  s.set_socket_options(httplib::default_socket_options);
  return fd >= 0 && ::listen(fd, SOMAXCONN) == 0;
}

}  // namespace

Result<void> Server::bind() {
  Impl& i = *impl_;
  const fs::path& sock = i.o.socket;
  std::error_code ec;
  fs::create_directories(sock.parent_path(), ec);
  if (ec) return Error{sock.parent_path().string() + ": " + ec.message()};
  if (fs::exists(sock, ec)) {
    // A live server answers there; a stale socket (a server killed) does not.
    if (auto r = socket_client(sock, 1).Get("/health"); r) {
      return Error{"a quip server is already running on " + sock.string() +
                   " (quip serve --stop stops it)"};
    }
    fs::remove(sock, ec);
  }
  if (sock.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Error{sock.string() + ": the socket path is too long (at most 107 bytes)"};
  }
  i.unix_server.set_address_family(AF_UNIX);
  // Only this user may connect: the socket is created 0600.
  const mode_t old = umask(0177);
  const bool bound = bind_with_backlog(i.unix_server, sock.string(), 80);
  umask(old);
  if (!bound) return Error{sock.string() + ": cannot listen on this socket"};
  if (i.o.port) {
    const std::string host = i.o.host.value_or("127.0.0.1");
    if (!bind_with_backlog(i.tcp_server, host, *i.o.port)) {
      return Error{host + ":" + std::to_string(*i.o.port) +
                   ": cannot listen there (in use, or not an address of this machine)"};
    }
  }
  return {};
}

void Server::serve() {
  Impl& i = *impl_;
  if (i.o.port) {
    i.tcp_thread = std::thread([&i] { i.tcp_server.listen_after_bind(); });
  }
  std::thread unix_thread([&i] { i.unix_server.listen_after_bind(); });
  // Models idle past the keep-alive go; a stop ends the wait.
  {
    std::unique_lock lock(i.stop_mu);
    while (!i.stopping) {
      i.stop_cv.wait_for(lock, std::chrono::seconds(1));
      lock.unlock();
      for (const std::string& fingerprint : i.pool.unload_idle()) {
        i.warm.drop_model(fingerprint);
      }
      i.forget_idle_batchers();
      lock.lock();
    }
  }
  // Drain. New requests get 503 (and the shell, finding no socket, runs its
  // calls itself); the calls in flight get the grace period, then are
  // stopped (each records what it generated). Only then do the listeners
  // stop: cpp-httplib cuts the streams it is writing when they do.
  std::error_code ec;
  fs::remove(i.o.socket, ec);
  const auto idle = [&i] {
    std::lock_guard sl(i.slots_mu);
    return i.running == 0 && i.waiting == 0;
  };
  const auto deadline = std::chrono::steady_clock::now() + i.o.grace;
  while (!idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  i.hard_stop = true;
  while (!idle()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  i.unix_server.stop();
  if (i.o.port) i.tcp_server.stop();
  unix_thread.join();
  if (i.tcp_thread.joinable()) i.tcp_thread.join();
}

void Server::stop() {
  std::lock_guard lock(impl_->stop_mu);
  impl_->stopping = true;
  impl_->stop_cv.notify_all();
}

bool Server::stop_requested() const {
  return impl_->stop_asked;
}

}  // namespace quip::serve
