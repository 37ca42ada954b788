// Constrained output through the quip command: --choice, --grammar (and
// --json-schema, tests/grammar/json_schema_test.cpp). The shared tiny
// models answer gibberish when free; constrained, every answer they give is
// checked by an independent rule (the choices, a regular expression, a JSON
// parser), on a SentencePiece and on byte-level BPE vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using quip::testing::RunResult;
using quip::testing::shared_path;

std::string grammar_file(const std::string& name) {
  return (fs::path(QUIP_TEST_DATA_DIR) / "grammars" / name).string();
}

// Models with each kind of vocabulary: SentencePiece with byte fallback,
// GPT-2-style byte-level BPE (Qwen2's), and Llama 3's.
const char* const kModels[] = {"models/tiny-llama-spm-e64-q8_0.gguf",
                               "models/tiny-qwen2-e64-q8_0.gguf",
                               "models/tiny-llama3-e64-q8_0.gguf"};

// Checks written apart from the grammars (not std::regex: GCC 12's
// sanitizer build reports a false maybe-uninitialized inside <regex>, and
// warnings are errors).

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// YYYY-MM-DD with a month 01-12 and a day 01-31.
bool is_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  const std::string_view v = s;
  if (!all_digits(v.substr(0, 4)) || !all_digits(v.substr(5, 2)) || !all_digits(v.substr(8, 2)))
    return false;
  const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// A JSON number (RFC 8259 section 6), white space around it allowed.
bool is_json_number(const std::string& text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return false;
  const size_t e = text.find_last_not_of(" \t\r\n") + 1;
  std::string_view s = std::string_view(text).substr(b, e - b);
  if (s.starts_with('-')) s.remove_prefix(1);
  // The integer part: 0, or digits not starting with 0.
  const size_t int_end = std::min(s.find_first_not_of("0123456789"), s.size());
  if (int_end == 0 || (s[0] == '0' && int_end > 1)) return false;
  s.remove_prefix(int_end);
  if (s.starts_with('.')) {
    const size_t n = std::min(s.find_first_not_of("0123456789", 1), s.size());
    if (n == 1) return false;
    s.remove_prefix(n);
  }
  if (s.starts_with('e') || s.starts_with('E')) {
    s.remove_prefix(1);
    if (s.starts_with('+') || s.starts_with('-')) s.remove_prefix(1);
    return all_digits(s);
  }
  return s.empty();
}

class Constrained : public testing_home::QuipHome {
 protected:
  void SetUp() override { QUIP_REQUIRE_SHARED(); }
  std::vector<std::string> call(const std::string& model, std::vector<std::string> more,
                                const std::string& prompt = "Is this a bug report?") const {
    std::vector<std::string> args = {"-m", shared_path(model), "--no-cache"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back(prompt);
    return args;
  }
};

TEST_F(Constrained, ChoiceAnswersExactlyOneChoiceOnALine) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    for (const std::string prompt : {"Is this a bug report?", "hello", "Réponds: oui ou non"}) {
      const std::string out = run_ok(call(model, {"--choice", "yes,no"}, prompt));
      EXPECT_TRUE(out == "yes\n" || out == "no\n") << out;
      const std::string fr = run_ok(call(model, {"--choice", "oui,non,peut-être"}, prompt));
      EXPECT_TRUE(fr == "oui\n" || fr == "non\n" || fr == "peut-être\n") << fr;
    }
    // --json: the choice as the text, marked valid.
    const nlohmann::json j =
        nlohmann::json::parse(run_ok(call(model, {"--choice", "red,green,blue", "--json"})));
    const std::string text = j.at("text");
    EXPECT_TRUE(text == "red" || text == "green" || text == "blue") << j.dump();
    EXPECT_EQ(j.at("valid"), true);
    EXPECT_EQ(j.at("stop"), "end");
  }
}

