// UTF-8 and the byte-level mapping of GPT-2 style vocabularies.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace quip::tokenizer {

inline constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFF;

struct Utf8Char {
  uint32_t cp;   // the codepoint, or kInvalidCodepoint for a byte that starts no valid sequence
  uint32_t len;  // bytes consumed, at least 1
};

// Decodes the character at s[i]. PRECONDITIONS: i < s.size().
Utf8Char utf8_decode(std::string_view s, size_t i);

// Appends the UTF-8 encoding of `cp` (a valid scalar value).
void utf8_append(std::string& out, uint32_t cp);

// Length of the UTF-8 sequence that the lead byte `c` announces (1 for a byte
// that cannot lead one), without validating what follows.
inline uint32_t utf8_lead_length(unsigned char c) {
  if (c < 0xC0) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  if (c < 0xF8) return 4;
  return 1;
}

// GPT-2's bytes_to_unicode: every byte as a printable character, so that
// byte-level BPE vocabularies store byte strings as text. Printable Latin-1
// bytes map to themselves, the others to U+0100 onwards in byte order.
// (Radford et al. 2019, GPT-2 encoder.py.)
class ByteMap {
 public:
  static const ByteMap& get();

  // The UTF-8 text of the character that stands for byte b.
  std::string_view encode(uint8_t b) const { return {encoded_[b].data(), encoded_len_[b]}; }

  // The byte a character stands for, or -1 if it stands for none.
  int decode(uint32_t cp) const { return cp < decoded_.size() ? decoded_[cp] : -1; }

 private:
  ByteMap();
  std::array<std::array<char, 2>, 256> encoded_{};
  std::array<uint8_t, 256> encoded_len_{};
  std::array<int16_t, 324> decoded_{};  // codepoints up to U+0143
};

}  // namespace quip::tokenizer
