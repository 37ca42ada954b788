#include "grammar/token_constraint.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace quip::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& texts) : texts_(texts) {
  CHECK(texts.size() < std::numeric_limits<int32_t>::max());
  for (size_t id = 0; id < texts.size(); ++id)
    if (!texts[id].empty()) tokens_.push_back(static_cast<int32_t>(id));
  std::sort(tokens_.begin(), tokens_.end(), [&](int32_t a, int32_t b) {
    return texts[static_cast<size_t>(a)] < texts[static_cast<size_t>(b)];
  });
  build(texts, 0, static_cast<uint32_t>(tokens_.size()), 0);
}

// The node for the texts tokens_[begin, end), which share their first
// `depth` bytes; sorted, so those that end there come first and each next
// byte's tokens are a run. Recursion depth is the longest token's length.
uint32_t TokenTrie::build(const std::vector<std::string>& texts, uint32_t begin, uint32_t end,
                          size_t depth) {
  const auto index = static_cast<uint32_t>(nodes_.size());
  nodes_.emplace_back();
  uint32_t i = begin;
  while (i < end && texts[static_cast<size_t>(tokens_[i])].size() == depth) ++i;
  nodes_[index].first_token = begin;
  nodes_[index].n_tokens = i - begin;
  // The children's runs, then the children: each node's edges are contiguous.
  std::vector<std::pair<uint8_t, std::pair<uint32_t, uint32_t>>> runs;
  while (i < end) {
    const auto b = static_cast<uint8_t>(texts[static_cast<size_t>(tokens_[i])][depth]);
    uint32_t j = i + 1;
    while (j < end && static_cast<uint8_t>(texts[static_cast<size_t>(tokens_[j])][depth]) == b) ++j;
    runs.push_back({b, {i, j}});
    i = j;
  }
  nodes_[index].first_edge = static_cast<uint32_t>(edge_bytes_.size());
  nodes_[index].n_edges = static_cast<uint32_t>(runs.size());
  edge_bytes_.resize(edge_bytes_.size() + runs.size());
  edge_nodes_.resize(edge_nodes_.size() + runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    const uint32_t child = build(texts, runs[k].second.first, runs[k].second.second, depth + 1);
    const size_t e = nodes_[index].first_edge + k;
    edge_bytes_[e] = runs[k].first;
    edge_nodes_[e] = child;
  }
  return index;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const TokenTrie> trie,
                                     std::vector<int32_t> end_tokens)
    : trie_(std::move(trie)),
      end_tokens_(std::move(end_tokens)),
      automaton_(std::move(grammar)),
      state_(automaton_.start()) {}

const std::vector<uint64_t>& GrammarConstraint::allowed() {
  CHECK(state_ != Automaton::kDead);
  if (const auto it = allowed_.find(state_); it != allowed_.end()) return it->second;
  std::vector<uint64_t> bits((trie_->vocab_size() + 63) / 64, 0);
  const auto allow = [&](int32_t id) {
    bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (static_cast<size_t>(id) % 64);
  };
  // Depth first over the trie; the root's tokens (empty texts) are none.
  walk_.assign(1, {0, state_});
  while (!walk_.empty()) {
    const auto [node_index, s] = walk_.back();
    walk_.pop_back();
    const TokenTrie::Node& node = trie_->nodes_[node_index];
    if (node_index != 0) {
      for (uint32_t t = 0; t < node.n_tokens; ++t) allow(trie_->tokens_[node.first_token + t]);
    }
    for (uint32_t e = 0; e < node.n_edges; ++e) {
      const Automaton::State to = automaton_.next(s, trie_->edge_bytes_[node.first_edge + e]);
      if (to != Automaton::kDead) walk_.push_back({trie_->edge_nodes_[node.first_edge + e], to});
    }
  }
  if (automaton_.accepting(state_))
    for (int32_t id : end_tokens_) allow(id);
  return allowed_.emplace(state_, std::move(bits)).first->second;
}

bool GrammarConstraint::restrict(std::span<float> logits) {
  CHECK(logits.size() == trie_->vocab_size());
  const std::vector<uint64_t>& bits = allowed();
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (size_t w = 0; w < bits.size(); ++w) {
    const size_t begin = w * 64, end = std::min(begin + 64, logits.size());
    const uint64_t word = bits[w];
    if (word == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin),
                logits.begin() + static_cast<std::ptrdiff_t>(end), kNever);
      continue;
    }
    any = true;
    if (word == ~uint64_t{0}) continue;
    for (size_t i = begin; i < end; ++i)
      if (!(word >> (i - begin) & 1)) logits[i] = kNever;
  }
  return any;
}

void GrammarConstraint::accept(int32_t id) {
  CHECK(id >= 0 && static_cast<size_t>(id) < trie_->vocab_size());
  if (std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end()) return;
  state_ = automaton_.run(state_, trie_->text(id));
  CHECK(state_ != Automaton::kDead);  // restrict allowed it
}

bool GrammarConstraint::complete() const {
  return state_ != Automaton::kDead && automaton_.accepting(state_) &&
         !automaton_.can_continue(state_);
}

}  // namespace quip::grammar
