// Chat templates: turning a conversation into the prompt text a model was
// trained on, by rendering the model's tokenizer.chat_template (Jinja) with
// the variables Hugging Face's apply_chat_template passes.
//
// A ChatTemplate is immutable after parse(), cheap to copy or move (the
// parsed template is shared) and safe to render from several threads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "chat/jinja.h"

namespace quip::chat {

struct RenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token;  // the model's token texts
  std::string eos_token;
  // Seconds since the epoch for strftime_now(); nullopt = $SOURCE_DATE_EPOCH
  // when set, else the current time.
  std::optional<int64_t> now;
  // More variables (e.g. "tools", "enable_thinking"), merged into the
  // context. They do not replace messages, add_generation_prompt, bos_token
  // or eos_token. nlohmann::json sorts object keys; for values whose key
  // order the model should see as given (tool schemas), use extra_ordered,
  // which is merged after extra. Leave "tools" out when there are none:
  // templates test `tools is defined` or `tools is not none`, and the
  // renderings in ../shared/templates/expected.json leave it undefined.
  nlohmann::json extra = nlohmann::json::object();
  nlohmann::ordered_json extra_ordered = nlohmann::ordered_json::object();
  // Bounds on one render (output size, loop iterations, recursion, time).
  jinja::Limits limits;
};

class ChatTemplate {
 public:
  // Parses a template; a syntax error names the template line
  // ("line 12: unexpected 'endfor'").
  static Result<ChatTemplate> parse(std::string_view source);

  // Renders `messages` (a JSON array of {"role","content",...} objects;
  // content may also be null or a list) with HF apply_chat_template
  // semantics: trim_blocks and lstrip_blocks, raise_exception(msg) and
  // strftime_now(fmt) as globals, tojson as json.dumps(ensure_ascii=False).
  // Errors (raise_exception, type errors, unknown filters) name the line.
  Result<std::string> render(const nlohmann::json& messages, const RenderOptions& options) const;
  // The same with message objects in their given key order (tojson of a
  // message, or of its tool calls, then prints the keys in that order).
  Result<std::string> render(const nlohmann::ordered_json& messages,
                             const RenderOptions& options) const;

 private:
  explicit ChatTemplate(jinja::Template t) : template_(std::move(t)) {}
  jinja::Template template_;
};

// Whether `error` (as returned by this thread's last render, or with context
// added in front) came from the template calling raise_exception(): the
// template refusing the messages it was given, rather than failing on an
// error of its own.
bool raised_by_template(const Error& error);

// The ChatML template llama.cpp falls back to for models without one
// (<|im_start|>ROLE\nCONTENT<|im_end|>\n per message, then
// <|im_start|>assistant\n when add_generation_prompt). Content that is a
// list of parts prints its text parts; null content prints nothing.
std::string_view chatml_template();

}  // namespace quip::chat
