// A parser of Server-Sent Events (the WHATWG HTML standard, section 9.2
// "Server-sent events", "Parsing an event stream"): bytes in, events out.
// It is what the OpenAI streaming API sends ("data: {json}\n\n" ...
// "data: [DONE]\n\n"), and it is pure: no I/O, so it is tested and fuzzed
// on its own.
//
// Bytes may be pushed in pieces cut anywhere (inside a line, between a CR
// and its LF, inside a UTF-8 sequence): the events are the same as for the
// whole stream pushed at once. Lines end with CRLF, LF or CR; a line that
// starts with ':' is a comment; "field: value" drops one space after the
// colon; several data lines join with '\n'; an empty line dispatches the
// event (an event with no data line is not dispatched, as the standard
// says). A UTF-8 byte order mark at the very start is dropped.
//
// Unlike the standard, finish() also dispatches an event whose final empty
// line never came (a server that closes right after "data: [DONE]\n"): the
// caller decides what a truncated event means.
//
// Not thread-safe; one parser per stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::serve {

struct SseEvent {
  std::string type;  // the "event" field; empty: "message"
  std::string data;  // the data lines, joined by '\n'
  std::string id;    // the "id" field; empty when none
};

class SseParser {
 public:
  // An event (or a line) larger than this is an error rather than memory
  // spent without end on a stream that never ends a line.
  static constexpr size_t kDefaultMaxEventBytes = size_t{16} << 20;

  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Reads `bytes`, appending the events they complete to `events`.
  // Errors: an event or a line over the size limit (the parser is then
  // spent: every later call fails too).
  [[nodiscard]] Result<void> push(std::string_view bytes, std::vector<SseEvent>& events);

  // The end of the stream: a last line without its line break is read and a
  // pending event dispatched. The parser is spent afterwards.
  [[nodiscard]] Result<void> finish(std::vector<SseEvent>& events);

 private:
  void line(std::string_view text, std::vector<SseEvent>& events);
  void dispatch(std::vector<SseEvent>& events);
  Result<void> too_large() const;

  size_t max_event_bytes_;
  std::string line_;       // the current line so far (no line break)
  bool after_cr_ = false;  // the last byte was a CR: an LF next is part of it
  bool started_ = false;   // past a possible byte order mark
  bool failed_ = false;
  bool has_data_ = false;  // a data line was seen since the last dispatch
  SseEvent pending_;
};

}  // namespace quip::serve
