// Tokenization against llama.cpp's own: tests/data/llama-tokenize.json holds
// what llama-tokenize (build 9749) printed for the real vocabularies
// (../shared/real, the SmolLM2 demo model) and the shared ones, on the
// shared .inp strings and on strings full of special-token text, with and
// without BOS and special-token parsing (tests/data/README.md).
//
// Where llama.cpp aborts (TinyStories-656K cannot spell "(": no byte
// tokens), the case holds quip's own answer instead ("quip"), by the rule
// README.md documents: each run of characters the vocabulary cannot spell is
// one <unk>.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/shared.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace quip::tokenizer {
namespace {

using test_vocabs::show;

const nlohmann::json& recorded() {
  static const nlohmann::json j = nlohmann::json::parse(
      testing::read_file(std::filesystem::path(QUIP_TEST_DATA_DIR) / "llama-tokenize.json"));
  return j;
}

std::vector<std::string> vocab_names() {
  std::vector<std::string> names;
  for (const auto& v : recorded().at("vocabs")) names.push_back(v.at("vocab"));
  return names;
}

class LlamaTokenize : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaTokenize, SameIdsAsLlamaCpp) {
  std::filesystem::path path;
  if (GetParam() == "demo") {
    QUIP_REQUIRE_DEMO_MODEL(model);
    path = model;
  } else if (GetParam().starts_with("fetched:")) {  // another model of fetch_models.sh
    QUIP_REQUIRE_FETCHED_MODEL(model, GetParam().substr(8));
    path = model;
  } else {
    QUIP_REQUIRE_SHARED();
    path = testing::shared_dir() / GetParam();
  }
  const Tokenizer* t = test_vocabs::shared_tokenizer(path);
  ASSERT_NE(t, nullptr);
  size_t checked = 0, quip_only = 0;
  for (const auto& v : recorded().at("vocabs")) {
    if (v.at("vocab") != GetParam()) continue;
    for (const auto& c : v.at("cases")) {
      const std::string text = c.at("text");
      const std::string mode = c.at("mode");
      // llama-tokenize: BOS (and EOS) as the model asks unless --no-bos.
      const EncodeOptions options{.add_special = mode != "plain" && t->vocab().add_bos(),
                                  .parse_special = mode == "special"};
      const std::vector<TokenId> got = t->encode(text, options);
      if (c.contains("aborted")) {
        ASSERT_TRUE(c.contains("quip")) << "no quip-only answer for '" << text << "' " << mode;
        EXPECT_EQ(show(got), show(c.at("quip").get<std::vector<TokenId>>()))
            << mode << " '" << text << "' (llama.cpp aborts)";
        ++quip_only;
      } else {
        EXPECT_EQ(show(got), show(c.at("ids").get<std::vector<TokenId>>()))
            << mode << " '" << text << "'";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0u);
  RecordProperty("quip_only_cases", std::to_string(quip_only));
}

INSTANTIATE_TEST_SUITE_P(Recorded, LlamaTokenize, ::testing::ValuesIn(vocab_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;
                           n = n.substr(n.rfind('/') + 1);
                           n = n.substr(0, n.find(".gguf"));
                           for (char& ch : n) {
                             if (ch == '-' || ch == '.' || ch == ':') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace quip::tokenizer
