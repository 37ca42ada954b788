// `quip tokenize`, tested through the `quip` binary itself (QUIP_BINARY):
// exit status, stdout and stderr.
//
// Expectations come from another path than the binary's: the library's
// Tokenizer on the same file (so the command is checked to print what the
// library computes, not what the library computes to be right: that is
// tokenizer_test.cpp's job), files this test writes, and the output format
// the command documents (one "ID<TAB>PIECE" line per token, escaped).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "support/run_quip.h"
#include "support/shared.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

extern char** environ;

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using gguf::GgufFile;
using gguf::GgufWriter;
using gguf::make_array;
using tokenizer::EncodeOptions;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitBadData = 3;

using testing::count_lines;
using testing::describe;
using testing::RunResult;
using testing::split_lines;
using testing::TempDir;

RunResult run_quip(const std::vector<std::string>& args, const testing::RunOptions& o = {}) {
  return testing::run_quip(args, o);
}

using testing::write_bytes;
using tokenizer::test_vocabs::shared_tokenizer;

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

fs::path model(const char* name) {
  return testing::shared_dir() / "models" / name;
}
fs::path vocab(const char* name) {
  return testing::shared_dir() / "vocab" / name;
}

// The ids `quip tokenize --ids ...` prints, checking it succeeds with one line.
std::optional<std::vector<TokenId>> cli_ids(const std::vector<std::string>& args,
                                            const std::string& stdin_from = "/dev/null") {
  const RunResult r = run_quip(args, {.stdin_from = stdin_from, .stdout_to = ""});
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  EXPECT_EQ(count_lines(r.out), 1u) << describe(args, r) << "\n  stdout: " << r.out;
  if (r.status != kExitOk || !r.out.ends_with("\n")) return std::nullopt;
  std::vector<TokenId> ids;
  std::istringstream in(r.out);
  for (long v; in >> v;) ids.push_back(static_cast<TokenId>(v));
  EXPECT_TRUE(in.eof()) << "not a list of ids: " << r.out;
  return ids;
}

// The inverse of the escapes the output format documents: \\ \t \n \r \xNN.
// nullopt for anything else after a backslash.
std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    switch (s[i]) {
      case '\\': out += '\\'; break;
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 'x': {
        if (s.size() - i < 3) return std::nullopt;
        const std::string hex(s.substr(i + 1, 2));
        if (hex.find_first_not_of("0123456789ABCDEFabcdef") != std::string::npos) {
          return std::nullopt;
        }
        out += static_cast<char>(std::stoi(hex, nullptr, 16));
        i += 2;
        break;
      }
      default: return std::nullopt;
    }
  }
  return out;
}

// ---- --ids: what the library computes ----------------------------------------

const char* const kModels[] = {"tiny-llama-spm-e64-f16.gguf", "tiny-qwen2-e64-f16.gguf",
                               "tiny-llama3-e64-q8_0.gguf"};

const char* const kTexts[] = {
    "Hello world",
    "Gr\xC3\xBC\xC3\x9F"
    "e \xF0\x9F\x99\x82 \xE4\xB8\x96\xE7\x95\x8C!",
    "  two  spaces\tand a tab, 12345 digits",
};

TEST(TokenizeCli, IdsMatchTheLibrary) {
  QUIP_REQUIRE_SHARED();
  std::vector<fs::path> files;
  for (const char* m : kModels) files.push_back(model(m));
  files.push_back(vocab("ggml-vocab-gpt-2.gguf"));
  for (const fs::path& path : files) {
    const Tokenizer* t = shared_tokenizer(path);
    ASSERT_NE(t, nullptr);
    for (const char* text : kTexts) {
      SCOPED_TRACE(path.filename().string() + ": '" + printable(text) + "'");
      const auto ids = cli_ids({"tokenize", "-m", path.string(), "--ids", text});
      ASSERT_TRUE(ids.has_value());
      EXPECT_EQ(show(*ids), show(t->encode(text)));
    }
  }
}

TEST(TokenizeCli, WordsAreJoinedBySpaces) {
  QUIP_REQUIRE_SHARED();
  const fs::path path = model("tiny-llama3-e64-q8_0.gguf");
  const Tokenizer* t = shared_tokenizer(path);
  ASSERT_NE(t, nullptr);
  const auto ids = cli_ids({"tokenize", "--ids", "-m", path.string(), "Hello", "big", "world"});
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(show(*ids), show(t->encode("Hello big world")));
}

