#include "serve/server.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/text.h"
#include "grammar/grammar.h"
#include "serve/api.h"
#include "serve/attach.h"
#include "serve/model_pool.h"
#include "session/session.h"

namespace quip::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// JSON out: bytes that are not UTF-8 (a model may write them) are replaced,
// never a reason to fail an answer.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A file's modification time in seconds since 1970; 0 when unknown.
int64_t modified_unix(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

int http_status(const session::Failure& f) {
  switch (f.kind) {
    case session::FailureKind::Usage: return 400;
    case session::FailureKind::BadData:
    case session::FailureKind::Runtime: return 500;
  }
  return 500;
}

}  // namespace

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
      : o(std::move(options)), pool(o.keep_alive) {}

  // A running slot, released when the last holder drops it.
  struct Slot {
    Impl* impl;
    ~Slot() {
      std::lock_guard lock(impl->slots_mu);
      --impl->running;
      impl->slots_cv.notify_one();
    }
  };
  // Waits for a slot; none when the queue is full (bounded unless `wait_always`).
  std::shared_ptr<Slot> acquire(bool wait_always) {
    std::unique_lock lock(slots_mu);
    if (running >= o.parallel && !wait_always && waiting >= o.max_queue) return nullptr;
    ++waiting;
    slots_cv.wait(lock, [&] { return running < o.parallel; });
    --waiting;
    ++running;
    return std::shared_ptr<Slot>(new Slot{this});
  }

  void count(const std::string& route) {
    std::lock_guard lock(metrics_mu);
    ++requests[route];
  }

  // The model a client names: a known name, or with none the default.
  std::optional<fs::path> model_named(const std::string& name) const {
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

  std::string name_of(const fs::path& p) const {
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
  };

  // The request's defaults that the server sets (threads, kernels, cache).
  void server_settings(session::Request& r) const {
    r.threads = std::max(1, o.threads / std::max(1, o.parallel));
    r.isa = o.isa;
    if (r.n_ctx == 0) r.n_ctx = o.n_ctx;
  }

  // An API request as a session request on a model; errors as HTTP ones.
  std::variant<Prepared, ApiError> prepare(const ApiRequest& a, bool bounded) {
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

  // The slot, the model and the prompt of `p`, whose request is set.
  std::optional<ApiError> load(Prepared& p, bool bounded) {
    if (stopping) return ApiError{503, "the server is shutting down"};
    p.slot = acquire(!bounded);
    if (!p.slot) return ApiError{503, "the server is busy: too many requests wait"};
    auto model = pool.get(p.request.model_path);
    if (!model) return ApiError{http_status(model.failure()), model.failure().message};
    p.model = *model;
    auto prompt = session::build_prompt(*p.model, p.request);
    if (!prompt) return ApiError{http_status(prompt.failure()), prompt.failure().message};
    p.prompt = std::move(*prompt);
    return std::nullopt;
  }

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
                                        const std::atomic<bool>& cancel) {
    auto caller = callbacks.keep_going;
    callbacks.keep_going = [&, caller] {
      return !hard_stop && !cancel && (!caller || caller());
    };
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

  void routes(httplib::Server& s, bool socket);
  void openai_routes(httplib::Server& s);
  void ollama_routes(httplib::Server& s);
  void attach_routes(httplib::Server& s);
  std::string metrics_text();
  json models_json_openai() const;
};

namespace {

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

void send_openai_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, openai_error(e));
}

void send_ollama_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  send_json(res, e.status, {{"error", e.message}});
}

