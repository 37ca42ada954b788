#include "serve/api.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "base/text.h"
#include "grammar/json_schema.h"

namespace quip::serve {

namespace {

using nlohmann::json;

// A field of the wrong type or range: the message names it and what it must be.
struct Bad {
  std::string message;
};

ApiError bad(std::string message) {
  return ApiError{400, std::move(message)};
}

// The body as a JSON object, or why not.
std::variant<json, ApiError> object_body(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("the request body is not valid JSON");
  if (!j.is_object()) return bad("the request body must be a JSON object");
  return j;
}

// Typed optional fields: absent or null is unset; anything else of the
// wrong type is an error naming the field.
std::optional<Bad> read_bool(const json& o, const char* key, std::optional<bool>& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Bad{std::string("'") + key + "' must be true or false"};
  out = it->get<bool>();
  return std::nullopt;
}

std::optional<Bad> read_number(const json& o, const char* key, std::optional<double>& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return Bad{std::string("'") + key + "' must be a number"};
  }
  out = it->get<double>();
  return std::nullopt;
}

std::optional<Bad> read_integer(const json& o, const char* key, std::optional<int64_t>& out,
                                int64_t lo, int64_t hi) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  const bool whole_double = it->is_number_float() && std::isfinite(it->get<double>()) &&
                            std::floor(it->get<double>()) == it->get<double>() &&
                            std::fabs(it->get<double>()) < 9.0e18;
  if (!it->is_number_integer() && !whole_double) {
    return Bad{std::string("'") + key + "' must be an integer"};
  }
  // (Appended piece by piece: GCC 12 warns falsely of overlap on "[" + ...)
  std::string range = "[";
  range += std::to_string(lo);
  range += ", ";
  range += std::to_string(hi);
  range += "]";
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Bad{std::string("'") + key + "' must be in " + range};
  }
  const int64_t v =
      it->is_number_integer() ? it->get<int64_t>() : static_cast<int64_t>(it->get<double>());
  if (v < lo || v > hi) return Bad{std::string("'") + key + "' must be in " + range};
  out = v;
  return std::nullopt;
}

// "stop": a string or an array of strings.
std::optional<Bad> read_stops(const json& o, const char* key, std::vector<std::string>& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  const std::string must = std::string("'") + key + "' must be a string or an array of strings";
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    if (it->size() > 16) return Bad{std::string("'") + key + "' has more than 16 strings"};
    for (const json& s : *it) {
      if (!s.is_string()) return Bad{must};
      out.push_back(s.get<std::string>());
    }
  } else {
    return Bad{must};
  }
  std::erase_if(out, [](const std::string& s) { return s.empty(); });
  return std::nullopt;
}

// A message's content: a string, or OpenAI's array of text parts.
std::variant<std::string, Bad> content_text(const json& c, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (c.is_null()) return std::string();
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return Bad{"'" + where + "' must be a string or an array of text parts"};
  std::string text;
  for (const json& part : c) {
    if (!part.is_object()) return Bad{"'" + where + "' must hold objects"};
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return Bad{"'" + where + "' has a part without a 'type'"};
    }
    if (*type != "text") {
      return Bad{"'" + where + "': a part of type '" + printable(type->get<std::string>(), 40) +
                 "' is not supported (text only)"};
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      return Bad{"'" + where + "' has a text part without a string 'text'"};
    }
    text += t->get<std::string>();
  }
  return text;
}

