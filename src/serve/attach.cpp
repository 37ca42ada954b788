#include "serve/attach.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/text.h"
#include "grammar/grammar.h"
#include "serve/socket_client.h"

namespace quip::serve {

namespace fs = std::filesystem;
using nlohmann::json;
using session::Failure;
using session::FailureKind;

json byte_string(std::string_view bytes) {
  // Valid UTF-8 goes as it is; otherwise every byte becomes the code point
  // of its value, under "bytes".
  bool valid = true;
  for (size_t i = 0; i < bytes.size() && valid;) {
    const size_t n = utf8_sequence_length(bytes, i);
    valid = n > 0;
    i += n;
  }
  if (valid) return std::string(bytes);
  std::string out;
  for (const unsigned char c : bytes) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return json{{"bytes", out}};
}

std::string from_byte_string(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_object() || !j.contains("bytes") || !j["bytes"].is_string()) return {};
  const std::string s = j["bytes"].get<std::string>();
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80 || i + 1 >= s.size()) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F));
      ++i;
    }
  }
  return out;
}

json request_json(const session::Request& r, const std::string& gbnf) {
  json j;
  j["model_path"] = r.model_path.string();
  j["raw"] = r.raw;
  j["messages"] = r.messages;
  j["raw_text"] = byte_string(r.raw_text);
  if (r.raw_tokens) j["raw_tokens"] = *r.raw_tokens;
  if (r.template_text) j["template_text"] = byte_string(*r.template_text);
  if (r.template_file) j["template_file"] = r.template_file->string();
  if (r.base) {
    j["base"] = {{"database", r.base->database.string()}, {"conversation", r.base->conversation}};
    // The turn it builds on: a fork's, else the last one read.
    j["base"]["turn"] = r.base->fork_turn ? *r.base->fork_turn : r.base->turns.back().turn;
    j["base"]["fork"] = r.base->fork_turn.has_value();
  }
  const auto& s = r.sampler;
  j["sampler"] = {{"temperature", s.temperature},
                  {"top_k", s.top_k},
                  {"top_p", s.top_p},
                  {"min_p", s.min_p},
                  {"repeat_penalty", s.repeat_penalty},
                  {"repeat_last_n", s.repeat_last_n},
                  {"seed", s.seed}};
  j["n_predict"] = r.n_predict;
  j["n_ctx"] = r.n_ctx;
  j["ignore_eos"] = r.ignore_eos;
  j["logprobs"] = r.logprobs;
  j["think"] = static_cast<int>(r.think);
  if (r.grammar) j["gbnf"] = gbnf;
  j["no_cache"] = r.no_cache;
  if (r.cache_dir) j["cache_dir"] = r.cache_dir->string();
  j["cache_max_bytes"] = r.cache_max_bytes;
  if (r.database) j["database"] = r.database->string();
  j["session"] = r.session;
  return j;
}

session::Outcome<session::Request> request_from_json(const json& j) {
  const auto usage = [](const std::string& what) {
    return Failure{FailureKind::Usage, "attach: malformed request: " + what};
  };
  if (!j.is_object()) return usage("not an object");
  session::Request r;
  try {
    r.model_path = j.at("model_path").get<std::string>();
    r.raw = j.at("raw").get<bool>();
    r.messages = j.at("messages");
    r.raw_text = from_byte_string(j.at("raw_text"));
    if (j.contains("raw_tokens")) r.raw_tokens = j["raw_tokens"].get<std::vector<int64_t>>();
    if (j.contains("template_text")) r.template_text = from_byte_string(j["template_text"]);
    if (j.contains("template_file")) r.template_file = j["template_file"].get<std::string>();
    const json& s = j.at("sampler");
    r.sampler.temperature = s.at("temperature").get<float>();
    r.sampler.top_k = s.at("top_k").get<int32_t>();
    r.sampler.top_p = s.at("top_p").get<float>();
    r.sampler.min_p = s.at("min_p").get<float>();
    r.sampler.repeat_penalty = s.at("repeat_penalty").get<float>();
    r.sampler.repeat_last_n = s.at("repeat_last_n").get<int32_t>();
    r.sampler.seed = s.at("seed").get<uint64_t>();
    r.n_predict = j.at("n_predict").get<int64_t>();
    r.n_ctx = j.at("n_ctx").get<size_t>();
    r.ignore_eos = j.at("ignore_eos").get<bool>();
    r.logprobs = j.at("logprobs").get<int>();
    const int think = j.at("think").get<int>();
    if (think < 0 || think > static_cast<int>(chat::ThinkMode::Inline)) return usage("think");
    r.think = static_cast<chat::ThinkMode>(think);
    r.no_cache = j.at("no_cache").get<bool>();
    if (j.contains("cache_dir")) r.cache_dir = j["cache_dir"].get<std::string>();
    r.cache_max_bytes = j.at("cache_max_bytes").get<uint64_t>();
    if (j.contains("database")) r.database = j["database"].get<std::string>();
    r.session = j.at("session").get<std::string>();
    if (j.contains("gbnf")) {
      auto g = grammar::compile_gbnf(j["gbnf"].get<std::string>());
      if (!g) return Failure{FailureKind::Usage, g.error().message};
      r.grammar = *g;
    }
    if (j.contains("base")) {
      const json& b = j["base"];
      session::ConversationRef ref{b.at("conversation").get<int64_t>(), b.at("turn").get<int>()};
      auto base = session::find_base(fs::path(b.at("database").get<std::string>()), ref, r.session);
      if (!base) return base.failure();
      // Read as a fork after that turn; unless the call asked for one, it
      // continues the conversation (and branches only if it moved on).
      if (!b.at("fork").get<bool>()) base->fork_turn.reset();
      r.base = std::move(*base);
    }
  } catch (const json::exception& e) {
    return usage(e.what());
  }
  return r;
}

