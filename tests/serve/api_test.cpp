// The server's request parsers against a catalogue of broken bodies, the
// fields they read against what OpenAI's and Ollama's documentation define,
// the stop-string matcher against a plain search of the whole text, and the
// attach protocol's round trips.
#include "serve/api.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar.h"
#include "serve/attach.h"

namespace quip::serve {
namespace {

using nlohmann::json;

ApiRequest ok(const Parsed& p) {
  if (const auto* e = std::get_if<ApiError>(&p)) {
    ADD_FAILURE() << "error " << e->status << ": " << e->message;
    return {};
  }
  return std::get<ApiRequest>(p);
}

TEST(ServeApi, OpenAiChatFields) {
  const ApiRequest r = ok(parse_openai_chat(R"({
    "model": "qwen", "stream": true, "stream_options": {"include_usage": true},
    "messages": [{"role": "developer", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                              {"type": "text", "text": "there"}]},
                 {"role": "assistant", "content": null},
                 {"role": "user", "content": "Again"}],
    "max_completion_tokens": 12, "temperature": 0.5, "top_p": 0.9, "seed": 7,
    "stop": ["\n\n", "END"], "logprobs": true, "top_logprobs": 3, "n": 1, "ignore_eos": true,
    "unknown_field": {"ignored": true}})"));
  EXPECT_EQ(r.model, "qwen");
  EXPECT_TRUE(r.chat);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");  // developer is the newer name of system
  EXPECT_EQ(r.messages[1]["content"], "Hi there");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.top_p, 0.9);
  EXPECT_EQ(r.seed, 7);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_FALSE(r.grammar);
}

TEST(ServeApi, OpenAiDefaultsAndResponseFormat) {
  const ApiRequest r = ok(parse_openai_chat(
      R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": null,
          "response_format": {"type": "json_schema", "json_schema": {"name": "n",
            "schema": {"type": "object", "properties": {"b": {"type": "integer"},
                       "a": {"type": "string"}}, "required": ["b", "a"]}}}})"));
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.max_tokens, -1);
  EXPECT_FALSE(r.temperature);
  ASSERT_TRUE(r.grammar);
  // The schema's own property order (b before a) survives into the grammar.
  EXPECT_LT(r.grammar->find("\\\"b\\\""), r.grammar->find("\\\"a\\\"")) << *r.grammar;
  const ApiRequest any = ok(parse_openai_chat(
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})"));
  EXPECT_TRUE(any.grammar);
}

