#include "cli/template_cmd.h"

#include <unistd.h>

#include "base/text.h"
#include "chat/chat_template.h"
#include "chat/turn_prompt.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/prompt_input.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {

namespace {

// A file, or stdin for "-": regular files only, at most input_limit() bytes.
Result<std::string> read_text(const std::string& path) {
  if (path != "-") return read_input_file(path);
  auto limit = input_limit();
  if (!limit) return limit.error();
  return read_stdin_input(*limit);
}

}  // namespace

int template_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "Print how a chat template renders a JSON list of {\"role\", \"content\"} "
      "messages: the model's own (-m) or a file's (--template).",
      "quip template"};
  std::optional<std::string> model, template_file, messages_file;
  bool no_generation_prompt = false;
  app.add_option("-m,--model", model, "GGUF model: its template, BOS and EOS texts");
  app.add_option("--template", template_file, "a Jinja template file (instead of the model's)");
  app.add_flag("--no-generation-prompt", no_generation_prompt,
               "leave out the assistant header that asks for an answer");
  app.add_option("MESSAGES", messages_file, "a JSON file of messages; '-' or none reads stdin");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  const auto fail = [&](int status, const std::string& message) {
    print_error(err, "quip template", message);
    return status;
  };
  if (!model && !template_file) return fail(kExitUsage, "give -m MODEL or --template FILE");
  if (!messages_file && isatty(STDIN_FILENO) != 0) {
    return fail(kExitUsage, "give a MESSAGES.json file, or the messages on stdin");
  }
  const std::string messages_name = messages_file.value_or("-");

  chat::RenderOptions options;
  options.add_generation_prompt = !no_generation_prompt;
  std::string source;
  std::optional<gguf::GgufFile> file;
  if (model) {
    auto resolved = resolve_model_name(*model);
    if (auto* e = std::get_if<ModelNameError>(&resolved)) return fail(e->status, e->message);
    auto f = gguf::GgufFile::open(std::get<ModelFile>(resolved).path.string());
    if (!f) return fail(kExitBadData, f.error().message);
    file = std::move(*f);
    auto tok = tokenizer::Tokenizer::load(*file);
    if (!tok) return fail(kExitBadData, tok.error().message);
    for (const std::string& w : tok->vocab().warnings()) {
      err << "quip template: warning: " << w << '\n';
    }
    chat::set_special_tokens(*tok, options);
    auto own = file->get_optional<std::string_view>("tokenizer.chat_template");
    if (!own) return fail(kExitBadData, own.error().message);
    source = *own ? std::string(**own) : std::string(chat::chatml_template());
  }
  if (template_file) {
    auto text = read_text(*template_file);
    if (!text) return fail(kExitUsage, text.error().message);
    source = std::move(*text);
  }
  const std::string template_name =
      template_file ? *template_file : *model + ": tokenizer.chat_template";
  auto tmpl = chat::ChatTemplate::parse(source);
  // A model's own template that does not parse is bad data; a --template
  // file the user wrote is a usage error (as on the main path).
  if (!tmpl) {
    return fail(template_file ? kExitUsage : kExitBadData,
                template_name + ": " + tmpl.error().message);
  }

  auto text = read_text(messages_name);
  if (!text) return fail(kExitUsage, text.error().message);
  const std::string shown = messages_name == "-" ? "stdin" : messages_name;
  const auto messages = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (messages.is_discarded()) return fail(kExitBadData, shown + ": not valid JSON");
  if (!messages.is_array()) {
    return fail(kExitBadData, shown + ": expected a JSON list of {\"role\", \"content\"} messages");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object() || !messages[i].contains("role") ||
        !messages[i]["role"].is_string()) {
      return fail(kExitBadData, shown + ": message " + std::to_string(i) +
                                    " is not an object with a string \"role\"");
    }
  }
  auto rendered = tmpl->render(messages, options);
  if (!rendered) {
    return fail(template_failure_status(rendered.error(), !template_file),
                template_name + ": " + rendered.error().message);
  }
  out << *rendered;
  return kExitOk;
}

}  // namespace quip::cli
