// Fuzzes what quip reads of other tools' model stores
// (session/model_stores.h): Ollama's manifests, llama.cpp's manifests and
// split file names, all written by programs other than quip. The first byte
// picks the parser; the rest is the text. Whatever they accept must hold
// what the stores' lookups rely on: a digest of 64 hex digits (a blob name),
// a relative path that stays inside its repository, a part within its count.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "session/model_stores.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      if (auto d = quip::session::ollama_model_digest(text)) {
        check(d->size() == 64);
        for (char c : *d) check(is_hex(c));
      } else {
        check(!d.error().message.empty());
      }
      break;
    case 1:
      if (auto f = quip::session::llamacpp_manifest_file(text)) {
        const std::string& p = *f;
        check(!p.empty() && p.front() != '/' && p.find('\\') == std::string::npos);
        check(p.find("//") == std::string::npos &&
              ("/" + p + "/").find("/../") == std::string::npos);
        check(("/" + p + "/").find("/./") == std::string::npos);
      } else {
        check(!f.error().message.empty());
      }
      break;
    case 2:
      if (auto s = quip::session::split_name(text)) {
        check(s->index >= 1 && s->index <= s->count && !s->prefix.empty());
        check(text.size() == s->prefix.size() + 20);
      }
      break;
  }
  return 0;
}