// A choice that is a prefix of another: the model may stop after the
// shorter one (an end token) or go on; either way the answer is one of them.
TEST_F(Constrained, ChoicesThatArePrefixesOfEachOther) {
  for (const char* model : kModels) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const std::string out = run_ok(
          call(model, {"--choice", "a,ab,abc", "--temp", "1", "--seed", std::to_string(seed)}));
      EXPECT_TRUE(out == "a\n" || out == "ab\n" || out == "abc\n") << model << ": " << out;
    }
  }
}

// Bounded grammars: every answer completes and passes a regular expression
// written independently of the grammar.
TEST_F(Constrained, GrammarAnswersAreSentences) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::vector<std::string> sampling = {"--temp", "0.8", "--seed", std::to_string(seed)};
      std::vector<std::string> args = {"--grammar", grammar_file("date.gbnf")};
      args.insert(args.end(), sampling.begin(), sampling.end());
      const std::string out = run_ok(call(model, args, "When?"));
      EXPECT_TRUE(is_date(out)) << out;
    }
  }
}

// JSON, with a grammar written for it: what completes within the limit is
// JSON a parser accepts; what does not is a failure, never printed.
TEST_F(Constrained, JsonGrammarAnswersParseOrFailClosed) {
  size_t complete = 0;
  for (const char* model : kModels) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<std::string> args =
          call(model, {"--grammar", grammar_file("json.gbnf"), "-n", "200", "--temp", "1.5",
                       "--seed", std::to_string(seed)});
      const RunResult r = run(args);
      if (r.status == kExitOk) {
        ++complete;
        // (nlohmann refuses numbers past a double's range, which JSON allows.)
        EXPECT_TRUE(nlohmann::json::accept(r.out) || is_json_number(r.out))
            << quip::testing::describe(args, r);
        EXPECT_EQ(r.err, "");
      } else {
        EXPECT_EQ(r.status, kExitFailure) << quip::testing::describe(args, r);
        EXPECT_EQ(r.out, "");
        EXPECT_NE(r.err.find("reached -n 200 before it was complete"), std::string::npos) << r.err;
      }
    }
  }
  // Not all cut short (a test that could pass with no JSON at all would prove little).
  EXPECT_GT(complete, 0u);
}

TEST_F(Constrained, AnAnswerCutShortIsAFailureNotAnAnswer) {
  const std::string model = kModels[1];
  // Nothing on stdout, one line on stderr, exit 1.
  expect_failure(call(model, {"--grammar", grammar_file("chess.gbnf"), "-n", "3"}), kExitFailure,
                 "the constrained answer reached -n 3 before it was complete; nothing was printed");
  // --json reports it as such (and the object is printed: it says it is not valid).
  const RunResult r =
      run(call(model, {"--grammar", grammar_file("chess.gbnf"), "-n", "3", "--json"}));
  EXPECT_EQ(r.status, kExitFailure);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("valid"), false);
  EXPECT_EQ(j.at("stop"), "length");
  EXPECT_EQ(j.at("tokens").size(), 3u);
  // The context too.
  expect_failure(call(model, {"--grammar", grammar_file("chess.gbnf"), "--ctx-size", "40"}),
                 kExitFailure, "filled the context");
}

TEST_F(Constrained, GrammarsThatCannotBeCompiledAreUsageErrors) {
  const fs::path bad = home() / "bad.gbnf";
  quip::testing::write_bytes(bad, "root ::= answer\nanswer ::= \"yes\" | nope\n");
  expect_failure(
      call(kModels[0], {"--grammar", bad.string()}), kExitUsage,
      "--grammar " + bad.string() + ": line 2, column 20: rule 'answer': unknown rule 'nope'");
  expect_failure(call(kModels[0], {"--grammar", (home() / "missing.gbnf").string()}), kExitUsage,
                 "--grammar: ");
  expect_failure(call(kModels[0], {"--choice", "yes,,no"}), kExitUsage, "an empty choice");
  expect_failure(call(kModels[0], {"--choice", "yes", "--grammar", grammar_file("date.gbnf")}),
                 kExitUsage, "give one of --grammar, --json-schema, --choice");
}