// OpenAI's logprobs.content for an answer's steps.
json openai_logprobs(const session::LoadedModel& m, const session::Answer& a, int k) {
  json content = json::array();
  for (const engine::Step& st : a.steps) {
    json top = json::array();
    std::optional<double> chosen;
    for (size_t i = 0; i < st.top.size() && static_cast<int>(i) < std::max(k, 1); ++i) {
      const auto& t = st.top[i];
      if (static_cast<int>(i) < k) {
        top.push_back({{"token", m.tokenizer.decode(std::span<const int32_t>(&t.id, 1))}, {"logprob", t.logprob}});
      }
    }
    for (const auto& t : st.top) {
      if (t.id == st.id) chosen = t.logprob;
    }
    content.push_back({{"token", m.tokenizer.decode(std::span<const int32_t>(&st.id, 1))},
                       {"logprob", chosen ? json(*chosen) : json()},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

}  // namespace

void Server::Impl::openai_routes(httplib::Server& s) {
  const auto completion = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      count(chat ? "/v1/chat/completions" : "/v1/completions");
      Parsed parsed = chat ? parse_openai_chat(req.body) : parse_openai_completion(req.body);
      if (auto* e = std::get_if<ApiError>(&parsed)) return send_openai_error(res, *e);
      const ApiRequest a = std::get<ApiRequest>(parsed);
      auto prepared = prepare(a, /*bounded=*/true);
      if (auto* e = std::get_if<ApiError>(&prepared)) return send_openai_error(res, *e);
      auto p = std::make_shared<Prepared>(std::move(std::get<Prepared>(prepared)));
      const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_call++);
      const int64_t created = unix_now();
      const std::string object = chat ? "chat.completion" : "text_completion";
      const auto choice_piece = [chat](const std::string& text, const std::string& reasoning) {
        json delta = json::object();
        if (!text.empty()) delta["content"] = text;
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        return chat ? json{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}}
                    : json{{"index", 0}, {"text", text}, {"finish_reason", nullptr}};
      };
      if (!a.stream) {
        std::atomic<bool> cancel{false};
        StopMatcher stops(a.stop);
        std::string text;
        session::Callbacks cb;
        cb.on_token = [&](int32_t, std::string_view piece) {
          text += stops.push(piece);
          return !stops.stopped();
        };
        auto answer = run(*p, cb, cancel);
        if (!answer) return send_openai_error(res, {http_status(answer.failure()), answer.failure().message});
        text += stops.flush();
        json choice = {{"index", 0}, {"finish_reason", finish_reason(*answer)}};
        choice["logprobs"] = a.logprobs ? openai_logprobs(*p->model, *answer, a.top_logprobs) : json();
        if (chat) {
          choice["message"] = {{"role", "assistant"}, {"content", text}};
          if (!answer->reasoning.empty()) choice["message"]["reasoning_content"] = answer->reasoning;
        } else {
          choice["text"] = text;
        }
        return send_json(res, 200,
                         {{"id", id}, {"object", object}, {"created", created},
                          {"model", p->model_name}, {"choices", json::array({choice})},
                          {"usage", openai_usage(*answer)},
                          {"system_fingerprint", "quip-" + o.version}});
      }
      const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream", [this, p, a, id, created, chunk_object, chat, choice_piece](
                                   size_t, httplib::DataSink& sink) {
            const auto event = [&](const json& j) {
              const std::string line = "data: " + dump(j) + "\n\n";
              return sink.write(line.data(), line.size());
            };
            const auto chunk = [&](json choices) {
              return json{{"id", id},
                          {"object", chunk_object},
                          {"created", created},
                          {"model", p->model_name},
                          {"system_fingerprint", "quip-" + o.version},
                          {"choices", std::move(choices)}};
            };
            std::atomic<bool> cancel{false};
            bool gone = false;
            if (chat) {
              json first = chunk(json::array(
                  {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                    {"finish_reason", nullptr}}}));
              gone = !event(first);
            }
            StopMatcher stops(a.stop);
            session::Callbacks cb;
            cb.on_token = [&](int32_t, std::string_view piece) {
              const std::string out = stops.push(piece);
              if (!out.empty() && !gone) gone = !event(chunk(json::array({choice_piece(out, "")})));
              return !gone && !stops.stopped();
            };
            cb.on_reasoning = [&](std::string_view piece) {
              if (!gone) {
                gone = !event(chunk(json::array({choice_piece("", std::string(piece))})));
              }
            };
            cb.keep_going = [&] { return !gone; };
            auto answer = run(*p, cb, cancel);
            if (gone) {
              ++cancelled;
              return false;
            }
            if (!answer) {
              event(openai_error({http_status(answer.failure()), answer.failure().message}));
            } else {
              if (std::string rest = stops.flush(); !rest.empty()) {
                event(chunk(json::array({choice_piece(rest, "")})));
              }
              json last = chat ? json{{"index", 0}, {"delta", json::object()}}
                               : json{{"index", 0}, {"text", ""}};
              last["finish_reason"] = finish_reason(*answer);
              event(chunk(json::array({last})));
              if (a.include_usage) {
                json u = chunk(json::array());
                u["usage"] = openai_usage(*answer);
                event(u);
              }
            }
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
          });
    };
  };
  s.Post("/v1/chat/completions", completion(true));
  s.Post("/v1/completions", completion(false));
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    count("/v1/models");
    send_json(res, 200, models_json_openai());
  });
}

