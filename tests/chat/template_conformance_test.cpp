// Chat template conformance against ../shared/templates: every real model
// template renders every conversation exactly as Python jinja2 with Hugging
// Face's apply_chat_template settings did (expected.json), with
// add_generation_prompt true and false, and fails where Python failed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "chat/chat_template.h"
#include "support/shared.h"

namespace quip::chat {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// strftime_now's fixed time in expected.json: 2026-01-02 03:04:05 UTC.
constexpr int64_t kFixedNow = 1767323045;

// "template|conversation|add_generation_prompt" of cases that cannot pass,
// each with the reason. A listed case that starts passing fails the test, so
// the list only ever shrinks.
const std::map<std::string, std::string>& known_failures() {
  static const std::map<std::string, std::string> failures = {};
  return failures;
}

const ordered_json& expected() {
  static const ordered_json j = [] {
    if (testing::shared_dir().empty()) return ordered_json();
    return ordered_json::parse(testing::read_file(testing::shared_dir() / "templates" / "expected.json"));
  }();
  return j;
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  for (const fs::path& p : testing::shared_files("templates", ".jinja")) names.push_back(p.filename().string());
  if (names.empty()) names.push_back("missing");  // the test then skips (or fails under CI)
  return names;
}

class TemplateConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(TemplateConformance, RendersAsJinja2) {
  QUIP_REQUIRE_SHARED();
  const std::string name = GetParam();
  const ordered_json* entry = nullptr;
  for (const ordered_json& t : expected().at("templates")) {
    if (t.at("name") == name) entry = &t;
  }
  ASSERT_NE(entry, nullptr) << name << " is not in expected.json";
  const std::string source = testing::read_file(testing::shared_dir() / "templates" / name);
  Result<ChatTemplate> tpl = ChatTemplate::parse(source);
  ASSERT_TRUE(tpl.ok()) << name << ": " << tpl.error().message;

  const ordered_json& tokens = expected().at("special_tokens");
  size_t passed = 0;
  for (const ordered_json& c : entry->at("cases")) {
    const std::string conversation = c.at("conversation");
    const bool agp = c.at("add_generation_prompt");
    const std::string key = name + "|" + conversation + "|" + (agp ? "true" : "false");
    RenderOptions options;
    options.add_generation_prompt = agp;
    options.bos_token = tokens.at("bos_token");
    options.eos_token = tokens.at("eos_token");
    options.now = kFixedNow;
    const Result<std::string> got = tpl->render(expected().at("conversations").at(conversation), options);
    bool ok;
    std::string why;
    if (c.contains("error")) {
      ok = !got.ok();
      if (!ok) why = "rendered, but jinja2 failed with " + c.at("error").get<std::string>() + ":\n" + *got;
    } else {
      const std::string want = c.at("rendered");
      ok = got.ok() && *got == want;
      if (!ok) {
        why = got.ok() ? "got:\n" + *got + "\n--- want:\n" + want : "failed: " + got.error().message;
      }
    }
    const auto known = known_failures().find(key);
    if (known != known_failures().end()) {
      EXPECT_FALSE(ok) << key << " now passes; remove it from known_failures()";
      continue;
    }
    EXPECT_TRUE(ok) << key << ": " << why;
    passed += ok ? 1 : 0;
  }
  EXPECT_GT(passed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shared, TemplateConformance, ::testing::ValuesIn(template_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;
                           if (n.ends_with(".jinja")) n.resize(n.size() - 6);
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// Every file in the folder is covered by expected.json, and the other way.
TEST(TemplateConformance, EveryTemplateHasCases) {
  QUIP_REQUIRE_SHARED();
  std::set<std::string> files;
  for (const fs::path& p : testing::shared_files("templates", ".jinja")) files.insert(p.filename().string());
  std::set<std::string> listed;
  for (const ordered_json& t : expected().at("templates")) listed.insert(t.at("name").get<std::string>());
  EXPECT_EQ(files, listed);
}

}  // namespace
}  // namespace quip::chat