TEST(TokenizeCli, DashReadsStdin) {
  QUIP_REQUIRE_SHARED();
  TempDir dir;
  // Any bytes at all: a NUL and bytes that are not UTF-8 included.
  const std::string text = std::string("Hello\nworld \xF0\x9F\x99\x82\n\0\xFF\xFE\n  end\n", 27);
  write_bytes(dir / "input.txt", text);
  for (const fs::path& path :
       {model("tiny-llama-spm-e64-f16.gguf"), model("tiny-qwen2-e64-f16.gguf")}) {
    SCOPED_TRACE(path.filename().string());
    const Tokenizer* t = shared_tokenizer(path);
    ASSERT_NE(t, nullptr);
    const auto ids =
        cli_ids({"tokenize", "-m", path.string(), "--ids", "-"}, (dir / "input.txt").string());
    ASSERT_TRUE(ids.has_value());
    EXPECT_EQ(show(*ids), show(t->encode(text)));
  }
}

TEST(TokenizeCli, NoBosDropsTheSpmBos) {
  QUIP_REQUIRE_SHARED();
  const fs::path path = model("tiny-llama-spm-e64-f16.gguf");
  const Tokenizer* t = shared_tokenizer(path);
  ASSERT_NE(t, nullptr);
  const auto with_bos = cli_ids({"tokenize", "-m", path.string(), "--ids", "Hello world"});
  const auto without =
      cli_ids({"tokenize", "-m", path.string(), "--ids", "--no-bos", "Hello world"});
  ASSERT_TRUE(with_bos.has_value() && without.has_value());
  ASSERT_FALSE(with_bos->empty());
  EXPECT_EQ(with_bos->front(), 1);  // <s>: Llama 2 adds BOS
  EXPECT_EQ(show(*without), show(t->encode("Hello world", {.add_special = false})));
  EXPECT_EQ(std::count(without->begin(), without->end(), 1), 0) << show(*without);
  EXPECT_EQ(show(std::vector<TokenId>(with_bos->begin() + 1, with_bos->end())), show(*without));
}

TEST(TokenizeCli, ParseSpecialMatchesQwen2ControlTokens) {
  QUIP_REQUIRE_SHARED();
  const fs::path path = model("tiny-qwen2-e64-f16.gguf");
  const Tokenizer* t = shared_tokenizer(path);
  ASSERT_NE(t, nullptr);
  const TokenId im_start = t->vocab().find("<|im_start|>");
  ASSERT_NE(im_start, tokenizer::kNoToken);
  const std::string text = "<|im_start|>";

  const auto plain = cli_ids({"tokenize", "-m", path.string(), "--ids", text});
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(std::count(plain->begin(), plain->end(), im_start), 0) << show(*plain);
  EXPECT_GT(plain->size(), 1u);
  EXPECT_EQ(show(*plain), show(t->encode(text)));

  const auto parsed = cli_ids({"tokenize", "-m", path.string(), "--ids", "--parse-special", text});
  ASSERT_TRUE(parsed.has_value());
  std::vector<TokenId> expected;
  if (t->vocab().add_bos() && t->vocab().bos() != tokenizer::kNoToken) {
    expected.push_back(t->vocab().bos());
  }
  expected.push_back(im_start);
  EXPECT_EQ(show(*parsed), show(expected));
}

// ---- Default output: one "ID<TAB>PIECE" line per token -------------------------

