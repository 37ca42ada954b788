#include "cli/template_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/text.h"
#include "chat/chat_template.h"
#include "chat/turn_prompt.h"
#include "cli/exit_status.h"
#include "cli/usage.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {

namespace {

Result<std::string> read_text(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot read: " + std::strerror(errno)};
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int template_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Print how a chat template renders a JSON list of {\"role\", \"content\"} "
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
    err << "quip template: " << message << '\n';
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
    auto f = gguf::GgufFile::open(*model);
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
  const std::string template_name = template_file ? *template_file
                                    : *model + ": tokenizer.chat_template";
  auto tmpl = chat::ChatTemplate::parse(source);
  if (!tmpl) return fail(kExitBadData, template_name + ": " + tmpl.error().message);

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
  if (!rendered) return fail(kExitFailure, template_name + ": " + rendered.error().message);
  out << *rendered;
  return kExitOk;
}

}  // namespace quip::cli