json answer_json(const session::Answer& a) {
  json j;
  j["tokens"] = a.tokens;
  j["text"] = byte_string(a.text);
  j["reasoning"] = byte_string(a.reasoning);
  json steps = json::array();
  for (const engine::Step& st : a.steps) {
    json top = json::array();
    for (const engine::TokenLogprob& t : st.top) top.push_back({t.id, t.logprob});
    steps.push_back({st.id, top});
  }
  j["steps"] = steps;
  j["stop"] = static_cast<int>(a.stop);
  j["interrupted"] = a.interrupted;
  if (a.valid) j["valid"] = *a.valid;
  j["usage"] = {a.usage.prompt_tokens, a.usage.cached_tokens, a.usage.evaluated_tokens,
                a.usage.generated_tokens};
  j["timings"] = {a.timings.load_ms, a.timings.prompt_ms, a.timings.generation_ms};
  if (a.recorded) {
    j["recorded"] = {{"conversation", a.recorded->conversation}, {"turn", a.recorded->turn}};
  }
  j["store_error"] = a.store_error;
  if (a.forked_from) j["forked_from"] = {a.forked_from->first, a.forked_from->second};
  j["branched"] = a.branched;
  j["warnings"] = a.warnings;
  return j;
}

session::Answer answer_from_json(const json& j) {
  session::Answer a;
  a.tokens = j.at("tokens").get<std::vector<int32_t>>();
  a.text = from_byte_string(j.at("text"));
  a.reasoning = from_byte_string(j.at("reasoning"));
  for (const json& st : j.at("steps")) {
    engine::Step step{st.at(0).get<int32_t>(), {}};
    for (const json& t : st.at(1))
      step.top.push_back({t.at(0).get<int32_t>(), t.at(1).get<double>()});
    a.steps.push_back(std::move(step));
  }
  const int stop = j.at("stop").get<int>();
  a.stop = static_cast<engine::StopReason>(
      std::clamp(stop, 0, static_cast<int>(engine::StopReason::Constraint)));
  a.interrupted = j.at("interrupted").get<bool>();
  if (j.contains("valid")) a.valid = j["valid"].get<bool>();
  const json& u = j.at("usage");
  a.usage = {u.at(0).get<size_t>(), u.at(1).get<size_t>(), u.at(2).get<size_t>(),
             u.at(3).get<size_t>()};
  const json& t = j.at("timings");
  a.timings = {t.at(0).get<double>(), t.at(1).get<double>(), t.at(2).get<double>()};
  if (j.contains("recorded")) {
    store::TurnRecord rec;
    rec.conversation = j["recorded"].at("conversation").get<int64_t>();
    rec.turn = j["recorded"].at("turn").get<int>();
    a.recorded = std::move(rec);
  }
  a.store_error = j.at("store_error").get<std::string>();
  if (j.contains("forked_from")) {
    a.forked_from =
        std::pair(j["forked_from"].at(0).get<int64_t>(), j["forked_from"].at(1).get<int>());
  }
  a.branched = j.at("branched").get<bool>();
  a.warnings = j.at("warnings").get<std::vector<std::string>>();
  return a;
}

