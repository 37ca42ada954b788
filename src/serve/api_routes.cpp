// The OpenAI and Ollama routes of `quip serve` (serve/server.h).
#include <chrono>

#include "base/text.h"
#include "serve/server_impl.h"

namespace quip::serve {

namespace fs = std::filesystem;
using namespace detail;

namespace {

// OpenAI's logprobs.content for an answer's steps.
json openai_logprobs(const session::LoadedModel& m, const session::Answer& a, int k) {
  json content = json::array();
  for (const engine::Step& st : a.steps) {
    json top = json::array();
    std::optional<double> chosen;
    for (size_t i = 0; i < st.top.size() && static_cast<int>(i) < std::max(k, 1); ++i) {
      const auto& t = st.top[i];
      if (static_cast<int>(i) < k) {
        top.push_back({{"token", m.tokenizer.decode(std::span<const int32_t>(&t.id, 1))},
                       {"logprob", t.logprob}});
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
        std::string text;
        auto answer = run_whole(*p, a.stop, text);
        if (!answer) {
          return send_openai_error(res, {http_status(answer.failure()), answer.failure().message});
        }
        json choice = {{"index", 0}, {"finish_reason", finish_reason(*answer)}};
        choice["logprobs"] =
            a.logprobs ? openai_logprobs(*p->model, *answer, a.top_logprobs) : json();
        if (chat) {
          choice["message"] = {{"role", "assistant"}, {"content", text}};
          if (!answer->reasoning.empty())
            choice["message"]["reasoning_content"] = answer->reasoning;
        } else {
          choice["text"] = text;
        }
        return send_json(res, 200,
                         {{"id", id},
                          {"object", object},
                          {"created", created},
                          {"model", p->model_name},
                          {"choices", json::array({choice})},
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
            bool gone = false;
            if (chat) {
              json first = chunk(json::array({{{"index", 0},
                                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                                               {"finish_reason", nullptr}}}));
              gone = !event(first);
            }
            auto answer = run_streamed(
                *p, a.stop,
                [&](std::string_view text, std::string_view reasoning) {
                  return event(chunk(
                      json::array({choice_piece(std::string(text), std::string(reasoning))})));
                },
                gone,
                [&] {
                  // An event of a comment alone, which SSE clients skip.
                  const std::string comment = ":\n\n";
                  return sink.write(comment.data(), comment.size());
                });
            if (gone) return false;
            if (!answer) {
              event(openai_error({http_status(answer.failure()), answer.failure().message}));
            } else {
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
        if (!path)
          return send_ollama_error(res, {404, "model '" + printable(a.model, 80) + "' not found"});
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
      const auto final_json = [piece_json, t0](const session::Answer& ans,
                                               const std::string& text) {
        json j = piece_json(text, ans.reasoning);
        j["done"] = true;
        j["done_reason"] = finish_reason(ans);
        const double total_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        add_ollama_counts(j, ans, total_ms);
        return j;
      };
      if (!a.stream) {
        std::string text;
        auto answer = run_whole(*p, a.stop, text);
        if (!answer) {
          return send_ollama_error(res, {http_status(answer.failure()), answer.failure().message});
        }
        return send_json(res, 200, final_json(*answer, text));
      }
      res.set_chunked_content_provider(
          "application/x-ndjson",
          [this, p, a, piece_json, final_json](size_t, httplib::DataSink& sink) {
            const auto line = [&](const json& j) {
              const std::string l = dump(j) + "\n";
              return sink.write(l.data(), l.size());
            };
            bool gone = false;
            auto answer = run_streamed(
                *p, a.stop,
                [&](std::string_view text, std::string_view thinking) {
                  return line(piece_json(std::string(text), std::string(thinking)));
                },
                gone,
                [&] {
                  // A space: whitespace before the next line's JSON value.
                  return sink.write(" ", 1);
                });
            if (gone) return false;
            if (!answer) {
              line({{"error", answer.failure().message}});
            } else {
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
      models.push_back({{"name", name},
                        {"model", name},
                        {"path", h.path.string()},
                        {"size", h.bytes},
                        {"size_vram", 0},
                        {"expires_at", buf},
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
    json info = {
        {"general.architecture", arch},         {"general.file", path->string()},
        {"quip.n_layer", hp.n_layer},           {"quip.n_embd", hp.n_embd},
        {"quip.n_ctx_train", hp.n_ctx_train},   {"quip.n_vocab", (*m)->tokenizer.vocab().size()},
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

}  // namespace quip::serve