std::optional<Bad> read_messages(const json& o, ApiRequest& r) {
  auto it = o.find("messages");
  if (it == o.end() || !it->is_array()) return Bad{"'messages' must be an array of messages"};
  if (it->empty()) return Bad{"'messages' is empty"};
  size_t i = 0;
  for (const json& m : *it) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return Bad{"'" + where + "' must be an object"};
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return Bad{"'" + where + ".role' must be a string"};
    }
    const std::string rs = role->get<std::string>();
    static constexpr const char* kRoles[] = {"system", "user", "assistant", "tool", "developer"};
    if (std::find(std::begin(kRoles), std::end(kRoles), rs) == std::end(kRoles)) {
      return Bad{"'" + where + ".role' is '" + printable(rs, 40) +
                 "'; expected system, user, assistant, tool or developer"};
    }
    if (auto images = m.find("images");
        images != m.end() && !images->is_null() && !(images->is_array() && images->empty())) {
      return Bad{"'" + where + ".images': images are not supported"};
    }
    auto c = m.find("content");
    auto text = content_text(c == m.end() ? json() : *c, i);
    if (auto* b = std::get_if<Bad>(&text)) return *b;
    // OpenAI's "developer" is the system message of newer models.
    json msg = {{"role", rs == "developer" ? "system" : rs},
                {"content", std::get<std::string>(text)}};
    for (const char* extra : {"reasoning_content", "thinking"}) {
      if (auto e = m.find(extra);
          e != m.end() && e->is_string() && !e->get<std::string>().empty()) {
        msg["reasoning_content"] = e->get<std::string>();
      }
    }
    r.messages.push_back(std::move(msg));
    ++i;
  }
  return std::nullopt;
}

// A JSON Schema (or Ollama's "json") as the GBNF that constrains the answer.
std::optional<Bad> schema_grammar(const nlohmann::ordered_json& schema, ApiRequest& r,
                                  const char* where) {
  auto gbnf = grammar::json_schema_to_gbnf(schema);
  if (!gbnf) return Bad{std::string("'") + where + "': " + gbnf.error().message};
  r.grammar = std::move(*gbnf);
  return std::nullopt;
}

// The body again with object keys in their order, for a schema's properties.
nlohmann::ordered_json ordered(std::string_view body) {
  return nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
}

// OpenAI's fields common to chat and text completions.
std::optional<Bad> read_openai(const json& o, std::string_view body, ApiRequest& r) {
  if (auto m = o.find("model"); m != o.end() && !m->is_null()) {
    if (!m->is_string()) return Bad{"'model' must be a string"};
    r.model = m->get<std::string>();
  }
  std::optional<bool> stream, logprobs;
  if (auto b = read_bool(o, "stream", stream)) return b;
  r.stream = stream.value_or(false);
  if (auto so = o.find("stream_options"); so != o.end() && !so->is_null()) {
    if (!so->is_object()) return Bad{"'stream_options' must be an object"};
    std::optional<bool> usage;
    if (auto b = read_bool(*so, "include_usage", usage)) return b;
    r.include_usage = usage.value_or(false);
  }
  std::optional<int64_t> max_tokens, n, top_logprobs;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (auto b = read_integer(o, key, max_tokens, 0, INT32_MAX)) return b;
  }
  if (max_tokens) r.max_tokens = *max_tokens;
  if (auto b = read_integer(o, "n", n, 1, 1)) return Bad{"'n' must be 1: one answer per request"};
  if (auto b = read_number(o, "temperature", r.temperature)) return b;
  if (auto b = read_number(o, "top_p", r.top_p)) return b;
  if (auto b = read_number(o, "min_p", r.min_p)) return b;
  if (auto b = read_number(o, "repeat_penalty", r.repeat_penalty)) return b;
  if (auto b = read_integer(o, "top_k", r.top_k, 0, INT32_MAX)) return b;
  if (auto b = read_integer(o, "seed", r.seed, INT64_MIN, INT64_MAX)) return b;
  if (auto b = read_stops(o, "stop", r.stop)) return b;
  if (auto b = read_bool(o, "logprobs", logprobs)) return b;
  r.logprobs = logprobs.value_or(false);
  std::optional<bool> ignore_eos;
  if (auto b = read_bool(o, "ignore_eos", ignore_eos)) return b;
  r.ignore_eos = ignore_eos.value_or(false);
  if (auto b = read_integer(o, "top_logprobs", top_logprobs, 0, 20)) return b;
  r.top_logprobs = static_cast<int>(top_logprobs.value_or(0));
  if (auto effort = o.find("reasoning_effort"); effort != o.end() && effort->is_string()) {
    if (*effort == "none") r.think = false;
  }
  if (auto rf = o.find("response_format"); rf != o.end() && !rf->is_null()) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      return Bad{"'response_format' must be an object with a string 'type'"};
    }
    const std::string type = (*rf)["type"];
    if (type == "json_object") {
      return schema_grammar(nlohmann::ordered_json{{"type", "object"}}, r, "response_format");
    }
    if (type == "json_schema") {
      const nlohmann::ordered_json all = ordered(body);
      const auto& spec = all["response_format"];
      if (!spec.contains("json_schema") || !spec["json_schema"].is_object()) {
        return Bad{"'response_format.json_schema' must be an object"};
      }
      const auto& js = spec["json_schema"];
      // OpenAI nests the schema under "schema"; some clients send it bare.
      return schema_grammar(js.contains("schema") ? js["schema"] : js, r,
                            "response_format.json_schema");
    }
    if (type != "text") {
      return Bad{"'response_format.type' is '" + printable(type, 40) +
                 "'; expected text, json_object or json_schema"};
    }
  }
  return std::nullopt;
}

