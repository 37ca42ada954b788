#include "cli/tokenize.h"

#include "base/paths.h"
#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/prompt_input.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {

namespace {

// A token's bytes on one line: backslash, tab, newline and carriage return as
// C escapes, other controls (C1 included) and bytes that are not UTF-8
// escaped as everywhere else.
std::string escape_piece(std::string_view piece) {
  return escape_for_terminal(piece, {.c_escapes = true});
}

}  // namespace

int tokenize_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Print the tokens a model's vocabulary makes of TEXT (or of stdin with '-').",
               "quip tokenize"};
  std::string model;
  std::vector<std::string> words;
  bool ids_only = false, no_bos = false, parse_special = false;
  app.add_option("-m,--model", model,
                 "GGUF model or vocabulary file, or a model name (quip models)")
      ->required();
  app.add_option("TEXT", words, "text to tokenize (words are joined by spaces); '-' reads stdin")
      ->required();
  app.add_flag("--ids", ids_only, "print only the ids, on one line");
  app.add_flag("--no-bos", no_bos, "add no BOS/EOS, whatever the model asks");
  app.add_flag("--parse-special", parse_special,
               "match special-token text such as <|im_start|> as those tokens");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  std::string text;
  if (words.size() == 1 && words[0] == "-") {
    auto limit = input_limit();
    auto read = limit ? read_stdin_input(*limit) : Result<std::string>(limit.error());
    if (!read) {
      print_error(err, "quip tokenize", read.error().message);
      return kExitUsage;
    }
    text = std::move(*read);
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }

  auto resolved = resolve_model_name(model);
  if (auto* e = std::get_if<ModelNameError>(&resolved)) {
    print_error(err, "quip", e->message);
    return e->status;
  }
  auto file = gguf::GgufFile::open(std::get<ModelFile>(resolved).path.string());
  if (!file) {
    print_error(err, "quip", file.error().message);
    return kExitBadData;
  }
  auto tokenizer = tokenizer::Tokenizer::load(*file, {.cache_dir = cache_dir()});
  if (!tokenizer) {
    print_error(err, "quip", tokenizer.error().message);
    return kExitBadData;
  }
  for (const std::string& w : tokenizer->vocab().warnings()) err << "quip: warning: " << w << '\n';
  const std::vector<tokenizer::TokenId> ids =
      tokenizer->encode(text, {.add_special = !no_bos, .parse_special = parse_special});
  if (ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
    out << '\n';
  } else {
    for (tokenizer::TokenId id : ids) {
      out << id << '\t' << escape_piece(tokenizer->piece(id, /*special=*/true)) << '\n';
    }
  }
  return kExitOk;
}

}  // namespace quip::cli
