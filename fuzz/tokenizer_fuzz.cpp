// libFuzzer target: tokenizing any bytes with a real vocabulary never
// crashes, and decoding gives the bytes back (SentencePiece and gemma4
// excepted for U+2581, which they write for a space by design).
//
// The vocabulary is named by the environment variable QUIP_FUZZ_VOCAB.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace {

std::unique_ptr<quip::tokenizer::Tokenizer> g_tokenizer;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* path = std::getenv("QUIP_FUZZ_VOCAB");
  if (path == nullptr) {
    std::fprintf(stderr, "tokenizer_fuzz: set QUIP_FUZZ_VOCAB to a GGUF vocabulary\n");
    std::abort();
  }
  auto file = quip::gguf::GgufFile::open(path);
  if (!file) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", file.error().message.c_str());
    std::abort();
  }
  auto t = quip::tokenizer::Tokenizer::load(*file);
  if (!t) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", t.error().message.c_str());
    std::abort();
  }
  g_tokenizer = std::make_unique<quip::tokenizer::Tokenizer>(std::move(*t));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quip::tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Tokenizer& t = *g_tokenizer;

  // Special-token parsing must be safe on anything too.
  (void)t.encode(text, {.add_special = true, .parse_special = true});

  const std::vector<TokenId> ids = t.encode(text, {.add_special = false, .parse_special = false});
  for (TokenId id : ids) {
    if (!t.vocab().valid(id)) std::abort();
  }
  if (t.vocab().escapes_spaces() && text.find("\xE2\x96\x81") != std::string_view::npos) return 0;
  if (t.decode(ids) != text) {
    std::fprintf(stderr, "round trip failed for %zu bytes\n", size);
    std::abort();
  }
  return 0;
}
