// Fuzzes chat::ReasoningSplitter, which reads a model's output: any text,
// in any style and starting state, cut into pieces of any size, splits
// exactly as the same text pushed whole, and no byte lands in both parts or
// twice (the markers are dropped). The first byte chooses the style, the
// starting state and the piece size; the rest is the text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/reasoning.h"

namespace {

using quip::chat::ReasoningSplitter;
using quip::chat::ReasoningStyle;

struct Parts {
  std::string answer, reasoning;
};

Parts split(ReasoningStyle style, bool inside, std::string_view text, size_t step) {
  ReasoningSplitter s(style, inside);
  Parts out;
  for (size_t at = 0; at < text.size(); at += step) {
    s.push(text.substr(at, step), out.answer, out.reasoning);
  }
  s.finish(out.answer, out.reasoning);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t control = data[0];
  const auto style = static_cast<ReasoningStyle>((control & 3) % 3);  // 3: None too
  const bool inside = ((control >> 2) & 1) != 0;
  const size_t step = 1 + (control >> 3);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const Parts whole = split(style, inside, text, text.empty() ? 1 : text.size());
  const Parts pieces = split(style, inside, text, step);
  if (whole.answer != pieces.answer || whole.reasoning != pieces.reasoning) std::abort();
  if (whole.answer.size() + whole.reasoning.size() > text.size()) std::abort();
  // Without a style, the answer is the text itself.
  if (style == ReasoningStyle::None && whole.answer != text) std::abort();
  return 0;
}