// Every schema of the corpus (tests/data/json_schemas), answered by tiny
// models on two kinds of vocabulary: each answer that completes within -n
// is valid for Python's jsonschema (Draft 2020-12, formats checked), and
// each that does not is a failure that prints nothing.
TEST_F(Constrained, JsonSchemaAnswersValidateWithPythonJsonschema) {
  const std::string python = quip::testing::python_with_jsonschema();
  if (python.empty()) {
    if (std::getenv("CI") != nullptr) FAIL() << "no python3 with jsonschema (CI is set)";
    GTEST_SKIP() << "no python3 with jsonschema and rfc3339-validator";
  }
  const fs::path corpus = fs::path(QUIP_TEST_DATA_DIR) / "json_schemas";
  const fs::path answers = home() / "answers.jsonl";
  std::string lines;
  size_t calls = 0, complete = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 30u);
  for (const fs::path& file : files) {
    const auto schema = nlohmann::ordered_json::parse(quip::testing::read_file(file)).at("schema");
    for (const char* model : {kModels[0], kModels[1]}) {
      const std::vector<std::string> args =
          call(model, {"--json-schema", schema.dump(), "-n", "300", "--temp", "1", "--seed", "3"},
               "Answer in JSON.");
      const RunResult r = run(args);
      ++calls;
      if (r.status == kExitOk) {
        ++complete;
        lines += nlohmann::ordered_json{{"schema", schema}, {"answer", r.out}}.dump() + "\n";
      } else {
        EXPECT_EQ(r.status, kExitFailure) << quip::testing::describe(args, r);
        EXPECT_EQ(r.out, "") << quip::testing::describe(args, r);
      }
    }
  }
  quip::testing::write_bytes(answers, lines);
  const fs::path script = fs::path(QUIP_TEST_DATA_DIR) / ".." / "grammar" / "check_json_schemas.py";
  const RunResult v = quip::testing::run_command(
      {"/usr/bin/env", python, script.string(), "--answers", answers.string()});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  EXPECT_NE(v.out.find(std::to_string(complete) + " answers, 0 invalid"), std::string::npos)
      << v.out;
  // Most answers complete (the schemas bound what a model could run on with).
  EXPECT_GE(complete * 10, calls * 7) << complete << " of " << calls;
}

// A thinking model's template is asked not to think: the answer is the
// grammar's from its first token (QwQ's template opens <think> in the
// prompt, so a free answer would begin inside the reasoning).
TEST_F(Constrained, AThinkingModelAnswersWithoutThinking) {
  const std::vector<std::string> args = {
      "-m",         shared_path("models/tiny-qwen3-e64-q8_0.gguf"),
      "--template", shared_path("templates/Qwen-QwQ-32B.jinja"),
      "--no-cache", "--choice",
      "yes,no",     "--json",
      "Is it?"};
  const nlohmann::json j = nlohmann::json::parse(run_ok(args));
  EXPECT_TRUE(j.at("text") == "yes" || j.at("text") == "no") << j.dump();
  EXPECT_EQ(j.at("reasoning"), "");
}

// The turn is recorded like any other, and a conversation goes on from it.
TEST_F(Constrained, ConstrainedTurnsAreRecordedAndContinue) {
  const std::string model = kModels[1];
  const nlohmann::json first =
      nlohmann::json::parse(run_ok(call(model, {"--choice", "yes,no", "--json"})));
  const std::string second = run_ok({"-c", "--no-cache", "--choice", "maybe,never", "why?"});
  EXPECT_TRUE(second == "maybe\n" || second == "never\n") << second;
  const std::string id = std::to_string(first.at("conversation").get<int64_t>());
  const nlohmann::json shown = nlohmann::json::parse(run_ok({"show", "--json", id}));
  ASSERT_EQ(shown.at("turns").size(), 2u) << shown.dump();
  EXPECT_EQ(shown.at("turns")[0].at("answer"), first.at("text"));
  EXPECT_EQ(shown.at("turns")[1].at("answer").get<std::string>() + "\n", second);
}

}  // namespace
}  // namespace quip::cli