TEST(ServeApi, OllamaFields) {
  const ApiRequest c = ok(parse_ollama_chat(R"({"model": "m:latest",
    "messages": [{"role": "user", "content": "Hi", "images": []}],
    "options": {"num_predict": 5, "num_ctx": 2048, "temperature": 0, "top_k": 10,
                "stop": "x"}, "format": "json", "think": false})"));
  EXPECT_TRUE(c.stream);  // Ollama streams unless told not to
  EXPECT_EQ(c.max_tokens, 5);
  EXPECT_EQ(c.n_ctx, 2048u);
  EXPECT_EQ(c.top_k, 10);
  EXPECT_EQ(c.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(c.grammar);
  EXPECT_EQ(c.think, false);
  const ApiRequest g = ok(parse_ollama_generate(
      R"({"model": "m", "prompt": "Why?", "system": "Be brief.", "stream": false,
          "options": {"num_predict": -1}})"));
  EXPECT_FALSE(g.chat);
  EXPECT_FALSE(g.raw);
  EXPECT_FALSE(g.stream);
  EXPECT_EQ(g.prompt, "Why?");
  EXPECT_EQ(g.system, "Be brief.");
  EXPECT_EQ(g.max_tokens, -1);
  const ApiRequest t = ok(parse_openai_completion(R"({"prompt": ["Once"], "max_tokens": 3})"));
  EXPECT_TRUE(t.raw);
  EXPECT_EQ(t.prompt, "Once");
}

// Each broken body is a 400 whose one-line message names what is wrong.
TEST(ServeApi, BrokenBodiesCatalogue) {
  struct Case {
    Parsed (*parse)(std::string_view);
    const char* body;
    const char* says;
  };
  const Case cases[] = {
      {parse_openai_chat, "", "not valid JSON"},
      {parse_openai_chat, "{", "not valid JSON"},
      {parse_openai_chat, "[1]", "must be a JSON object"},
      {parse_openai_chat, "\"x\"", "must be a JSON object"},
      {parse_openai_chat, "{}", "'messages'"},
      {parse_openai_chat, R"({"messages": []})", "'messages' is empty"},
      {parse_openai_chat, R"({"messages": {}})", "'messages'"},
      {parse_openai_chat, R"({"messages": [1]})", "'messages[0]' must be an object"},
      {parse_openai_chat, R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {parse_openai_chat, R"({"messages": [{"role": "king", "content": "x"}]})", "'king'"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": 5}]})",
       "messages[0].content"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "'image_url' is not supported"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "'text'"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "model": 3})",
       "'model' must be a string"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})",
       "'stream' must be true or false"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})",
       "'max_tokens' must be in"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})",
       "'max_tokens' must be an integer"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999999999999999})",
       "'max_tokens'"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})",
       "'temperature' must be a number"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "n": 2})",
       "'n' must be 1"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})",
       "'stop' must be a string or an array"},
      {parse_openai_chat, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 21})",
       "'top_logprobs' must be in"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})",
       "'xml'"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})",
       "json_schema"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "frog"}}}})",
       "response_format.json_schema"},
      {parse_openai_chat,
       R"({"messages": [{"role": "user", "content": "x"}], "stream_options": 1})",
       "'stream_options'"},
      {parse_openai_completion, R"({"prompt": 5})", "'prompt' must be a string"},
      {parse_openai_completion, R"({"prompt": ""})", "'prompt' is empty"},
      {parse_openai_completion, R"({"prompt": ["a", "b"]})", "'prompt'"},
      {parse_ollama_chat, R"({"messages": [{"role": "user", "content": "x"}]})",
       "'model' must be a string"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x", "images": ["AAAA"]}]})",
       "images are not supported"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "options": []})",
       "'options' must be an object"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "options": {"num_predict": "5"}})",
       "'num_predict' must be an integer"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "format": "xml"})",
       "'format'"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "format": 7})",
       "'format'"},
      {parse_ollama_chat,
       R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "think": "no"})",
       "'think'"},
      {parse_ollama_generate, R"({"model": "m", "prompt": 1})", "'prompt' must be a string"},
      {parse_ollama_generate, R"({"model": "m", "system": []})", "'system' must be a string"},
      {parse_ollama_generate, R"({"model": "m", "raw": 1})", "'raw' must be true or false"},
  };
  for (const Case& c : cases) {
    const Parsed p = c.parse(c.body);
    const auto* e = std::get_if<ApiError>(&p);
    ASSERT_NE(e, nullptr) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_NE(e->message.find(c.says), std::string::npos) << c.body << " -> " << e->message;
    EXPECT_EQ(e->message.find('\n'), std::string::npos) << e->message;
  }
  EXPECT_TRUE(std::holds_alternative<ApiError>(parse_ollama_show("{}")));
  EXPECT_EQ(std::get<std::string>(parse_ollama_show(R"({"name": "m"})")), "m");
}

TEST(ServeApi, OpenAiErrorObject) {
  const json j = openai_error({404, "model 'x' is not served here"});
  EXPECT_EQ(j["error"]["message"], "model 'x' is not served here");
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_EQ(j["error"]["code"], 404);
}

// The text a client sees: everything before the earliest stop string, found
// in the whole text at once.
std::string expected_before_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t first = std::string::npos;
  for (const auto& s : stops) first = std::min(first, text.find(s));
  return first == std::string::npos ? text : text.substr(0, first);
}

TEST(ServeApi, StopMatcherAgreesWithAWholeTextSearchOverAnyPieces) {
  std::mt19937 rng(42);
  const std::string alphabet = "ab\n";
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> stops;
    const int n_stops = static_cast<int>(rng() % 3);
    for (int i = 0; i < n_stops; ++i) {
      std::string s;
      for (size_t k = 1 + rng() % 4; k > 0; --k) s += alphabet[rng() % alphabet.size()];
      stops.push_back(s);
    }
    std::string text;
    for (size_t k = rng() % 24; k > 0; --k) text += alphabet[rng() % alphabet.size()];
    StopMatcher m(stops);
    std::string out;
    size_t at = 0;
    while (at < text.size() && !m.stopped()) {
      const size_t n = std::min<size_t>(1 + rng() % 4, text.size() - at);
      out += m.push(std::string_view(text).substr(at, n));
      at += n;
    }
    out += m.flush();
    EXPECT_EQ(out, expected_before_stop(text, stops))
        << "text '" << text << "' round " << round << " stops " << ::testing::PrintToString(stops);
    const bool has_stop = expected_before_stop(text, stops).size() != text.size();
    EXPECT_EQ(m.stopped(), has_stop) << text;
  }
}

