#include "tokenizer/unicode.h"

#include "base/text.h"

namespace quip::tokenizer {

Utf8Char utf8_decode(std::string_view s, size_t i) {
  const size_t n = utf8_sequence_length(s, i);
  if (n == 0) return {kInvalidCodepoint, 1};
  const auto b = [&](size_t k) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k]));
  };
  switch (n) {
    case 1: return {b(0), 1};
    case 2: return {((b(0) & 0x1F) << 6) | (b(1) & 0x3F), 2};
    case 3: return {((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F), 3};
    default:
      return {((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F),
              4};
  }
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

const ByteMap& ByteMap::get() {
  static const ByteMap map;
  return map;
}

ByteMap::ByteMap() {
  decoded_.fill(-1);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? b : next++;
    std::string text;
    utf8_append(text, cp);
    encoded_len_[b] = static_cast<uint8_t>(text.size());
    for (size_t k = 0; k < text.size(); ++k) encoded_[b][k] = text[k];
    decoded_[cp] = static_cast<int16_t>(b);
  }
}

}  // namespace quip::tokenizer