// Ollama's fields common to chat and generate.
std::optional<Bad> read_ollama(const json& o, std::string_view body, ApiRequest& r) {
  auto m = o.find("model");
  if (m == o.end() || !m->is_string()) return Bad{"'model' must be a string"};
  r.model = m->get<std::string>();
  std::optional<bool> stream;
  if (auto b = read_bool(o, "stream", stream)) return b;
  r.stream = stream.value_or(true);  // Ollama streams unless told not to
  if (auto b = read_bool(o, "think", r.think)) return b;
  if (auto opt = o.find("options"); opt != o.end() && !opt->is_null()) {
    if (!opt->is_object()) return Bad{"'options' must be an object"};
    std::optional<int64_t> num_predict, num_ctx;
    if (auto b = read_integer(*opt, "num_predict", num_predict, -2, INT32_MAX)) return b;
    if (num_predict && *num_predict >= 0) r.max_tokens = *num_predict;
    if (auto b = read_integer(*opt, "num_ctx", num_ctx, 0, INT32_MAX)) return b;
    r.n_ctx = static_cast<size_t>(num_ctx.value_or(0));
    if (auto b = read_number(*opt, "temperature", r.temperature)) return b;
    if (auto b = read_number(*opt, "top_p", r.top_p)) return b;
    if (auto b = read_number(*opt, "min_p", r.min_p)) return b;
    if (auto b = read_number(*opt, "repeat_penalty", r.repeat_penalty)) return b;
    if (auto b = read_integer(*opt, "top_k", r.top_k, 0, INT32_MAX)) return b;
    if (auto b = read_integer(*opt, "seed", r.seed, INT64_MIN, INT64_MAX)) return b;
    if (auto b = read_stops(*opt, "stop", r.stop)) return b;
  }
  if (auto f = o.find("format"); f != o.end() && !f->is_null()) {
    if (f->is_string()) {
      if (*f != "json") return Bad{"'format' must be \"json\" or a JSON Schema object"};
      return schema_grammar(nlohmann::ordered_json::object(), r, "format");
    }
    if (!f->is_object()) return Bad{"'format' must be \"json\" or a JSON Schema object"};
    return schema_grammar(ordered(body)["format"], r, "format");
  }
  return std::nullopt;
}

template <class Read>
Parsed parse_with(std::string_view body, Read read) {
  auto o = object_body(body);
  if (auto* e = std::get_if<ApiError>(&o)) return *e;
  ApiRequest r;
  if (std::optional<Bad> b = read(std::get<json>(o), r)) return bad(std::move(b->message));
  return r;
}

}  // namespace

Parsed parse_openai_chat(std::string_view body) {
  return parse_with(body, [&](const json& o, ApiRequest& r) -> std::optional<Bad> {
    if (auto b = read_messages(o, r)) return b;
    return read_openai(o, body, r);
  });
}

