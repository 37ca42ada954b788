// Text that quip did not write never reaches a terminal raw: stored
// messages, answers, titles and model paths in show, export and log; a chat
// template's raise_exception() message; GGUF metadata in inspect; names and
// file data quoted in error messages. Control characters (C0 but newline
// and tab in multi-line text, DEL, C1 U+0080..U+009F) and bytes that are not
// UTF-8 come out escaped; JSON output carries the exact text, escaped the
// JSON way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/cli_home.h"
#include "cli/exit_status.h"
#include "gguf/writer.h"
#include "store/store.h"
#include "store/store_helpers.h"

namespace quip::cli {
namespace {

using testing_home::copy_with_template;
using testing_home::llama_model;
using testing_home::QuipHome;
using testing_home::qwen_model;
using testing_home::RunResult;
namespace fs = std::filesystem;

// ESC (a colour, an OSC title), BEL, CR, BS, a C1 CSI (U+009B) and DEL.
const std::string kNasty =
    "A\x1b[31mred\x1b]0;pwned\x07 cr\rover bs\b c1\xC2\x9B"
    "2J del\x7F end";

// The first byte of `s` that a terminal would act on, or npos. With
// `multi_line`, newline and tab (and CR before a newline) are allowed.
size_t first_control(const std::string& s, bool multi_line) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (multi_line && (c == '\n' || c == '\t')) continue;
    if (multi_line && c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    if (c < 0x20 || c == 0x7F) return i;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return i;
  }
  return std::string::npos;
}

::testing::AssertionResult safe(const std::string& s, bool multi_line) {
  const size_t at = first_control(s, multi_line);
  if (at == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "a control byte 0x" << std::hex << static_cast<int>(static_cast<unsigned char>(s[at]))
         << " at " << std::dec << at << " in: " << printable(s, 400);
}

class TerminalEscape : public QuipHome {
 protected:
  // Conversation 1: a turn whose stored text is all hostile, a foreign
  // title (as a damaged or foreign database may hold) and model path.
  void record_nasty() {
    auto store = store::Store::open(db_file());
    ASSERT_TRUE(store.ok()) << store.error().message;
    store::TurnRecord t = store::testing::sample_turn(1);
    t.messages_json = nlohmann::json::array({{{"role", "user"}, {"content", kNasty}}}).dump();
    t.answer = kNasty + "\xFF";  // an answer cut inside a character, too
    t.model_path = "/models/\x1b[1mevil\xC2\x9D.gguf";
    ASSERT_TRUE(store->record_turn(t).ok());
    store::testing::sql_value(db_file(),
                              "UPDATE conversations SET title = 'T' || char(27) || "
                              "'[2J' || char(155) || 'itle' || char(7)");
  }
};

TEST_F(TerminalEscape, ShowExportAndLogEscapeStoredText) {
  record_nasty();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"show", "1"}, std::vector<std::string>{"export", "1"},
        std::vector<std::string>{"log"}}) {
    const std::string out = run_ok(args);
    EXPECT_TRUE(safe(out, /*multi_line=*/true)) << args[0];
    EXPECT_NE(out.find("T\\x1B[2J\\u009Bitle\\x07"), std::string::npos) << out;  // the title
    if (args[0] != "log") {
      EXPECT_NE(out.find("A\\x1B[31mred\\x1B]0;pwned\\x07 cr\\x0Dover bs\\x08 c1\\u009B2J "
                         "del\\x7F end"),
                std::string::npos)
          << out;
      EXPECT_NE(out.find("end\\xFF"), std::string::npos) << out;
    }
    EXPECT_NE(out.find("\\x1B[1mevil\\u009D.gguf"), std::string::npos) << out;
  }
}

// JSON keeps the exact text (escaped the JSON way, C1 and DEL included).
TEST_F(TerminalEscape, JsonOutputKeepsTheTextExactlyAndSafely) {
  record_nasty();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"show", "1", "--json"},
        std::vector<std::string>{"export", "1", "--format", "json"},
        std::vector<std::string>{"log", "--json"}}) {
    const std::string out = run_ok(args);
    EXPECT_TRUE(safe(out.substr(0, out.size() - 1), false)) << args[0];
    const auto j = nlohmann::json::parse(out);
    if (args[0] == "log") {
      EXPECT_EQ(j.at(0).at("title"), "T\x1b[2J\xC2\x9Bitle\x07");
    } else {
      EXPECT_EQ(j.at("turns").at(0).at("messages").at(0).at("content"), kNasty);
      EXPECT_EQ(j.at("turns").at(0).at("answer"), kNasty + "\xEF\xBF\xBD");  // U+FFFD
      EXPECT_EQ(j.at("title"), "T\x1b[2J\xC2\x9Bitle\x07");
    }
  }
}