json Server::Impl::models_json_openai() const {
  json data = json::array();
  for (const auto& m : o.models) {
    if (!m.listed) continue;
    data.push_back({{"id", m.name},
                    {"object", "model"},
                    {"created", modified_unix(m.path)},
                    {"owned_by", "quip"}});
  }
  return {{"object", "list"}, {"data", data}};
}

void Server::Impl::ollama_routes(httplib::Server& s) {
  const auto answer_route = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      count(chat ? "/api/chat" : "/api/generate");
      const auto t0 = std::chrono::steady_clock::now();
      Parsed parsed = chat ? parse_ollama_chat(req.body) : parse_ollama_generate(req.body);
      if (auto* e = std::get_if<ApiError>(&parsed)) return send_ollama_error(res, *e);
      const ApiRequest a = std::get<ApiRequest>(parsed);
      const auto base = [name = a.model] {
        return json{{"model", name}, {"created_at", iso8601_now()}};
      };
      if (!chat && a.prompt.empty() && !a.system) {
        // An empty generate loads the model, as Ollama's does.
        auto path = model_named(a.model);
        if (!path) return send_ollama_error(res, {404, "model '" + printable(a.model, 80) + "' not found"});
        if (auto m = pool.get(*path); !m) {
          return send_ollama_error(res, {http_status(m.failure()), m.failure().message});
        }
        json j = base();
        j["response"] = "";
        j["done"] = true;
        j["done_reason"] = "load";
        return send_json(res, 200, j);
      }
      auto prepared = prepare(a, /*bounded=*/true);
      if (auto* e = std::get_if<ApiError>(&prepared)) {
        if (e->status == 404) e->message = "model '" + printable(a.model, 80) + "' not found";
        return send_ollama_error(res, *e);
      }
      auto p = std::make_shared<Prepared>(std::move(std::get<Prepared>(prepared)));
      const auto piece_json = [chat, base](const std::string& text, const std::string& thinking) {
        json j = base();
        if (chat) {
          j["message"] = {{"role", "assistant"}, {"content", text}};
          if (!thinking.empty()) j["message"]["thinking"] = thinking;
        } else {
          j["response"] = text;
          if (!thinking.empty()) j["thinking"] = thinking;
        }
        j["done"] = false;
        return j;
      };
      const auto final_json = [chat, piece_json, t0](const session::Answer& ans,
                                                      const std::string& text) {
        json j = piece_json(text, ans.reasoning);
        j["done"] = true;
        j["done_reason"] = finish_reason(ans);
        const double total_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        add_ollama_counts(j, ans, total_ms);
        (void)chat;
        return j;
      };
      if (!a.stream) {
        std::atomic<bool> cancel{false};
        StopMatcher stops(a.stop);
        std::string text;
        session::Callbacks cb;
        cb.on_token = [&](int32_t, std::string_view piece) {
          text += stops.push(piece);
          return !stops.stopped();
        };
        auto answer = run(*p, cb, cancel);
        if (!answer) return send_ollama_error(res, {http_status(answer.failure()), answer.failure().message});
        text += stops.flush();
        return send_json(res, 200, final_json(*answer, text));
      }
      res.set_chunked_content_provider(
          "application/x-ndjson", [this, p, a, piece_json, final_json](size_t, httplib::DataSink& sink) {
            bool gone = false;
            const auto line = [&](const json& j) {
              const std::string l = dump(j) + "\n";
              if (!gone) gone = !sink.write(l.data(), l.size());
            };
            std::atomic<bool> cancel{false};
            StopMatcher stops(a.stop);
            session::Callbacks cb;
            cb.on_token = [&](int32_t, std::string_view piece) {
              if (std::string out = stops.push(piece); !out.empty()) line(piece_json(out, ""));
              return !gone && !stops.stopped();
            };
            cb.on_reasoning = [&](std::string_view piece) { line(piece_json("", std::string(piece))); };
            cb.keep_going = [&] { return !gone; };
            auto answer = run(*p, cb, cancel);
            if (gone) {
              ++cancelled;
              return false;
            }
            if (!answer) {
              line({{"error", answer.failure().message}});
            } else {
              if (std::string rest = stops.flush(); !rest.empty()) line(piece_json(rest, ""));
              json last = final_json(*answer, "");
              if (last.contains("message")) last["message"].erase("thinking");
              last.erase("thinking");
              line(last);
            }
            sink.done();
            return true;
          });
    };
  };
  s.Post("/api/chat", answer_route(true));
  s.Post("/api/generate", answer_route(false));

  const auto model_entry = [this](const ServeOptions::Named& m) {
    std::error_code ec;
    const uint64_t size = fs::file_size(m.path, ec);
    return json{{"name", m.name},
                {"model", m.name},
                {"size", ec ? 0 : size},
                {"digest", ""},
                {"details", {{"format", "gguf"}}}};
  };
  s.Get("/api/tags", [this, model_entry](const httplib::Request&, httplib::Response& res) {
    count("/api/tags");
    json models = json::array();
    for (const auto& m : o.models) {
      if (!m.listed) continue;
      json e = model_entry(m);
      e["modified_at"] = modified_unix(m.path);
      models.push_back(e);
    }
    send_json(res, 200, {{"models", models}});
  });
  s.Get("/api/ps", [this](const httplib::Request&, httplib::Response& res) {
    count("/api/ps");
    json models = json::array();
    for (const ModelPool::Held& h : pool.held()) {
      const std::string name = name_of(h.path);
      const auto expires = std::chrono::system_clock::to_time_t(h.expires);
      std::tm tm{};
      gmtime_r(&expires, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      models.push_back({{"name", name}, {"model", name}, {"path", h.path.string()},
                        {"size", h.bytes}, {"size_vram", 0}, {"expires_at", buf},
                        {"in_use", h.in_use}});
    }
    send_json(res, 200, {{"models", models}});
  });
  s.Post("/api/show", [this](const httplib::Request& req, httplib::Response& res) {
    count("/api/show");
    auto name = parse_ollama_show(req.body);
    if (auto* e = std::get_if<ApiError>(&name)) return send_ollama_error(res, *e);
    const std::string& n = std::get<std::string>(name);
    auto path = model_named(n);
    if (!path) return send_ollama_error(res, {404, "model '" + printable(n, 80) + "' not found"});
    auto m = pool.get(*path);
    if (!m) return send_ollama_error(res, {http_status(m.failure()), m.failure().message});
    const auto& hp = (*m)->model.hparams();
    const std::string arch((*m)->model.arch().name);
    json info = {{"general.architecture", arch},
                 {"general.file", path->string()},
                 {"quip.n_layer", hp.n_layer},
                 {"quip.n_embd", hp.n_embd},
                 {"quip.n_ctx_train", hp.n_ctx_train},
                 {"quip.n_vocab", (*m)->tokenizer.vocab().size()},
                 {"quip.fingerprint", (*m)->fingerprint}};
    send_json(res, 200,
              {{"details", {{"format", "gguf"}, {"family", arch}}},
               {"model_info", info},
               {"modelfile", "FROM " + path->string() + "\n"},
               {"parameters", ""},
               {"template", ""}});
  });
  s.Get("/api/version", [this](const httplib::Request&, httplib::Response& res) {
    count("/api/version");
    send_json(res, 200, {{"version", o.version}});
  });
}

