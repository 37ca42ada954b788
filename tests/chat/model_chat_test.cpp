// Chat prompts end to end for the shared models: the model's own template
// (or the ChatML fallback), its BOS/EOS texts and llama.cpp's handling of a
// leading BOS, against llama.cpp's renderings in reference.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/turn_prompt.h"
#include "support/shared.h"

namespace quip::chat {
namespace {

// reference.json was rendered on 2026-12-02 (the Llama 3.x template prints the date).
constexpr int64_t kReferenceDay = 1796212800;  // 2026-12-02 12:00:00 UTC

const nlohmann::json& reference() {
  static const nlohmann::json j =
      nlohmann::json::parse(testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  return j;
}

std::vector<std::string> model_names() {
  if (testing::shared_dir().empty()) return {"none"};
  std::vector<std::string> names;
  for (const auto& m : reference().at("models")) names.push_back(m.at("model"));
  return names;
}

struct ModelChat {
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> tmpl;
  RenderOptions options;
};

ModelChat load(const std::string& name) {
  ModelChat m;
  auto file = gguf::GgufFile::open((testing::shared_dir() / "models" / name).string());
  if (!file.ok()) throw std::runtime_error(file.error().message);
  m.file = std::make_unique<gguf::GgufFile>(std::move(*file));
  auto tok = tokenizer::Tokenizer::load(*m.file);
  if (!tok.ok()) throw std::runtime_error(tok.error().message);
  m.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
  auto source = m.file->get_optional<std::string_view>("tokenizer.chat_template");
  if (!source.ok()) throw std::runtime_error(source.error().message);
  auto tmpl = ChatTemplate::parse(*source ? **source : chatml_template());
  if (!tmpl.ok()) throw std::runtime_error(tmpl.error().message);
  m.tmpl = std::make_unique<ChatTemplate>(std::move(*tmpl));
  set_special_tokens(*m.tokenizer, m.options);
  m.options.now = kReferenceDay;
  return m;
}

class SharedModelChat : public ::testing::TestWithParam<std::string> {};

const nlohmann::json& entry(const std::string& name) {
  for (const auto& m : reference().at("models")) {
    if (m.at("model") == name) return m;
  }
  throw std::runtime_error("no reference for " + name);
}

TEST_P(SharedModelChat, RendersAsLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  const ModelChat m = load(GetParam());
  for (const auto& c : entry(GetParam()).at("chat")) {
    if (c.at("rendered").is_null()) continue;
    RenderOptions options = m.options;
    options.add_generation_prompt = c.at("add_generation_prompt");
    auto p = first_turn_prompt(*m.tmpl, *m.tokenizer, c.at("messages"), options);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->text, c.at("rendered").get<std::string>());
    // The tokens are the text's, with one BOS where the vocabulary adds it.
    std::vector<int32_t> expected;
    if (m.tokenizer->vocab().add_bos()) expected.push_back(m.tokenizer->vocab().bos());
    const auto body = m.tokenizer->encode(p->text, {.add_special = false, .parse_special = true});
    expected.insert(expected.end(), body.begin(), body.end());
    EXPECT_EQ(p->tokens, expected);
  }
}

// Continuing the reference's four-message conversation after its answer
// gives the text llama.cpp renders for the whole conversation at once:
// first prompt + answer + the new part.
TEST_P(SharedModelChat, ContinuationAddsWhatTheWholeRenderingAdds) {
  QUIP_REQUIRE_SHARED();
  const ModelChat m = load(GetParam());
  for (const auto& c : entry(GetParam()).at("chat")) {
    const nlohmann::json& messages = c.at("messages");
    if (c.at("rendered").is_null() || messages.size() != 4) continue;
    ASSERT_EQ(messages[2].at("role"), "assistant");
    const nlohmann::json first(messages.begin(), messages.begin() + 2);
    auto p1 = first_turn_prompt(*m.tmpl, *m.tokenizer, first, m.options);
    ASSERT_TRUE(p1.ok()) << p1.error().message;
    const std::string answer = messages[2].at("content");
    std::vector<int32_t> stored = p1->tokens;
    const auto answer_ids = m.tokenizer->encode(answer, {.add_special = false});
    stored.insert(stored.end(), answer_ids.begin(), answer_ids.end());

    const nlohmann::json history(messages.begin(), messages.begin() + 3);
    const nlohmann::json added = nlohmann::json::array({messages[3]});
    auto p2 = next_turn_prompt(*m.tmpl, *m.tokenizer, history, stored, added, m.options);
    ASSERT_TRUE(p2.ok()) << p2.error().message;
    EXPECT_EQ(p1->text + answer + p2->text, c.at("rendered").get<std::string>());
    ASSERT_GE(p2->tokens.size(), stored.size());
    EXPECT_EQ(std::vector<int32_t>(p2->tokens.begin(), p2->tokens.begin() + stored.size()), stored)
        << "the stored tokens are kept as they are";
    EXPECT_EQ(p2->stored, stored.size());
  }
}

INSTANTIATE_TEST_SUITE_P(, SharedModelChat, ::testing::ValuesIn(model_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace quip::chat