TEST(ServeAttach, ByteStringsKeepEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (const std::string& s : {std::string(), std::string("plain"), std::string("h\xC3\xA9"),
                               std::string("cut \xC3"), all}) {
    const json j = byte_string(s);
    EXPECT_EQ(from_byte_string(json::parse(j.dump())), s);
  }
  EXPECT_TRUE(byte_string("plain").is_string());
}

TEST(ServeAttach, RequestAndAnswerRoundTrip) {
  session::Request r;
  r.model_path = "/m/model.gguf";
  r.messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  r.raw_text = "x\xFF";
  r.sampler.temperature = 0.25f;
  r.sampler.seed = 1234567890123ull;
  r.n_predict = 17;
  r.logprobs = 2;
  r.think = chat::ThinkMode::Show;
  r.cache_dir = "/c";
  r.database = "/d/db";
  r.session = "tty:1";
  const auto back = request_from_json(json::parse(request_json(r, "").dump()));
  ASSERT_TRUE(back.ok()) << back.failure().message;
  EXPECT_EQ(back->model_path, r.model_path);
  EXPECT_EQ(back->messages, r.messages);
  EXPECT_EQ(back->raw_text, r.raw_text);
  EXPECT_EQ(back->sampler.temperature, 0.25f);
  EXPECT_EQ(back->sampler.seed, r.sampler.seed);
  EXPECT_EQ(back->n_predict, 17);
  EXPECT_EQ(back->logprobs, 2);
  EXPECT_EQ(back->think, chat::ThinkMode::Show);
  EXPECT_EQ(back->database, r.database);
  EXPECT_EQ(back->session, "tty:1");
  EXPECT_FALSE(back->grammar);

  // A grammar travels as its text and is compiled again.
  const std::string gbnf = "root ::= \"yes\" | \"no\"\n";
  auto compiled = grammar::compile_gbnf(gbnf);
  ASSERT_TRUE(compiled.ok());
  r.grammar = *compiled;
  const auto with_grammar = request_from_json(json::parse(request_json(r, gbnf).dump()));
  ASSERT_TRUE(with_grammar.ok()) << with_grammar.failure().message;
  ASSERT_TRUE(with_grammar->grammar);
  EXPECT_TRUE(grammar::matches(*with_grammar->grammar, "yes"));
  EXPECT_FALSE(grammar::matches(*with_grammar->grammar, "maybe"));
  auto broken = request_json(r, gbnf);
  broken["gbnf"] = "root ::= (";
  const auto bad = request_from_json(broken);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.failure().kind, session::FailureKind::Usage);
  EXPECT_FALSE(request_from_json(json::parse(R"({"model_path": 1})")).ok());
  EXPECT_FALSE(request_from_json(json::array()).ok());

  session::Answer a;
  a.tokens = {1, 2, 3};
  a.text = "ab\xE2\x82";
  a.reasoning = "why";
  a.steps = {{5, {{5, -0.5}, {6, -1.5}}}};
  a.stop = engine::StopReason::Constraint;
  a.interrupted = true;
  a.valid = false;
  a.usage = {10, 4, 6, 3};
  a.timings = {1.5, 2.5, 3.5};
  a.recorded = store::TurnRecord{};
  a.recorded->conversation = 9;
  a.recorded->turn = 2;
  a.forked_from = std::pair<int64_t, int>(3, 1);
  a.branched = true;
  a.warnings = {"w"};
  const session::Answer b = answer_from_json(json::parse(answer_json(a).dump()));
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(b.text, a.text);
  EXPECT_EQ(b.reasoning, a.reasoning);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].top[1].logprob, -1.5);
  EXPECT_EQ(b.stop, a.stop);
  EXPECT_TRUE(b.interrupted);
  EXPECT_EQ(b.valid, false);
  EXPECT_EQ(b.usage.cached_tokens, 4u);
  EXPECT_EQ(b.timings.generation_ms, 3.5);
  ASSERT_TRUE(b.recorded);
  EXPECT_EQ(b.recorded->turn, 2);
  EXPECT_EQ(b.forked_from, a.forked_from);
  EXPECT_TRUE(b.branched);
  EXPECT_EQ(b.warnings, a.warnings);

  const session::Failure f =
      failure_from_json(failure_json({session::FailureKind::BadData, "broken"}));
  EXPECT_EQ(f.kind, session::FailureKind::BadData);
  EXPECT_EQ(f.message, "broken");
}

}  // namespace
}  // namespace quip::serve