// Checks `quip tokenize` (without --ids) prints one line per token of `text`,
// each the id, a tab and the token's bytes escaped; returns the lines.
std::vector<std::string> expect_token_lines(const fs::path& path, const std::string& text) {
  const Tokenizer* t = shared_tokenizer(path);
  if (t == nullptr) return {};
  const std::vector<TokenId> ids = t->encode(text, {.parse_special = true});
  const std::vector<std::string> args = {"tokenize", "-m", path.string(), "--parse-special", text};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  const std::vector<std::string> lines = split_lines(r.out);
  EXPECT_TRUE(r.out.ends_with("\n")) << r.out;
  EXPECT_EQ(lines.size(), ids.size()) << describe(args, r) << "\n  stdout: " << r.out;
  for (size_t i = 0; i < std::min(lines.size(), ids.size()); ++i) {
    SCOPED_TRACE("line " + std::to_string(i) + ": '" + printable(lines[i]) + "'");
    const size_t tab = lines[i].find('\t');
    if (tab == std::string::npos) {
      ADD_FAILURE() << "no tab";
      continue;
    }
    EXPECT_EQ(lines[i].substr(0, tab), std::to_string(ids[i]));
    const std::string shown = lines[i].substr(tab + 1);
    for (char c : shown) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          << "raw control byte " << static_cast<int>(c);
    }
    const std::optional<std::string> bytes = unescape(shown);
    EXPECT_TRUE(bytes.has_value()) << "not a valid escape";
    EXPECT_EQ(bytes.value_or("(invalid)"), t->piece(ids[i], /*special=*/true));
  }
  return lines;
}

TEST(TokenizeCli, DefaultOutputIsOneLinePerToken) {
  QUIP_REQUIRE_SHARED();
  for (const char* m : kModels) {
    SCOPED_TRACE(m);
    for (const char* text : kTexts) expect_token_lines(model(m), text);
    expect_token_lines(model(m), "<|im_start|>user\nback\\slash \\x41 \x01\x7F\t<s>\r\n\xFF.");
  }
}

TEST(TokenizeCli, NewlinesAndTabsInPiecesAreEscaped) {
  QUIP_REQUIRE_SHARED();
  const fs::path path = vocab("ggml-vocab-gpt-2.gguf");
  const Tokenizer* t = shared_tokenizer(path);
  ASSERT_NE(t, nullptr);
  const std::string text = "a\n\tb\n\nc\t\td";
  const std::vector<std::string> lines = expect_token_lines(path, text);
  const std::vector<TokenId> ids = t->encode(text);
  ASSERT_EQ(lines.size(), ids.size());
  size_t newlines = 0, tabs = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = t->piece(ids[i], true);
    const std::string shown = lines[i].substr(lines[i].find('\t') + 1);
    if (piece.find('\n') != std::string::npos) {
      ++newlines;
      EXPECT_NE(shown.find("\\n"), std::string::npos) << shown;
    }
    if (piece.find('\t') != std::string::npos) {
      ++tabs;
      EXPECT_NE(shown.find("\\t"), std::string::npos) << shown;
    }
  }
  EXPECT_GT(newlines, 0u);
  EXPECT_GT(tabs, 0u);
}

// ---- Usage errors: exit 2, one line on stderr -----------------------------------

void expect_usage_error(const std::vector<std::string>& args) {
  testing::expect_failure(args, kExitUsage);
}

TEST(TokenizeCli, MissingModelOrTextExits2) {
  QUIP_REQUIRE_SHARED();
  const std::string path = model("tiny-qwen2-e64-f16.gguf").string();
  expect_usage_error({"tokenize", "hello"});
  expect_usage_error({"tokenize", "--ids", "hello"});
  expect_usage_error({"tokenize", "-m", path});
  expect_usage_error({"tokenize", "-m", path, "--ids"});
  expect_usage_error({"tokenize", "-m"});
  expect_usage_error({"tokenize"});
  expect_usage_error({"tokenize", "-m", path, "--no-such-option", "hello"});
}

