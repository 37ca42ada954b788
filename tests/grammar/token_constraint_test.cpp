// The tokens a grammar allows, held to a brute-force oracle: token t is
// allowed after the text so far exactly when (text + t's bytes) is still a
// prefix of a sentence (is_prefix), and an end token exactly when the text
// is a sentence (matches).
#include "grammar/token_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace quip::grammar {
namespace {

std::shared_ptr<const Grammar> compile(std::string_view text) {
  auto g = compile_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? *g : nullptr;
}

// A vocabulary with what real ones have: single bytes (byte-level BPE's
// and SentencePiece's byte fallback), bytes of a character split over
// tokens, whole words with and without a leading space, JSON punctuation
// runs, duplicates, an empty text (a control token) and an end token.
std::vector<std::string> test_vocab() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t :
       {"yes",   "no",       " yes", "ye",  "s",     "nope", "{\"",   "\":", "\",\"", "\"}",
        "\"",    ":",        ",",    "{",   "}",     "[",    "]",     " ",   "  ",    "true",
        "false", "null",     "12",   "0.",  "e-",    "\\n",  "\\u00", "é",   "\xC3",  "\xA9",
        "日本",  "\xE6\x97", "\xA5", "abc", "abc\"", "a\"}", "name",  "age", "yes",   "\n"}) {
    v.push_back(t);
  }
  v.push_back("");  // a control token: never drawn for its text
  v.push_back("");  // the end token (its text is not the answer's)
  return v;
}

constexpr float kNever = -INFINITY;

// Checks the constraint's allowed set after `text` against the oracle.
void expect_allowed_as_oracle(GrammarConstraint& c, const Grammar& g,
                              const std::vector<std::string>& vocab, const std::string& text,
                              int32_t end_token) {
  std::vector<float> logits(vocab.size(), 1.0f);
  const bool any = c.restrict(logits);
  bool want_any = false;
  for (size_t id = 0; id < vocab.size(); ++id) {
    bool want;
    if (static_cast<int32_t>(id) == end_token)
      want = matches(g, text);
    else
      want = !vocab[id].empty() && is_prefix(g, text + vocab[id]);
    want_any = want_any || want;
    ASSERT_EQ(logits[id] != kNever, want)
        << "after '" << text << "', token " << id << " '" << vocab[id] << "'";
  }
  EXPECT_EQ(any, want_any);
}

TEST(TokenConstraint, AllowsExactlyWhatKeepsTheTextAPrefix) {
  const std::vector<std::string> vocab = test_vocab();
  const auto trie = std::make_shared<const TokenTrie>(vocab);
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const char* grammars[] = {
      R"(root ::= "yes" | "no")",
      R"(root ::= "{" ws "\"name\":" ws str ws "," ws "\"age\":" ws [0-9]{1,3} ws "}"
str ::= "\"" ([^"\\] | "\\" ["\\nt])* "\""
ws ::= " "?)",
      R"(root ::= [日本é]+ "\n")",
      R"(root ::= ("ab" | "abc")+ "\"")",
  };
  std::mt19937 rng(11);
  for (const char* text : grammars) {
    SCOPED_TRACE(text);
    const auto g = compile(text);
    ASSERT_TRUE(g);
    // Several random walks: each step checks the allowed set, then draws
    // one of the allowed tokens.
    for (int walk = 0; walk < 8; ++walk) {
      GrammarConstraint c(g, trie, {end});
      std::string so_far;
      for (int step = 0; step < 24 && !c.complete(); ++step) {
        expect_allowed_as_oracle(c, *g, vocab, so_far, end);
        if (::testing::Test::HasFatalFailure()) return;
        std::vector<float> logits(vocab.size(), 0.0f);
        if (!c.restrict(logits)) break;
        std::vector<int32_t> allowed;
        for (size_t id = 0; id < vocab.size(); ++id)
          if (logits[id] != kNever) allowed.push_back(static_cast<int32_t>(id));
        const int32_t id = allowed[rng() % allowed.size()];
        if (id == end) break;
        c.accept(id);
        so_far += vocab[static_cast<size_t>(id)];
        EXPECT_EQ(c.accepting(), matches(*g, so_far)) << so_far;
      }
    }
  }
}

// A character split over two tokens: the first byte is allowed where the
// character may come, then only the bytes that complete it.
TEST(TokenConstraint, SplitCharactersAreFollowedExactly) {
  const std::vector<std::string> vocab = test_vocab();
  const auto trie = std::make_shared<const TokenTrie>(vocab);
  const auto g = compile(R"(root ::= "é" "!")");
  ASSERT_TRUE(g);
  GrammarConstraint c(g, trie, {});
  std::vector<float> logits(vocab.size(), 0.0f);
  ASSERT_TRUE(c.restrict(logits));
  const auto id_of = [&](const std::string& t) {
    for (size_t id = 0; id < vocab.size(); ++id)
      if (vocab[id] == t) return static_cast<int32_t>(id);
    return -1;
  };
  EXPECT_NE(logits[static_cast<size_t>(id_of("\xC3"))], kNever);
  EXPECT_NE(logits[static_cast<size_t>(id_of("é"))], kNever);
  EXPECT_EQ(logits[static_cast<size_t>(id_of("\xA9"))], kNever);
  c.accept(id_of("\xC3"));
  std::fill(logits.begin(), logits.end(), 0.0f);
  ASSERT_TRUE(c.restrict(logits));
  size_t allowed = 0;
  for (size_t id = 0; id < vocab.size(); ++id) allowed += logits[id] != kNever;
  // Only the byte that completes the character (the vocabulary has it twice).
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (logits[id] != kNever) {
      EXPECT_EQ(vocab[id], "\xA9") << id;
    }
  }
  EXPECT_EQ(allowed, 2u);
  c.accept(id_of("\xA9"));
  c.accept(id_of("!"));
  EXPECT_TRUE(c.accepting());
  EXPECT_TRUE(c.complete());  // nothing can follow: generation ends without an end token
}

// Where the text is a sentence that could go on, the end token is allowed
// beside the tokens that go on; where it is not one, the end is not.
TEST(TokenConstraint, TheEndIsAllowedOnlyWhereTheAnswerIsWhole) {
  const std::vector<std::string> vocab = test_vocab();
  const auto trie = std::make_shared<const TokenTrie>(vocab);
  const auto end = static_cast<int32_t>(vocab.size() - 1);
  const auto g = compile(R"(root ::= [0-9]+)");
  ASSERT_TRUE(g);
  GrammarConstraint c(g, trie, {end});
  std::vector<float> logits(vocab.size(), 0.0f);
  ASSERT_TRUE(c.restrict(logits));
  EXPECT_EQ(logits[static_cast<size_t>(end)], kNever);
  c.accept('7');
  std::fill(logits.begin(), logits.end(), 0.0f);
  ASSERT_TRUE(c.restrict(logits));
  EXPECT_NE(logits[static_cast<size_t>(end)], kNever);
  EXPECT_NE(logits['8'], kNever);
  EXPECT_FALSE(c.complete());
}

// A grammar the vocabulary cannot spell: no token is allowed.
TEST(TokenConstraint, AVocabularyThatCannotContinueAllowsNothing) {
  const auto trie = std::make_shared<const TokenTrie>(std::vector<std::string>{"a", "b", ""});
  const auto g = compile(R"(root ::= "c")");
  ASSERT_TRUE(g);
  GrammarConstraint c(g, trie, {2});
  std::vector<float> logits(3, 0.0f);
  EXPECT_FALSE(c.restrict(logits));
}

}  // namespace
}  // namespace quip::grammar