TEST_F(TerminalEscape, TemplateExceptionsAreEscaped) {
  QUIP_REQUIRE_SHARED();
  const std::string raise = "{{ raise_exception('" + kNasty + "') }}";
  quip::testing::write_bytes(home() / "raises.jinja", raise);
  quip::testing::write_bytes(home() / "m.json", R"([{"role": "user", "content": "Hi"}])");
  copy_with_template(qwen_model(), home() / "raises.gguf", raise);
  const std::string file = (home() / "raises.jinja").string();
  const std::string model = (home() / "raises.gguf").string();
  const std::string messages = (home() / "m.json").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-m", llama_model(), "--template", file, "hi"},
        std::vector<std::string>{"-m", model, "hi"},
        std::vector<std::string>{"template", "--template", file, messages},
        std::vector<std::string>{"template", "-m", model, messages}}) {
    const RunResult r = expect_failure(args, kExitUsage, "pwned");
    EXPECT_TRUE(safe(r.err.substr(0, r.err.size() - 1), false)) << r.err;
    EXPECT_NE(r.err.find("A\\x1B[31mred\\x1B]0;pwned\\x07"), std::string::npos) << r.err;
  }
}

TEST_F(TerminalEscape, InspectEscapesMetadata) {
  gguf::GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("general.name", std::string("name\xC2\x9B"
                                    "31m\x1b[0m"));
  w.set("tokenizer.ggml.model", std::string("\xC2\x9D"
                                            "0;x\x07"));
  w.add_tensor("t\xC2\x85", 0, {4}, std::vector<std::byte>(16, std::byte{0}));
  ASSERT_TRUE(w.write((home() / "c1.gguf").string()).ok());
  const std::string path = (home() / "c1.gguf").string();
  const std::string text = run_ok({"inspect", "--tensors", path});
  EXPECT_TRUE(safe(text, /*multi_line=*/true));
  EXPECT_NE(text.find("name\\u009B31m\\x1B[0m"), std::string::npos) << text;
  EXPECT_NE(text.find("t\\u0085"), std::string::npos) << text;
  const std::string json = run_ok({"inspect", "--json", path});
  EXPECT_TRUE(safe(json, /*multi_line=*/true));
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j.at("summary").at("name"),
            "name\xC2\x9B"
            "31m\x1b[0m");
  EXPECT_EQ(j.at("tensors").at(0).at("name"), "t\xC2\x85");
}

TEST_F(TerminalEscape, ErrorsQuotingNamesAndFileDataAreEscaped) {
  QUIP_REQUIRE_SHARED();
  const std::string missing = (home() / "\x1b]0;pwned\x07\xC2\x9B.gguf").string();
  gguf::GgufWriter w;
  w.set("general.architecture", std::string("\x1b[2J\xC2\x9Bllama"));
  w.add_tensor("t", 0, {4}, std::vector<std::byte>(16, std::byte{0}));
  ASSERT_TRUE(w.write((home() / "arch.gguf").string()).ok());
  quip::testing::write_bytes(home() / "config.toml", "\"\x1b[2J\" = 1\n");
  const std::string arch = (home() / "arch.gguf").string();
  const std::string config = (home() / "config.toml").string();
  const std::vector<std::pair<std::vector<std::string>, int>> cases = {
      {{"-m", missing, "hi"}, kExitBadData},
      {{"inspect", missing}, kExitBadData},
      {{"tokenize", "-m", missing, "hi"}, kExitBadData},
      {{"-m", arch, "hi"}, kExitBadData},
      {{"-m", llama_model(), "--config", config, "hi"}, kExitUsage},
      {{"-m", llama_model(), "-f", missing}, kExitUsage},
  };
  for (const auto& [args, status] : cases) {
    const RunResult r = run(args);
    EXPECT_EQ(r.status, status) << quip::testing::describe(args, r);
    EXPECT_EQ(quip::testing::count_lines(r.err), 1u) << r.err;
    EXPECT_TRUE(safe(r.err.substr(0, r.err.size() - 1), false)) << r.err;
  }
}

}  // namespace
}  // namespace quip::cli
