// Constrained output: the tokens a grammar allows next, for the sampler.
//
// The vocabulary is a byte trie of the tokens' texts. For a grammar state,
// a walk of the trie beside the automaton (automaton.h) finds every token
// whose bytes keep the answer a prefix of a sentence; a subtree is left as
// soon as its bytes cannot come next, so the walk costs what the state
// allows, not the vocabulary's size. The set found is kept per state, so
// a state met again (inside a JSON string, after each comma, ...) costs a
// lookup. End-of-generation tokens are allowed only where the answer is a
// whole sentence; other control tokens and tokens without text never.
//
// Thread safety: a TokenTrie is immutable and may be shared; a
// GrammarConstraint is one generation's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/generate.h"
#include "grammar/automaton.h"

namespace quip::grammar {

class TokenTrie {
 public:
  // texts[id]: the bytes token `id` stands for in an answer; empty for a
  // token that must never be drawn for its text (control tokens).
  explicit TokenTrie(const std::vector<std::string>& texts);

  size_t vocab_size() const { return texts_.size(); }
  const std::string& text(int32_t id) const { return texts_[static_cast<size_t>(id)]; }

 private:
  friend class GrammarConstraint;
  struct Node {
    uint32_t first_edge = 0, n_edges = 0;    // into edge_bytes_/edge_nodes_
    uint32_t first_token = 0, n_tokens = 0;  // into tokens_: those whose text ends here
  };
  uint32_t build(const std::vector<std::string>& texts, uint32_t begin, uint32_t end, size_t depth);

  std::vector<std::string> texts_;
  std::vector<Node> nodes_;  // nodes_[0]: the root (the empty text)
  std::vector<uint8_t> edge_bytes_;
  std::vector<uint32_t> edge_nodes_;
  std::vector<int32_t> tokens_;  // token ids sorted by text
};

class GrammarConstraint final : public engine::TokenConstraint {
 public:
  // end_tokens: the end-of-generation tokens (allowed where the answer is whole).
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                    std::vector<int32_t> end_tokens);

  bool restrict(std::span<float> logits) override;
  void accept(int32_t id) override;
  bool complete() const override;

  // Whether the answer so far is a whole sentence of the grammar.
  bool accepting() const { return state_ != Automaton::kDead && automaton_.accepting(state_); }

  // The tokens allowed now, as a bitmask over the vocabulary (bit id%64 of
  // word id/64). Computed on first use per state.
  const std::vector<uint64_t>& allowed();

 private:
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_tokens_;
  Automaton automaton_;
  Automaton::State state_;
  std::unordered_map<Automaton::State, std::vector<uint64_t>> allowed_;
  std::vector<std::pair<uint32_t, Automaton::State>> walk_;  // allowed()'s stack
};

}  // namespace quip::grammar
