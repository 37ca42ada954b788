// Tokenizer conformance against ../shared: the vocabulary cases (expected ids
// from the original Hugging Face tokenizers) and the prompt tokens llama.cpp
// computed for every reference model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gguf/reader.h"
#include "support/shared.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t pos; (pos = text.find(sep, begin)) != std::string::npos; begin = pos + sep.size()) {
    out.push_back(text.substr(begin, pos - begin));
  }
  out.push_back(text.substr(begin));
  return out;
}

std::vector<TokenId> parse_ids(const std::string& line) {
  std::vector<TokenId> ids;
  std::istringstream in(line);
  for (long v; in >> v;) ids.push_back(static_cast<TokenId>(v));
  return ids;
}

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += std::to_string(id) + " ";
  return s;
}

class VocabCases : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabCases, MatchExpectedIds) {
  QUIP_REQUIRE_SHARED();
  const fs::path gguf = testing::shared_dir() / "vocab" / GetParam();
  const std::vector<std::string> inputs =
      split(testing::read_file(gguf.string() + ".inp"), "\n__ggml_vocab_test__\n");
  std::vector<std::string> outputs = split(testing::read_file(gguf.string() + ".out"), "\n");
  auto f = gguf::GgufFile::open(gguf.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto t = Tokenizer::load(*f);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_GE(outputs.size(), inputs.size() - 1);
  size_t checked = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == inputs.size() - 1 && inputs[i].empty() && i >= outputs.size()) break;
    const std::vector<TokenId> expected = parse_ids(outputs[i]);
    const std::vector<TokenId> got =
        t->encode(inputs[i], {.add_special = false, .parse_special = false});
    EXPECT_EQ(show(got), show(expected)) << "case " << i << ": '" << inputs[i] << "'";
    EXPECT_EQ(t->decode(got), inputs[i]) << "case " << i;
    ++checked;
  }
  EXPECT_GE(checked, inputs.size() - 1);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabCases,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",
                                           "ggml-vocab-llama-bpe.gguf", "ggml-vocab-gpt-2.gguf",
                                           "ggml-vocab-deepseek-llm.gguf",
                                           "ggml-vocab-deepseek-coder.gguf",
                                           "ggml-vocab-falcon.gguf", "ggml-vocab-mpt.gguf",
                                           "ggml-vocab-starcoder.gguf", "ggml-vocab-refact.gguf"),
                         [](const auto& param_info) {
                           std::string n = param_info.param.substr(11);
                           n = n.substr(0, n.size() - 5);
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(ReferenceModels, PromptTokensMatchLlamaCpp) {
  QUIP_REQUIRE_SHARED();
  const auto ref = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  size_t checked = 0;
  for (const auto& m : ref.at("models")) {
    const fs::path path = testing::shared_dir() / "models" / m.at("model").get<std::string>();
    auto f = gguf::GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto t = Tokenizer::load(*f);
    ASSERT_TRUE(t.ok()) << t.error().message;
    for (const auto& c : m.at("completions")) {
      const std::string text = c.at("text");
      const std::vector<TokenId> expected = c.at("prompt_tokens").get<std::vector<TokenId>>();
      EXPECT_EQ(show(t->encode(text)), show(expected)) << path.filename() << ": '" << text << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

}  // namespace
}  // namespace quip::tokenizer
