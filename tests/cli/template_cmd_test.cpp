// quip template: a template's rendering of a JSON list of messages, from the
// command line, against llama.cpp's renderings (reference.json) and a
// template whose output is worked out by hand; and its broken inputs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "gguf/reader.h"
#include "support/run_quip.h"
#include "support/shared.h"
#include "tokenizer/tokenizer.h"

namespace quip::cli {
namespace {

using testing::RunOptions;
using testing::RunResult;

// The reference was rendered on 2026-12-02 (the Llama 3.x template prints the date).
const std::pair<std::string, std::string> kReferenceDay = {"SOURCE_DATE_EPOCH", "1796212800"};

TEST(TemplateCli, RendersEachSharedModelsConversationsAsLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  testing::TempDir dir;
  const auto reference = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  size_t checked = 0;
  for (const auto& model : reference.at("models")) {
    const std::string path = (testing::shared_dir() / "models" / model.at("model")).string();
    auto file = gguf::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto tok = tokenizer::Tokenizer::load(*file);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    const tokenizer::Vocab& vocab = tok->vocab();
    for (const auto& c : model.at("chat")) {
      if (c.at("rendered").is_null()) continue;
      testing::write_bytes(dir / "messages.json", c.at("messages").dump());
      std::vector<std::string> args = {"template", "-m", path, (dir / "messages.json").string()};
      if (!c.at("add_generation_prompt").get<bool>()) args.push_back("--no-generation-prompt");
      RunOptions options;
      options.env = {kReferenceDay};
      const RunResult r = testing::run_quip(args, options);
      ASSERT_EQ(r.status, kExitOk) << testing::describe(args, r);
      EXPECT_EQ(r.err, "");
      // The template's own output: llama.cpp leaves out a leading BOS text
      // when the tokenizer adds BOS itself, the template printing it does not.
      const std::string rendered = c.at("rendered");
      const std::string bos =
          vocab.add_bos() ? std::string(vocab.text(vocab.bos())) : std::string();
      if (r.out != rendered) {
        EXPECT_FALSE(bos.empty()) << model.at("model");
        EXPECT_EQ(r.out, bos + rendered) << model.at("model");
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(TemplateCli, TemplateFileAndStdin) {
  testing::TempDir dir;
  testing::write_bytes(
      dir / "t.jinja",
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}\n"
      "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}");
  testing::write_bytes(
      dir / "m.json",
      R"([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi"}])");
  const std::vector<std::string> args = {"template", "--template", (dir / "t.jinja").string()};
  RunOptions from_stdin;
  from_stdin.stdin_from = (dir / "m.json").string();
  RunResult r = testing::run_quip(args, from_stdin);
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out, "[system] Be brief.\n[user] Hi\n[assistant]");

  std::vector<std::string> no_prompt = args;
  no_prompt.insert(no_prompt.end(), {"--no-generation-prompt", (dir / "m.json").string()});
  r = testing::run_quip(no_prompt);
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out, "[system] Be brief.\n[user] Hi\n");
}

TEST(TemplateCli, BrokenInputsGetOneLineAndTheirStatus) {
  testing::TempDir dir;
  testing::write_bytes(dir / "ok.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  testing::write_bytes(dir / "syntax.jinja", "line one\n{% for m in messages %}{{ m.content }}");
  testing::write_bytes(dir / "raises.jinja", "{{ raise_exception('only user messages, please') }}");
  testing::write_bytes(dir / "ok.json", R"([{"role": "user", "content": "Hi"}])");
  testing::write_bytes(dir / "bad.json", R"([{"role": "user", "content": "Hi"})");
  testing::write_bytes(dir / "object.json", R"({"role": "user", "content": "Hi"})");
  testing::write_bytes(dir / "no-role.json", R"([{"content": "Hi"}])");
  const auto t = [&](const std::string& name) { return (dir / name).string(); };
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string says;
  };
  const Case cases[] = {
      {{"template", t("ok.json")}, kExitUsage, "-m MODEL or --template FILE"},
      {{"template", "--template", t("missing.jinja"), t("ok.json")}, kExitUsage, "missing.jinja"},
      {{"template", "--template", t("ok.jinja"), t("missing.json")}, kExitUsage, "missing.json"},
      {{"template", "--template", t("ok.jinja"), t("bad.json")}, kExitBadData, "not valid JSON"},
      {{"template", "--template", t("ok.jinja"), t("object.json")}, kExitBadData, "JSON list"},
      {{"template", "--template", t("ok.jinja"), t("no-role.json")}, kExitBadData, "message 0"},
      // A --template file is the user's: its errors are usage errors, and a
      // raise_exception() is one on every path (exit_status_test.cpp).
      {{"template", "--template", t("syntax.jinja"), t("ok.json")}, kExitUsage, "syntax.jinja"},
      {{"template", "--template", t("raises.jinja"), t("ok.json")},
       kExitUsage,
       "only user messages, please"},
      {{"template", "-m", t("ok.json"), t("ok.json")}, kExitBadData, "ok.json"},
      {{"template", "--bogus"}, kExitUsage, "bogus"},
  };
  for (const Case& c : cases) {
    const RunResult r = testing::expect_failure(c.args, c.status);
    EXPECT_NE(r.err.find(c.says), std::string::npos) << testing::describe(c.args, r);
  }
}

}  // namespace
}  // namespace quip::cli