TEST(TokenizeCli, HelpPrintsUsage) {
  const std::vector<std::string> args = {"tokenize", "--help"};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
  for (const char* word : {"--ids", "--no-bos", "--parse-special", "-m"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " not in:\n" << r.out;
  }
}

// ---- Unusable model files: exit 3, one line naming the file ------------------------

void expect_bad_model(const fs::path& path, const std::string& also = "") {
  const std::vector<std::string> args = {"tokenize", "-m", path.string(), "hello"};
  const RunResult r = testing::expect_failure(args, kExitBadData);
  EXPECT_NE(r.err.find(path.string()), std::string::npos) << describe(args, r);
  if (!also.empty()) {
    EXPECT_NE(r.err.find(also), std::string::npos) << describe(args, r);
  }
}

TEST(TokenizeCli, MissingModelFileExits3) {
  TempDir dir;
  expect_bad_model(dir / "no-such-model.gguf");
}

TEST(TokenizeCli, CorruptModelFileExits3) {
  TempDir dir;
  write_bytes(dir / "garbage.gguf", "this is not a GGUF file at all\n");
  expect_bad_model(dir / "garbage.gguf");
  write_bytes(dir / "empty.gguf", "");
  expect_bad_model(dir / "empty.gguf");
}

TEST(TokenizeCli, ModelWithoutUsableVocabularyExits3) {
  TempDir dir;
  GgufWriter none;  // a valid GGUF file with no tokenizer at all
  none.set("general.architecture", std::string("llama"));
  ASSERT_TRUE(none.write((dir / "no-vocab.gguf").string()).ok());
  expect_bad_model(dir / "no-vocab.gguf", "tokenizer.ggml.model");

  GgufWriter bad;  // a vocabulary with an unknown pre-tokenizer
  bad.set("general.architecture", std::string("gpt2"));
  bad.set("tokenizer.ggml.model", std::string("gpt2"));
  bad.set("tokenizer.ggml.pre", std::string("no-such-pre"));
  bad.set("tokenizer.ggml.tokens", make_array(std::vector<std::string>{"a", "b", "ab"}));
  bad.set("tokenizer.ggml.merges", make_array(std::vector<std::string>{"a b"}));
  ASSERT_TRUE(bad.write((dir / "bad-pre.gguf").string()).ok());
  expect_bad_model(dir / "bad-pre.gguf", "no-such-pre");
}

// The written vocabulary the bad one is made from works.
TEST(TokenizeCli, WrittenVocabularyTokenizes) {
  TempDir dir;
  GgufWriter w;
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string("gpt-2"));
  w.set("tokenizer.ggml.tokens", make_array(std::vector<std::string>{"a", "b", "ab"}));
  w.set("tokenizer.ggml.merges", make_array(std::vector<std::string>{"a b"}));
  ASSERT_TRUE(w.write((dir / "ab.gguf").string()).ok());
  const auto ids = cli_ids({"tokenize", "-m", (dir / "ab.gguf").string(), "--ids", "abab"});
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(show(*ids), "2 2");  // "a b" merges: ab ab
  const std::vector<std::string> args = {"tokenize", "-m", (dir / "ab.gguf").string(), "aba"};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.out, "2\tab\n0\ta\n");
}

// Special ids written as 0xFFFFFFFF ("no such token", stories260K's
// separator and padding): the file tokenizes, with one warning line on
// stderr naming the keys; a file without them warns of nothing.
TEST(TokenizeCli, AbsentSpecialIdsWarnOnce) {
  QUIP_REQUIRE_SHARED();
  const std::string stories = (testing::shared_dir() / "real" / "stories260K.gguf").string();
  const std::vector<std::string> args = {"tokenize", "-m", stories, "--ids", "Once upon a time"};
  const RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.out, "1 403 407 261 378\n");  // real/reference.json's prompt tokens
  ASSERT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("quip: warning: " + stories + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("'tokenizer.ggml.padding_token_id' = 4294967295"), std::string::npos);
  EXPECT_NE(r.err.find("'tokenizer.ggml.seperator_token_id' = 4294967295"), std::string::npos);

  const std::string tiny = (testing::shared_dir() / "real" / "TinyStories-656K-Q8_0.gguf").string();
  const RunResult quiet = run_quip({"tokenize", "-m", tiny, "--ids", "Once upon a time"});
  EXPECT_EQ(quiet.status, kExitOk);
  EXPECT_EQ(quiet.err, "");
}

// TinyStories-656K cannot spell "(" (no byte tokens): quip writes <unk>
// (id 0) where llama.cpp aborts.
TEST(TokenizeCli, UnspellableTextIsUnknownNotACrash) {
  QUIP_REQUIRE_SHARED();
  const std::string tiny = (testing::shared_dir() / "real" / "TinyStories-656K-Q8_0.gguf").string();
  const std::vector<std::string> args = {"tokenize", "-m", tiny, "(x)"};
  const RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << describe(args, r);
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "1\t<|start_story|>");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "0\t<unk>"), 2) << r.out;
}

}  // namespace
}  // namespace quip::cli
