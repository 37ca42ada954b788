#include "grammar/automaton.h"

#include <algorithm>

#include "base/check.h"

namespace quip::grammar {

namespace {

size_t mix(size_t h, uint64_t v) {
  // splitmix64's finalizer over the running hash.
  uint64_t z = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<size_t>(z ^ (z >> 31));
}

bool in(const Symbol& s, uint8_t byte) {
  for (const ByteRange& r : s.bytes)
    if (byte >= r.lo && byte <= r.hi) return true;
  return false;
}

}  // namespace

size_t Automaton::NodeHash::operator()(const Node& n) const {
  return mix(mix(mix(n.rule, n.alt), n.pos), static_cast<uint32_t>(n.parent));
}

size_t Automaton::HeadsHash::operator()(const std::vector<int32_t>& v) const {
  size_t h = v.size();
  for (int32_t x : v) h = mix(h, static_cast<uint32_t>(x));
  return h;
}

Automaton::Automaton(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  CHECK(grammar_ && grammar_->root < grammar_->rules.size());
  std::vector<int32_t> heads;
  bool accepting = false;
  const Rule& root = grammar_->rules[grammar_->root];
  for (uint32_t a = 0; a < root.alternatives.size(); ++a)
    expand(intern({grammar_->root, a, 0, -1}), heads, accepting);
  const State s = intern_state(std::move(heads), accepting);
  CHECK(s == 0);
}

int32_t Automaton::intern(const Node& n) {
  const auto [it, added] = node_ids_.try_emplace(n, static_cast<int32_t>(nodes_.size()));
  if (added) {
    nodes_.push_back(n);
    visited_.push_back(0);
  }
  return it->second;
}

void Automaton::expand(int32_t node, std::vector<int32_t>& heads, bool& accepting) {
  // Each node once per pass: ambiguous grammars reach the same stack by
  // several paths. No rule reaches itself without a byte (the compiler
  // refuses left recursion), so this ends.
  ++pass_;
  work_.assign(1, node);
  while (!work_.empty()) {
    const int32_t id = work_.back();
    work_.pop_back();
    if (id < 0) {
      accepting = true;
      continue;
    }
    if (visited_[static_cast<size_t>(id)] == pass_) continue;
    visited_[static_cast<size_t>(id)] = pass_;
    const Node n = nodes_[static_cast<size_t>(id)];
    const Alternative& alt = grammar_->rules[n.rule].alternatives[n.alt];
    if (n.pos == alt.size()) {
      work_.push_back(n.parent);
      continue;
    }
    const Symbol& sym = alt[n.pos];
    if (!sym.is_rule) {
      heads.push_back(id);
      continue;
    }
    const int32_t rest =
        n.pos + 1 == alt.size() ? n.parent : intern({n.rule, n.alt, n.pos + 1, n.parent});
    const Rule& callee = grammar_->rules[sym.rule];
    for (uint32_t a = 0; a < callee.alternatives.size(); ++a)
      work_.push_back(intern({sym.rule, a, 0, rest}));
  }
}

Automaton::State Automaton::intern_state(std::vector<int32_t> heads, bool accepting) {
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  if (heads.empty() && !accepting) return kDead;
  auto& ids = state_ids_[accepting ? 1 : 0];
  if (const auto it = ids.find(heads); it != ids.end()) return it->second;
  const auto s = static_cast<State>(states_.size());
  ids.emplace(heads, s);
  StateData data;
  data.heads = std::move(heads);
  data.accepting = accepting;
  states_.push_back(std::move(data));
  return s;
}

Automaton::State Automaton::next(State s, uint8_t byte) {
  CHECK(s >= 0 && static_cast<size_t>(s) < states_.size());
  auto& table = states_[static_cast<size_t>(s)].next;
  if (!table) {
    table = std::make_unique<std::array<State, 256>>();
    table->fill(kUnknown);
  }
  if (const State known = (*table)[byte]; known != kUnknown) return known;
  std::vector<int32_t> heads;
  bool accepting = false;
  // A copy: expand() may add nodes, and intern_state() states.
  const std::vector<int32_t> from = states_[static_cast<size_t>(s)].heads;
  for (int32_t id : from) {
    const Node n = nodes_[static_cast<size_t>(id)];
    const Alternative& alt = grammar_->rules[n.rule].alternatives[n.alt];
    if (!in(alt[n.pos], byte)) continue;
    const int32_t rest =
        n.pos + 1 == alt.size() ? n.parent : intern({n.rule, n.alt, n.pos + 1, n.parent});
    expand(rest, heads, accepting);
  }
  const State to = intern_state(std::move(heads), accepting);
  (*states_[static_cast<size_t>(s)].next)[byte] = to;
  return to;
}

Automaton::State Automaton::run(State s, std::string_view bytes) {
  for (char c : bytes) {
    if (s == kDead) break;
    s = next(s, static_cast<uint8_t>(c));
  }
  return s;
}

bool matches(const Grammar& grammar, std::string_view text) {
  Automaton a(std::make_shared<const Grammar>(grammar));
  const Automaton::State s = a.run(a.start(), text);
  return s != Automaton::kDead && a.accepting(s);
}

bool is_prefix(const Grammar& grammar, std::string_view text) {
  Automaton a(std::make_shared<const Grammar>(grammar));
  return a.run(a.start(), text) != Automaton::kDead;
}

}  // namespace quip::grammar
