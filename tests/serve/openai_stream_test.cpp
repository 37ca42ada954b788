// The chunks of an OpenAI chat-completions stream (serve/openai_stream.h),
// as llama-server, vLLM, Ollama and OpenAI write them, and broken ones.
#include "serve/openai_stream.h"

#include <gtest/gtest.h>

#include "serve/openai_client.h"

namespace quip::serve {
namespace {

TEST(OpenAiStream, ContentReasoningFinishAndUsage) {
  auto c =
      parse_chat_chunk(R"({"id":"x","object":"chat.completion.chunk","choices":[{"index":0,)"
                       R"("delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]})");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->content, "Hel");
  EXPECT_FALSE(c->finish_reason);
  EXPECT_FALSE(c->usage);

  c = parse_chat_chunk(R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reasoning, "hmm");
  c = parse_chat_chunk(R"({"choices":[{"delta":{"reasoning":"vllm"}}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reasoning, "vllm");

  c = parse_chat_chunk(R"({"choices":[{"delta":{},"finish_reason":"length"}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->finish_reason, "length");

  c = parse_chat_chunk(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,)"
                       R"("total_tokens":17,"prompt_tokens_details":{"cached_tokens":8}}})");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->usage);
  EXPECT_EQ(c->usage->prompt_tokens, 12u);
  EXPECT_EQ(c->usage->cached_tokens, 8u);
  EXPECT_EQ(c->usage->completion_tokens, 5u);

  c = parse_chat_chunk("[DONE]");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->done);
}

TEST(OpenAiStream, NullsAndAbsencesAreNothing) {
  for (const char* data : {R"({"choices":[{"delta":{"content":null}}]})",
                           R"({"choices":[{"delta":null}]})", R"({"choices":null})", R"({})",
                           R"({"choices":[{"index":0}]})", R"({"usage":null,"choices":[]})"}) {
    auto c = parse_chat_chunk(data);
    ASSERT_TRUE(c.ok()) << data << ": " << c.error().message;
    EXPECT_EQ(c->content, "") << data;
    EXPECT_FALSE(c->usage) << data;
  }
  // Strange counts are reported as 0, not trusted.
  auto c = parse_chat_chunk(R"({"usage":{"prompt_tokens":-3,"completion_tokens":"5"}})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->usage->prompt_tokens, 0u);
  EXPECT_EQ(c->usage->completion_tokens, 0u);
}

TEST(OpenAiStream, BrokenChunkCatalogue) {
  struct Case {
    const char* data;
    const char* says;
  };
  const Case cases[] = {
      {"", "not JSON"},
      {"{\"choices\":[{\"delta\":{\"content\":\"x\"", "not JSON"},
      {"[DONE] ", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {"\"text\"", "not a JSON object"},
      {R"({"choices":{"delta":{}}})", "choices is not a list"},
      {R"({"choices":[3]})", "choice is not an object"},
      {R"({"choices":[{"delta":"x"}]})", "delta is not an object"},
      {R"({"choices":[{"delta":{"content":3}}]})", "delta.content is not a string"},
      {R"({"choices":[{"delta":{"reasoning_content":[]}}]})", "reasoning_content is not a string"},
      {R"({"choices":[{"finish_reason":1}]})", "finish_reason is not a string"},
      {R"({"error":{"message":"model overloaded"}})", "model overloaded"},
      {R"({"error":"plain"})", "plain"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_chat_chunk(c.data);
    ASSERT_FALSE(parsed.ok()) << c.data;
    EXPECT_NE(parsed.error().message.find(c.says), std::string::npos)
        << c.data << ": " << parsed.error().message;
    EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos) << c.data;
  }
}

TEST(OpenAiStream, ErrorMessages) {
  EXPECT_EQ(error_message(R"({"error":{"message":"Incorrect API key provided","type":"x"}})"),
            "Incorrect API key provided");
  EXPECT_EQ(error_message(R"({"error":"model 'x' not found"})"), "model 'x' not found");
  EXPECT_EQ(error_message(R"({"message":"nope"})"), "nope");
  EXPECT_EQ(error_message("\n  Bad Gateway\n"), "Bad Gateway");
  EXPECT_EQ(error_message(""), "");
  // One printable line, shortened.
  const std::string m = error_message("line one\nline two\x1b[31m" + std::string(500, 'x'), 60);
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(m.find('\x1b'), std::string::npos);
  EXPECT_LE(m.size(), 64u);
}

TEST(Endpoint, TheFormsOfOneServer) {
  for (const char* url : {"http://host:8080", "http://host:8080/", "http://host:8080/v1",
                          "http://host:8080/v1/", "http://host:8080//v1//"}) {
    auto e = parse_endpoint(url);
    ASSERT_TRUE(e.ok()) << url << ": " << e.error().message;
    EXPECT_EQ(e->base, "http://host:8080") << url;
    EXPECT_EQ(e->host, "host:8080") << url;
    EXPECT_EQ(e->chat_url(), "http://host:8080/v1/chat/completions") << url;
  }
  auto e = parse_endpoint("https://api.example.com/openai/v1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->base, "https://api.example.com/openai");
  EXPECT_EQ(e->host, "api.example.com");
}

TEST(Endpoint, WhatIsNotAServersBase) {
  for (const char* url : {"host:8080", "ftp://host", "http://", "http:///v1", "file:///etc/passwd",
                          "http://host:8080/v1?x=1", "http://host#model", "http://ho st",
                          "http://user:secret@host"}) {
    auto e = parse_endpoint(url);
    EXPECT_FALSE(e.ok()) << url;
    if (!e.ok()) {
      EXPECT_EQ(e.error().message.find("secret"), std::string::npos) << url;
    }
  }
}

}  // namespace
}  // namespace quip::serve
