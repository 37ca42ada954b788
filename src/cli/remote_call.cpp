#include "cli/remote_call.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "base/text.h"
#include "cli/prompt_input.h"

namespace quip::cli {

namespace {

constexpr std::string_view kRecordSeparator = "#";

bool is_url(std::string_view s) {
  return s.starts_with("http://") || s.starts_with("https://");
}

// The [backends] table whose url names `endpoint`'s server, or null.
const BackendConfig* table_for(const serve::Endpoint& endpoint, const Config& config) {
  for (const auto& [name, table] : config.backends) {
    auto e = serve::parse_endpoint(table.url);
    if (e && e->base == endpoint.base) return &table;
  }
  return nullptr;
}

// The key's variable for a backend given by URL: a matching table's, else
// QUIP_API_KEY when it is set.
std::string key_env_for(const serve::Endpoint& endpoint, const Config& config) {
  if (const BackendConfig* t = table_for(endpoint, config); t != nullptr && t->api_key_env) {
    return *t->api_key_env;
  }
  const char* v = std::getenv("QUIP_API_KEY");
  return v != nullptr && *v != '\0' ? "QUIP_API_KEY" : "";
}

Result<Backend> from_table(const std::string& name, const BackendConfig& table,
                           const Config& config) {
  auto endpoint = serve::parse_endpoint(table.url);
  if (!endpoint) {
    return Error{config.file.string() + ": backends." + printable(name, 200) +
                 ".url: " + endpoint.error().message};
  }
  Backend b;
  b.endpoint = std::move(*endpoint);
  b.model = table.model.value_or("");
  b.api_key_env = table.api_key_env.value_or("");
  if (table.timeout_s) b.timeout_s = static_cast<long>(*table.timeout_s);
  return b;
}

// A recorded backend, "URL" or "URL#MODEL" (a URL never holds '#':
// parse_endpoint refuses fragments).
Result<Backend> from_record(const std::string& record, const Config& config) {
  const size_t hash = record.find(kRecordSeparator);
  auto endpoint = serve::parse_endpoint(record.substr(0, hash));
  if (!endpoint) return endpoint.error();
  Backend b;
  b.endpoint = std::move(*endpoint);
  if (hash != std::string::npos) b.model = record.substr(hash + 1);
  if (const BackendConfig* t = table_for(b.endpoint, config); t != nullptr && t->timeout_s) {
    b.timeout_s = static_cast<long>(*t->timeout_s);
  }
  b.api_key_env = key_env_for(b.endpoint, config);
  return b;
}

// The conversation's history as the API takes it: roles and contents (the
// stored reasoning is the server's own business, and strict servers refuse
// fields they do not know).
nlohmann::json api_history(const session::Base& base) {
  nlohmann::json messages = nlohmann::json::array();
  for (const auto& m : base.history()) {
    messages.push_back({{"role", m.value("role", "user")}, {"content", m.value("content", "")}});
  }
  return messages;
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

std::string Backend::record_name() const {
  return model.empty() ? endpoint.base : endpoint.base + std::string(kRecordSeparator) + model;
}

Result<std::optional<Backend>> choose_backend(const std::optional<std::string>& backend_flag,
                                              const std::optional<std::string>& model_flag,
                                              const session::Base* base, const Config& config) {
  std::optional<std::string> url = backend_flag;
  if (!url) {
    if (const char* env = std::getenv("QUIP_BACKEND"); env != nullptr && *env != '\0') url = env;
  }
  // -m naming a table: that backend, over $QUIP_BACKEND.
  if (model_flag) {
    if (auto it = config.backends.find(*model_flag); it != config.backends.end()) {
      if (backend_flag) {
        return Error{"give --backend URL or -m " + printable(*model_flag, 80) +
                     " (a [backends] table), not both"};
      }
      auto b = from_table(it->first, it->second, config);
      if (!b) return b.error();
      return std::optional<Backend>(std::move(*b));
    }
  }
  if (url) {
    auto endpoint = serve::parse_endpoint(*url);
    if (!endpoint) {
      return Error{(backend_flag ? "--backend: " : "$QUIP_BACKEND: ") + endpoint.error().message};
    }
    Backend b;
    b.endpoint = std::move(*endpoint);
    if (model_flag) {
      b.model = *model_flag;
    } else if (base != nullptr && is_url(base->turns.back().model_path)) {
      // Continuing a conversation with its own server: its model too.
      auto recorded = from_record(base->turns.back().model_path, config);
      if (recorded && recorded->endpoint.base == b.endpoint.base) b.model = recorded->model;
    }
    if (const BackendConfig* t = table_for(b.endpoint, config); t != nullptr && t->timeout_s) {
      b.timeout_s = static_cast<long>(*t->timeout_s);
    }
    b.api_key_env = key_env_for(b.endpoint, config);
    return std::optional<Backend>(std::move(b));
  }
  // The model the call would use otherwise (generate.cpp's choose_model).
  std::optional<std::string> name = model_flag;
  if (!name && base != nullptr) name = base->turns.back().model_path;
  if (!name) name = config.default_model;
  if (!name) return std::optional<Backend>();
  if (auto it = config.backends.find(*name); it != config.backends.end()) {
    auto b = from_table(it->first, it->second, config);
    if (!b) return b.error();
    return std::optional<Backend>(std::move(*b));
  }
  if (is_url(*name)) {
    auto b = from_record(*name, config);
    if (!b) return b.error();
    return std::optional<Backend>(std::move(*b));
  }
  return std::optional<Backend>();
}

Result<RemoteCall> prepare_remote_call(Backend backend, const RemoteOptions& options,
                                       session::Request& request) {
  const Settings& s = options.settings;
  RemoteCall call;
  if (!backend.api_key_env.empty()) {
    const char* key = std::getenv(backend.api_key_env.c_str());
    if (key == nullptr || *key == '\0') {
      return Error{"the backend's key variable " + backend.api_key_env + " is not set"};
    }
    call.api_key = key;
    if (call.api_key.find_first_of("\r\n") != std::string::npos) {
      return Error{"the backend's key in " + backend.api_key_env + " holds a line break"};
    }
  }
  if (request.base && request.base->raw) {
    return Error{"conversation " + std::to_string(request.base->conversation) +
                 " is a --raw one; a backend continues chats only"};
  }
  request.think = chat::ThinkMode::Hide;
  if (s.think) {
    const std::optional<chat::ThinkMode> mode = chat::parse_think_mode(*s.think);
    if (mode == chat::ThinkMode::Show) {
      request.think = *mode;
    } else if (options.think_flag && mode != chat::ThinkMode::Hide) {
      // The API has no portable way to turn reasoning off or inline.
      return Error{"--think " + printable(*s.think, 40) +
                   " needs a local model; a backend takes hide or show"};
    }
  }
  auto parts =
      read_prompt_parts({.words = options.words, .file = options.file, .read_stdin = true});
  if (!parts) return parts.error();
  if (parts->empty()) return Error{"no prompt: give PROMPT words, -f FILE or stdin"};

  call.added = nlohmann::json::array();
  if (!request.base && s.system) {
    call.added.push_back({{"role", "system"}, {"content", *s.system}});
  }
  call.added.push_back({{"role", "user"}, {"content", join_for_chat(*parts)}});
  request.messages = call.added;
  nlohmann::json messages = request.base ? api_history(*request.base) : nlohmann::json::array();
  for (const auto& m : call.added) messages.push_back(m);

  // quip's defaults are the local call's: greedy unless --temp, and a seed
  // always (a fresh one unless given, which --json reports).
  request.sampler = engine::SamplerSettings{};
  request.sampler.temperature = static_cast<float>(s.temp.value_or(0));
  request.sampler.seed =
      s.seed && *s.seed >= 0 ? static_cast<uint64_t>(*s.seed) : std::random_device{}();
  call.sent_settings = {{"temperature", s.temp.value_or(0)}, {"seed", request.sampler.seed}};
  if (s.top_p) {
    call.sent_settings["top_p"] = *s.top_p;
    request.sampler.top_p = static_cast<float>(*s.top_p);
  }
  if (s.n_predict && *s.n_predict >= 0) call.sent_settings["max_tokens"] = *s.n_predict;
  request.n_predict = s.n_predict.value_or(-1);

  call.body = nlohmann::json::object();
  if (!backend.model.empty()) call.body["model"] = backend.model;
  call.body["messages"] = std::move(messages);
  call.body["stream"] = true;
  call.body["stream_options"] = {{"include_usage", true}};
  for (const auto& [k, v] : call.sent_settings.items()) call.body[k] = v;
  call.backend = std::move(backend);
  return call;
}

session::Outcome<session::Answer> run_remote_call(const RemoteCall& call,
                                                  const session::Request& request,
                                                  const session::Callbacks& callbacks) {
  serve::ChatCall chat{
      .endpoint = call.backend.endpoint,
      .body = call.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      .api_key = call.api_key,
      .connect_timeout_s = std::min(call.backend.timeout_s, 10L),
      .idle_timeout_s = call.backend.timeout_s};
  serve::ChatHandlers handlers;
  handlers.on_content = [&](std::string_view piece) {
    return !callbacks.on_token || callbacks.on_token(-1, piece);
  };
  handlers.on_reasoning = [&](std::string_view piece) {
    if (callbacks.on_reasoning) callbacks.on_reasoning(piece);
  };
  handlers.keep_going = callbacks.keep_going;
  const auto sent = std::chrono::steady_clock::now();
  auto result = serve::stream_chat(chat, handlers);
  if (!result) {
    return session::Failure{session::FailureKind::Runtime, "backend " + result.error().message};
  }
  session::Answer a;
  a.text = std::move(result->content);
  a.reasoning = std::move(result->reasoning);
  a.interrupted = result->interrupted;
  if (a.interrupted) {
    a.stop = engine::StopReason::Caller;
  } else if (result->finish_reason == "length") {
    a.stop = engine::StopReason::Length;
  } else {
    a.stop = engine::StopReason::End;
    if (result->finish_reason && *result->finish_reason != "stop") {
      a.warnings.push_back("the backend ended the answer with finish_reason '" +
                           printable(*result->finish_reason, 40) + "'");
    }
  }
  if (result->usage) {
    const serve::ChatUsage& u = *result->usage;
    a.usage.prompt_tokens = u.prompt_tokens;
    a.usage.cached_tokens = std::min(u.cached_tokens, u.prompt_tokens);
    a.usage.evaluated_tokens = u.prompt_tokens - a.usage.cached_tokens;
    a.usage.generated_tokens = u.completion_tokens;
  }
  // load: until the connection is made; prompt: until the first piece;
  // generation: the rest.
  const double first = result->first_piece_ms > 0 ? result->first_piece_ms : result->end_ms;
  a.timings.load_ms = ms_between(request.start, sent) + result->connected_ms;
  a.timings.prompt_ms = std::max(0.0, first - result->connected_ms);
  a.timings.generation_ms = std::max(0.0, result->end_ms - first);

  store::TurnRecord turn;
  turn.model_path = call.backend.record_name();
  turn.model_fingerprint = "";  // no local model: stored tokens are never reused
  turn.sampler_json = call.sent_settings.dump();
  turn.messages_json = call.added.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  session::record_turn(request, std::move(turn), a);
  return a;
}

}  // namespace quip::cli