json failure_json(const Failure& f) {
  const char* kind = f.kind == FailureKind::Usage     ? "usage"
                     : f.kind == FailureKind::BadData ? "bad_data"
                                                      : "runtime";
  return {{"kind", kind}, {"message", f.message}};
}

Failure failure_from_json(const json& j) {
  const std::string kind = j.value("kind", "runtime");
  return Failure{kind == "usage"      ? FailureKind::Usage
                 : kind == "bad_data" ? FailureKind::BadData
                                      : FailureKind::Runtime,
                 j.value("message", std::string("the server failed"))};
}

// A long prompt sends nothing for a while: an attached call's reads wait as
// long as it takes.
constexpr time_t kAttachedReadSeconds = 24 * 3600;

std::optional<session::Outcome<session::Answer>> attached_generate(
    const fs::path& socket, const session::Request& request, const std::string& gbnf,
    const session::Callbacks& callbacks, std::vector<int32_t>& prompt_tokens) {
  std::error_code ec;
  if (!fs::is_socket(socket, ec)) return std::nullopt;
  // A server that is not there refuses at once; a busy one may take a
  // moment to accept.
  httplib::Client client = socket_client(socket, 10, kAttachedReadSeconds);

  // The call's id on the server, and whether it should stop: a watcher
  // asks keep_going while the answer streams (a blocked read cannot) and
  // sends the cancel on another connection.
  std::mutex mu;
  std::condition_variable cv;
  std::optional<int64_t> call;
  bool stop_wanted = false, done = false, cancel_sent = false;
  const auto send_cancel = [&](int64_t id) {
    httplib::Client c = socket_client(socket, 1, kAttachedReadSeconds);
    (void)c.Post("/quip/cancel", json{{"call", id}}.dump(), "application/json");
  };
  std::thread watcher([&] {
    std::unique_lock lock(mu);
    while (!done) {
      cv.wait_for(lock, std::chrono::milliseconds(50));
      if (!stop_wanted && callbacks.keep_going && !callbacks.keep_going()) stop_wanted = true;
      if (stop_wanted && call && !cancel_sent) {
        cancel_sent = true;
        const int64_t id = *call;
        lock.unlock();
        send_cancel(id);
        lock.lock();
      }
    }
  });

  bool began = false;  // an event the caller saw (then there is no running it again)
  std::optional<session::Outcome<session::Answer>> result;
  std::string pending;
  const auto on_line = [&](const std::string& line) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object()) return;
    try {
      if (e.contains("call")) {
        std::lock_guard lock(mu);
        call = e["call"].get<int64_t>();
      } else if (e.contains("progress")) {
        if (callbacks.on_prompt_progress) {
          const json& p = e["progress"];
          callbacks.on_prompt_progress(p.at(0).get<size_t>(), p.at(1).get<size_t>(),
                                       p.at(2).get<size_t>());
        }
      } else if (e.contains("reasoning")) {
        began = true;
        if (callbacks.on_reasoning) callbacks.on_reasoning(from_byte_string(e["reasoning"]));
      } else if (e.contains("token")) {
        began = true;
        if (callbacks.on_token &&
            !callbacks.on_token(e["token"].get<int32_t>(), from_byte_string(e["text"]))) {
          std::lock_guard lock(mu);
          stop_wanted = true;
          cv.notify_all();
        }
      } else if (e.contains("answer")) {
        prompt_tokens = e.value("prompt_tokens", std::vector<int32_t>{});
        result = answer_from_json(e["answer"]);
      } else if (e.contains("failure")) {
        result = failure_from_json(e["failure"]);
      }
    } catch (const json::exception& ex) {
      result =
          Failure{FailureKind::Runtime, std::string("attach: a malformed event: ") + ex.what()};
    }
  };
  httplib::Request req;
  req.method = "POST";
  req.path = "/quip/generate";
  req.body = request_json(request, gbnf).dump();
  req.set_header("Content-Type", "application/json");
  req.set_header(kProtocolHeader, kProtocolVersion);
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    // A server speaking another version: not a word of it is read.
    return res.get_header_value(kProtocolHeader) == kProtocolVersion;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    pending.append(data, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      on_line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
    return true;
  };
  auto res = client.send(req);
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  watcher.join();
  if (result) return result;
  if (!began) return std::nullopt;  // not there, or gone before the answer began
  (void)res;
  return session::Outcome<session::Answer>(
      Failure{FailureKind::Runtime, "the quip server at " + socket.string() +
                                        " went away during the answer (status " +
                                        std::to_string(status) + ")"});
}

}  // namespace quip::serve