Parsed parse_openai_completion(std::string_view body) {
  return parse_with(body, [&](const json& o, ApiRequest& r) -> std::optional<Bad> {
    r.chat = false;
    r.raw = true;
    auto p = o.find("prompt");
    if (p != o.end() && p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else if (p != o.end() && p->is_string()) {
      r.prompt = p->get<std::string>();
    } else {
      return Bad{"'prompt' must be a string"};
    }
    if (r.prompt.empty()) return Bad{"'prompt' is empty"};
    return read_openai(o, body, r);
  });
}

Parsed parse_ollama_chat(std::string_view body) {
  return parse_with(body, [&](const json& o, ApiRequest& r) -> std::optional<Bad> {
    if (auto b = read_messages(o, r)) return b;
    return read_ollama(o, body, r);
  });
}

Parsed parse_ollama_generate(std::string_view body) {
  return parse_with(body, [&](const json& o, ApiRequest& r) -> std::optional<Bad> {
    r.chat = false;
    if (auto p = o.find("prompt"); p != o.end() && !p->is_null()) {
      if (!p->is_string()) return Bad{"'prompt' must be a string"};
      r.prompt = p->get<std::string>();
    }
    if (auto s = o.find("system"); s != o.end() && !s->is_null()) {
      if (!s->is_string()) return Bad{"'system' must be a string"};
      r.system = s->get<std::string>();
    }
    std::optional<bool> raw;
    if (auto b = read_bool(o, "raw", raw)) return b;
    r.raw = raw.value_or(false);
    return read_ollama(o, body, r);
  });
}

std::variant<std::string, ApiError> parse_ollama_show(std::string_view body) {
  auto o = object_body(body);
  if (auto* e = std::get_if<ApiError>(&o)) return *e;
  const json& j = std::get<json>(o);
  for (const char* key : {"model", "name"}) {
    if (auto m = j.find(key); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  return bad("'model' must be a string");
}

json openai_error(const ApiError& e) {
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 503 ? "unavailable_error"
                     : e.status >= 500 ? "server_error"
                                       : "invalid_request_error";
  return {{"error", {{"message", e.message}, {"type", type}, {"code", e.status}}}};
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopMatcher::push(std::string_view piece) {
  if (stopped_) return {};
  held_ += piece;
  // The earliest complete stop string, and the earliest place where one
  // may still complete (a tail of the text that begins some stop string):
  // the text stops at the former only when nothing before it is pending.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  size_t pending = held_.size();
  for (const std::string& s : stops_) {
    for (size_t q = held_.size() - std::min(held_.size(), s.size() - 1); q < pending; ++q) {
      if (held_.compare(q, std::string::npos, s, 0, held_.size() - q) == 0) {
        pending = q;
        break;
      }
    }
  }
  if (first != std::string::npos && first <= pending) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  const size_t safe = std::min(pending, first);
  std::string out = held_.substr(0, safe);
  held_.erase(0, safe);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  // At the end nothing more can complete: the earliest stop found wins.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    held_.resize(first);
  }
  return std::exchange(held_, {});
}

const char* finish_reason(const session::Answer& a) {
  switch (a.stop) {
    case engine::StopReason::Length:
    case engine::StopReason::Context: return "length";
    case engine::StopReason::End:
    case engine::StopReason::Caller:
    case engine::StopReason::Constraint: return "stop";
  }
  return "stop";
}

json openai_usage(const session::Answer& a) {
  const auto& u = a.usage;
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.generated_tokens},
          {"total_tokens", u.prompt_tokens + u.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

void add_ollama_counts(json& j, const session::Answer& a, double total_ms) {
  const auto ns = [](double ms) { return static_cast<int64_t>(std::llround(ms * 1e6)); };
  j["total_duration"] = ns(total_ms);
  j["load_duration"] = ns(a.timings.load_ms);
  j["prompt_eval_count"] = a.usage.prompt_tokens;
  j["prompt_eval_duration"] = ns(a.timings.prompt_ms);
  j["eval_count"] = a.usage.generated_tokens;
  j["eval_duration"] = ns(a.timings.generation_ms);
}

std::string iso8601_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

}  // namespace quip::serve
