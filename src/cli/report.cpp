#include "cli/report.h"

#include <cstdio>

#include "base/text.h"
#include "chat/chat_template.h"
#include "cli/exit_status.h"

namespace quip::cli {

namespace {

// Long enough for any message quip writes; a longer one (a template's
// exception text) is cut with "...".
constexpr size_t kMaxMessageBytes = 4096;

}  // namespace

void print_error(std::ostream& err, std::string_view who, std::string_view message) {
  err << who << ": " << printable(message, kMaxMessageBytes) << '\n';
}

void print_warning(std::ostream& err, std::string_view who, std::string_view message) {
  err << who << ": warning: " << printable(message, kMaxMessageBytes) << '\n';
}

std::string terminal_safe_json(std::string json) {
  // Structural JSON is ASCII, so these bytes can only be inside strings.
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const auto c = static_cast<unsigned char>(json[i]);
    if (c == 0x7F) {
      out += "\\u007f";
    } else if (c == 0xC2 && i + 1 < json.size() &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(json[i + 1]) <= 0x9F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(json[i + 1]));
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int template_failure_status(const Error& error, bool models_own_template) {
  if (chat::raised_by_template(error)) return kExitUsage;
  return models_own_template ? kExitBadData : kExitUsage;
}

std::string template_failure_message(const Error& error, const std::string& model_file,
                                     const std::optional<std::filesystem::path>& template_file) {
  return (template_file ? template_file->string() : model_file + ": tokenizer.chat_template") +
         ": " + error.message;
}

}  // namespace quip::cli
