// A grammar run as a deterministic automaton over bytes, built lazily.
//
// A top-down matcher (llama.cpp's) holds a set of parse stacks: each stack
// says what must come next, down to the end of the root rule. Here stacks
// are interned nodes that share their tails, and a set of them is
// interned as a state, so the same situation reached twice is one state
// and each (state, byte) transition is computed once. A constraint then
// asks the same questions at a table lookup's cost (token_constraint.h).
//
// Memory grows with the states met (about 1 KiB each): a few thousand for
// a JSON schema's answer.
// Thread safety: none; one Automaton per generation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace quip::grammar {

class Automaton {
 public:
  using State = int32_t;
  static constexpr State kDead = -1;  // no sentence begins with the bytes so far

  explicit Automaton(std::shared_ptr<const Grammar> grammar);

  State start() const { return 0; }

  // The state after `byte`; kDead when it cannot come next.
  // PRECONDITIONS: s is a state of this automaton (not kDead).
  State next(State s, uint8_t byte);

  // The state after `bytes` (kDead as soon as one cannot come next).
  State run(State s, std::string_view bytes);

  // Whether the bytes so far are a whole sentence.
  bool accepting(State s) const { return states_[static_cast<size_t>(s)].accepting; }

  // Whether some byte may come next.
  bool can_continue(State s) const { return !states_[static_cast<size_t>(s)].heads.empty(); }

  size_t state_count() const { return states_.size(); }

 private:
  // One frame of a parse stack: symbol `pos` of alternative `alt` of
  // `rule` comes next, then what `parent` says (-1: the end of the input).
  struct Node {
    uint32_t rule, alt, pos;
    int32_t parent;
    bool operator==(const Node&) const = default;
  };
  struct NodeHash {
    size_t operator()(const Node& n) const;
  };
  struct StateData {
    std::vector<int32_t> heads;  // sorted stacks whose next symbol is a byte class
    bool accepting = false;
    std::unique_ptr<std::array<State, 256>> next;  // kUnknown until computed
  };
  struct HeadsHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  static constexpr State kUnknown = -2;

  int32_t intern(const Node& n);
  // Adds to heads the stacks `node` expands to whose next symbol is a
  // byte class; sets accepting where it can end here.
  void expand(int32_t node, std::vector<int32_t>& heads, bool& accepting);
  State intern_state(std::vector<int32_t> heads, bool accepting);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::unordered_map<Node, int32_t, NodeHash> node_ids_;
  std::vector<StateData> states_;
  std::unordered_map<std::vector<int32_t>, State, HeadsHash> state_ids_[2];  // by accepting
  std::vector<int32_t> work_;                                                // expand's stack
  std::vector<uint32_t> visited_;  // expand's marks, by node: the pass that saw it
  uint32_t pass_ = 0;
};

}  // namespace quip::grammar
