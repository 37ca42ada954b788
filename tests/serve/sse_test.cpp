// The event-stream parser (serve/sse.h): the standard's examples, every
// line ending, and a catalogue of broken and awkward streams, each pushed
// whole and cut at every byte, which must give the same events.
#include "serve/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quip::serve {
namespace {

struct Parsed {
  std::vector<SseEvent> events;
  bool ok = true;
};

Parsed parse_in_pieces(std::string_view stream, size_t piece, size_t max_bytes) {
  SseParser p(max_bytes);
  Parsed out;
  for (size_t at = 0; at < stream.size() && out.ok; at += piece) {
    out.ok = p.push(stream.substr(at, piece), out.events).ok();
  }
  if (out.ok) out.ok = p.finish(out.events).ok();
  return out;
}

// Parses `stream` whole, then cut into pieces of every size and at every
// single cut; all must agree.
Parsed parse(std::string_view stream, size_t max_bytes = SseParser::kDefaultMaxEventBytes) {
  const Parsed whole = parse_in_pieces(stream, stream.size() + 1, max_bytes);
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    const Parsed cut = parse_in_pieces(stream, piece, max_bytes);
    EXPECT_EQ(cut.ok, whole.ok) << "pieces of " << piece;
    EXPECT_EQ(cut.events.size(), whole.events.size()) << "pieces of " << piece;
    for (size_t i = 0; i < std::min(cut.events.size(), whole.events.size()); ++i) {
      EXPECT_EQ(cut.events[i].data, whole.events[i].data) << "pieces of " << piece;
      EXPECT_EQ(cut.events[i].type, whole.events[i].type) << "pieces of " << piece;
    }
  }
  for (size_t at = 1; at < stream.size(); ++at) {
    SseParser p(max_bytes);
    Parsed two;
    two.ok = p.push(stream.substr(0, at), two.events).ok() &&
             p.push(stream.substr(at), two.events).ok() && p.finish(two.events).ok();
    EXPECT_EQ(two.ok, whole.ok) << "cut at " << at;
    EXPECT_EQ(two.events.size(), whole.events.size()) << "cut at " << at;
  }
  return whole;
}

std::vector<std::string> datas(const Parsed& p) {
  std::vector<std::string> d;
  for (const SseEvent& e : p.events) d.push_back(e.data);
  return d;
}

using Datas = std::vector<std::string>;

TEST(Sse, OpenAiStream) {
  const Parsed p = parse(
      "data: {\"a\":1}\n\n"
      "data: {\"b\":2}\n\n"
      "data: [DONE]\n\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(datas(p), (Datas{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
}

TEST(Sse, EveryLineEnding) {
  for (const char* eol : {"\n", "\r\n", "\r"}) {
    const std::string e = eol;
    const Parsed p = parse("data: one" + e + e + "data: two" + e + "data: three" + e + e);
    ASSERT_TRUE(p.ok) << "eol " << static_cast<int>(e[0]);
    EXPECT_EQ(datas(p), (Datas{"one", "two\nthree"}));
  }
  // Mixed in one stream.
  EXPECT_EQ(datas(parse("data: a\r\n\ndata: b\r\r\ndata: c\n\r")), (Datas{"a", "b", "c"}));
}

TEST(Sse, CommentsAndFieldsAreNotData) {
  const Parsed p = parse(
      ": keep-alive\n\n"
      ":\n"
      "event: message\n"
      "id: 7\n"
      "retry: 1000\n"
      "unknown: field\n"
      "data: x\n\n");
  ASSERT_TRUE(p.ok);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].data, "x");
  EXPECT_EQ(p.events[0].type, "message");
  EXPECT_EQ(p.events[0].id, "7");
}

TEST(Sse, TheStandardsExamples) {
  // WHATWG HTML 9.2.5: "data:test" and "data: test" are the same; a line
  // with only the field name is an empty value; one space only is dropped.
  EXPECT_EQ(datas(parse("data\n\ndata\ndata\n\ndata:\n")), (Datas{"", "\n", ""}));
  EXPECT_EQ(datas(parse("data:test\n\ndata: test\n\ndata:  two spaces\n\n")),
            (Datas{"test", "test", " two spaces"}));
  // An event with no data line is not dispatched.
  EXPECT_TRUE(parse("event: ping\n\nid: 3\n\n").events.empty());
}

TEST(Sse, ByteOrderMarkOnlyAtTheStart) {
  EXPECT_EQ(datas(parse("\xEF\xBB\xBF"
                        "data: a\n\n")),
            (Datas{"a"}));
  // Elsewhere it is part of the line (here of a field name nobody knows).
  EXPECT_TRUE(parse("\n\xEF\xBB\xBF"
                    "data: a\n\n")
                  .events.empty());
  // A start that only looks like one.
  EXPECT_TRUE(parse("\xEF\xBB"
                    "data: a\n\n")
                  .events.empty());
  EXPECT_EQ(datas(parse("\xEF\n"
                        "data: a\n\n")),
            (Datas{"a"}));
}

TEST(Sse, TheLastEventWithoutItsEmptyLine) {
  EXPECT_EQ(datas(parse("data: a\n\ndata: [DONE]\n")), (Datas{"a", "[DONE]"}));
  EXPECT_EQ(datas(parse("data: a\n\ndata: [DONE]")), (Datas{"a", "[DONE]"}));
}

// Broken and awkward streams: what each must give.
TEST(Sse, BrokenStreamCatalogue) {
  struct Case {
    const char* name;
    std::string stream;
    bool ok;
    Datas events;
  };
  const Case cases[] = {
      {"empty", "", true, {}},
      {"only line breaks", "\n\n\r\n\r\r", true, {}},
      {"only a comment", ": hello", true, {}},
      {"no space after colon", "data:{\"x\":1}\n\n", true, {"{\"x\":1}"}},
      {"colon in the value", "data: a: b\n\n", true, {"a: b"}},
      {"field without colon", "data\n\n", true, {""}},
      {"capitalized field", "Data: x\n\n", true, {}},
      {"leading space in the field", " data: x\n\n", true, {}},
      {"NUL inside data", std::string("data: a\0b\n\n", 11), true, {std::string("a\0b", 3)}},
      {"invalid UTF-8 passed through", "data: \xff\xfe\n\n", true, {"\xff\xfe"}},
      {"truncated in the middle", "data: {\"choices\":[{\"del", true, {"{\"choices\":[{\"del"}},
      {"HTML instead of events", "<html><body>502</body></html>\n", true, {}},
      {"JSON instead of events", "{\"error\":{\"message\":\"x\"}}", true, {}},
      {"many empty events", "data:\n\ndata:\n\n", true, {"", ""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Parsed p = parse(c.stream);
    EXPECT_EQ(p.ok, c.ok);
    EXPECT_EQ(datas(p), c.events);
  }
}

TEST(Sse, AnEventOverTheLimitIsAnError) {
  EXPECT_TRUE(parse("data: 0123456789\n\n", 64).ok);
  EXPECT_FALSE(parse("data: " + std::string(100, 'x') + "\n\n", 64).ok);
  // Many data lines add up.
  std::string lines;
  for (int i = 0; i < 20; ++i) lines += "data: 0123456789\n";
  EXPECT_FALSE(parse(lines + "\n", 64).ok);
  // A line that never ends.
  SseParser p(64);
  std::vector<SseEvent> events;
  EXPECT_FALSE(p.push(std::string(100, 'd'), events).ok());
  EXPECT_FALSE(p.push("\n\n", events).ok());  // spent
  EXPECT_FALSE(p.finish(events).ok());
}

}  // namespace
}  // namespace quip::serve
