// Fuzzes the GBNF compiler and the automaton that runs what it compiles.
// The input is "GRAMMAR\0TEXT": the grammar is compiled (any text: errors
// are expected, crashes and hangs are not), and when it compiles, TEXT is
// run through it byte by byte. Properties: once a byte is refused every
// longer text is too, and whether the whole text matches agrees with
// matches() on a fresh automaton.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "grammar/automaton.h"
#include "grammar/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find('\0');
  const std::string_view grammar_text = input.substr(0, cut);
  const std::string_view text = cut == std::string_view::npos ? "" : input.substr(cut + 1);
  auto compiled = quip::grammar::compile_gbnf(grammar_text);
  if (!compiled) return 0;
  using quip::grammar::Automaton;
  Automaton a(*compiled);
  Automaton::State s = a.start();
  bool refused = false;
  for (char c : text) {
    if (refused) break;
    s = a.next(s, static_cast<uint8_t>(c));
    refused = s == Automaton::kDead;
    if (a.state_count() > 100000) return 0;  // a grammar that branches widely: not a bug
  }
  const bool whole = !refused && a.accepting(s);
  if (whole != quip::grammar::matches(**compiled, text)) abort();
  if (refused == quip::grammar::is_prefix(**compiled, text)) abort();
  return 0;
}
