// Fuzzes serve::SseParser and serve::parse_chat_chunk, which read what a
// remote server sends: any bytes, cut into pieces of any size, give the
// same events as the same bytes pushed whole, and every event's data reads
// as a chunk or as a one-line error, never a crash. The first byte chooses
// the piece size; the rest is the stream.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "serve/openai_stream.h"
#include "serve/sse.h"

namespace {

using quip::serve::SseEvent;
using quip::serve::SseParser;

// A small limit, so that the limit's path is reached too.
constexpr size_t kMaxEventBytes = 4096;

bool parse(std::string_view stream, size_t step, std::vector<SseEvent>& events) {
  SseParser p(kMaxEventBytes);
  for (size_t at = 0; at < stream.size(); at += step) {
    if (!p.push(stream.substr(at, step), events).ok()) return false;
  }
  return p.finish(events).ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t step = 1 + data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<SseEvent> whole, cut;
  const bool whole_ok = parse(stream, stream.size() + 1, whole);
  const bool cut_ok = parse(stream, step, cut);
  if (whole_ok != cut_ok) abort();
  if (whole_ok) {
    if (whole.size() != cut.size()) abort();
    for (size_t i = 0; i < whole.size(); ++i) {
      if (whole[i].data != cut[i].data || whole[i].type != cut[i].type) abort();
    }
  }
  for (const SseEvent& e : whole) {
    auto chunk = quip::serve::parse_chat_chunk(e.data);
    if (!chunk.ok() && chunk.error().message.find('\n') != std::string::npos) abort();
  }
  return 0;
}
