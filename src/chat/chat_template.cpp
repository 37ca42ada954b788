#include "chat/chat_template.h"

#include <cstdlib>
#include <ctime>
#include <memory>

namespace quip::chat {
namespace {

using jinja::CallArgs;
using jinja::Evaluator;
using jinja::Value;

Value native(std::string name, jinja::NativeFn fn) {
  auto c = std::make_shared<jinja::Callable>();
  c->name = std::move(name);
  c->native = std::move(fn);
  return Value::callable(std::move(c));
}

// Seconds since the epoch for strftime_now: the fixed time asked for, else
// $SOURCE_DATE_EPOCH (reproducible builds' convention), else now.
int64_t now_seconds(const RenderOptions& options) {
  if (options.now) return *options.now;
  if (const char* s = std::getenv("SOURCE_DATE_EPOCH"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    if (*end == '\0') return v;
  }
  return static_cast<int64_t>(std::time(nullptr));
}

// strftime_now(format): C strftime on the UTC time, as transformers'
// datetime.now().strftime(format) would print it on a UTC machine.
Result<Value> strftime_now(int64_t now, CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string() || !args.keyword.empty()) {
    return Error{"strftime_now() takes one format string"};
  }
  const std::string& format = args.positional[0].str();
  if (format.empty()) return Value::string("");
  const auto t = static_cast<time_t>(now);
  struct tm tm {};
  if (gmtime_r(&t, &tm) == nullptr) return Error{"strftime_now(): time out of range"};
  // strftime returns 0 both for "too small" and for an empty result, so
  // the buffer grows a few times and an empty result is accepted at the end.
  for (size_t size = 256; size <= (size_t{1} << 20); size *= 16) {
    std::string buf(size + format.size() * 8, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value::string(std::move(buf));
    }
  }
  return Value::string("");
}

template <class Json>
Result<void> add_variables(std::vector<std::pair<std::string, Value>>& vars, const Json& extra) {
  if (!extra.is_object()) return Error{"extra variables must be a JSON object"};
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    Result<Value> v = jinja::from_json(*it);
    if (!v) return v.error().with_context("variable '" + it.key() + "'");
    vars.emplace_back(it.key(), std::move(*v));
  }
  return {};
}

// The message of this thread's last render when it ended in raise_exception().
thread_local std::string t_raised_message;

template <class Json>
Result<std::string> render_with(const jinja::Template& t, const Json& messages,
                                const RenderOptions& options) {
  std::vector<std::pair<std::string, Value>> vars;
  // Later entries win in Template::render, so extra comes first and the
  // named variables last.
  if (auto r = add_variables(vars, options.extra); !r) return r.error();
  if (auto r = add_variables(vars, options.extra_ordered); !r) return r.error();
  Result<Value> message_list = jinja::from_json(messages);
  if (!message_list) return message_list.error().with_context("messages");
  auto raised = std::make_shared<bool>(false);
  vars.emplace_back("raise_exception",
                    native("raise_exception", [raised](Evaluator&, CallArgs& a) -> Result<Value> {
                      *raised = true;
                      return Error{a.positional.empty() ? std::string("raise_exception() called")
                                                        : jinja::to_str(a.positional[0])};
                    }));
  const int64_t now = now_seconds(options);
  vars.emplace_back("strftime_now", native("strftime_now", [now](Evaluator&, CallArgs& a) {
                      return strftime_now(now, a);
                    }));
  vars.emplace_back("messages", std::move(*message_list));
  vars.emplace_back("add_generation_prompt", Value::boolean(options.add_generation_prompt));
  vars.emplace_back("bos_token", Value::string(options.bos_token));
  vars.emplace_back("eos_token", Value::string(options.eos_token));
  Result<std::string> out = t.render(vars, options.limits);
  // The error of a raise_exception() is the last thing the render did.
  t_raised_message = !out && *raised ? out.error().message : std::string();
  return out;
}

}  // namespace

bool raised_by_template(const Error& error) {
  return !t_raised_message.empty() && error.message.ends_with(t_raised_message);
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  Result<jinja::Template> t = jinja::Template::parse(source);
  if (!t) return t.error();
  return ChatTemplate(std::move(*t));
}

Result<std::string> ChatTemplate::render(const nlohmann::json& messages,
                                         const RenderOptions& options) const {
  return render_with(template_, messages, options);
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                         const RenderOptions& options) const {
  return render_with(template_, messages, options);
}

std::string_view chatml_template() {
  return "{%- for message in messages -%}\n"
         "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
         "{%- if message['content'] is string -%}\n"
         "{{- message['content'] -}}\n"
         "{%- elif message['content'] is iterable -%}\n"
         "{%- for part in message['content'] -%}\n"
         "{%- if part is string -%}{{- part -}}\n"
         "{%- elif part is mapping and part['type'] == 'text' -%}{{- part['text'] -}}\n"
         "{%- endif -%}\n"
         "{%- endfor -%}\n"
         "{%- endif -%}\n"
         "{{- '<|im_end|>\\n' -}}\n"
         "{%- endfor -%}\n"
         "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";
}

}  // namespace quip::chat