void Server::Impl::attach_routes(httplib::Server& s) {
  s.Post("/quip/generate", [this](const httplib::Request& req, httplib::Response& res) {
    count("/quip/generate");
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
      server_settings(p->request);
      if (auto e = load(*p, /*bounded=*/false)) {
        failure = session::Failure{e->status == 400 ? session::FailureKind::Usage
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
  // Without continuous batching yet, each forward step carries one sequence.
  one("quip_batch_size", "gauge", "Sequences per forward step.", active > 0 ? 1 : 0);
  one("quip_models_loaded", "gauge", "Models held in memory.", pool.held().size());
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
  s.set_exception_handler([this](const httplib::Request&, httplib::Response& res,
                                 std::exception_ptr ep) {
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

Result<void> Server::bind() {
  Impl& i = *impl_;
  const fs::path& sock = i.o.socket;
  std::error_code ec;
  fs::create_directories(sock.parent_path(), ec);
  if (ec) return Error{sock.parent_path().string() + ": " + ec.message()};
  if (fs::exists(sock, ec)) {
    // A live server answers there; a stale socket (a server killed) does not.
    httplib::Client probe(sock.string());
    probe.set_address_family(AF_UNIX);
    probe.set_connection_timeout(1, 0);
    if (auto r = probe.Get("/health"); r) {
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
  const bool bound = i.unix_server.bind_to_port(sock.string(), 80);
  umask(old);
  if (!bound) return Error{sock.string() + ": cannot listen on this socket"};
  if (i.o.port) {
    const std::string host = i.o.host.value_or("127.0.0.1");
    if (!i.tcp_server.bind_to_port(host, *i.o.port)) {
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
      i.pool.unload_idle();
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

bool Server::stop_requested() const { return impl_->stop_asked; }

}  // namespace quip::serve
