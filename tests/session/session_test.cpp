// The session layer through its API: a call answers as the quip command
// does (the same tokens, text and record), a --raw call gives llama.cpp's
// greedy tokens (../shared/models/reference.json), callbacks stop it, and
// failures come back with their kind instead of being printed.
#include "session/session.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/exit_status.h"
#include "kernels/dot.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::session {
namespace {

namespace fs = std::filesystem;
using testing::RunOptions;
using testing::RunResult;

constexpr const char* kChatModel = "tiny-qwen2-e64-f16.gguf";  // Qwen2.5's template
constexpr const char* kRawModel = "tiny-llama-spm-e64-f16.gguf";

fs::path model_path(const char* name) {
  return testing::shared_dir() / "models" / name;
}

class SessionApi : public ::testing::Test {
 protected:
  // A request as `quip -m MODEL -n N` makes it, in this test's home.
  Request request(const char* model, int64_t n_predict) const {
    Request r;
    r.model_path = model_path(model);
    r.n_predict = n_predict;
    r.threads = 2;
    auto isa = kernels::chosen_isa();
    EXPECT_TRUE(isa.ok());
    if (isa) r.isa = *isa;
    r.cache_dir = home_.path() / "cache";
    r.database = home_.path() / "data" / "quip.db";
    r.session = kSession;
    return r;
  }

  const LoadedModel& model(const char* name) {
    auto& slot = models_[name];
    if (!slot) {
      auto loaded = load_model(model_path(name).string());
      EXPECT_TRUE(loaded.ok()) << loaded.error().message;
      if (!loaded) throw std::runtime_error(loaded.error().message);
      slot = std::make_unique<LoadedModel>(std::move(*loaded));
    }
    return *slot;
  }

  Answer call(const char* name, const Request& r, const Callbacks& callbacks = {}) {
    auto prompt = build_prompt(model(name), r);
    EXPECT_TRUE(prompt.ok()) << (prompt ? "" : prompt.failure().message);
    if (!prompt) return {};
    auto answer = generate(model(name), r, *prompt, callbacks);
    EXPECT_TRUE(answer.ok()) << (answer ? "" : answer.failure().message);
    return answer ? *answer : Answer{};
  }

  nlohmann::json run_cli(std::vector<std::string> args) const {
    args.push_back("--json");
    RunOptions o;
    o.env = {{"QUIP_HOME", home_.path().string()}, {"QUIP_SESSION", kSession}, {"QUIP_CONFIG", ""}};
    const RunResult r = testing::run_quip(args, o);
    EXPECT_EQ(r.status, cli::kExitOk) << testing::describe(args, r);
    return r.status == cli::kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  static constexpr const char* kSession = "session-api-test";
  testing::TempDir home_;
  std::map<std::string, std::unique_ptr<LoadedModel>> models_;
};

nlohmann::json user(const std::string& text) {
  return nlohmann::json::array({{{"role", "user"}, {"content", text}}});
}

// A chat call through the API and the same call through the binary: the
// same prompt, answer and record; then a continuation of each, the API's
// found with find_base as -c finds it.
TEST_F(SessionApi, ChatCallAnswersAsTheCommandDoes) {
  QUIP_REQUIRE_SHARED();
  Request r = request(kChatModel, 10);
  r.messages = user("What is 1+1?");
  r.no_cache = true;
  std::string streamed;
  Callbacks callbacks;
  callbacks.on_token = [&](int32_t, std::string_view text) {
    streamed += text;
    return true;
  };
  const Answer a = call(kChatModel, r, callbacks);
  const nlohmann::json cli =
      run_cli({"-m", model_path(kChatModel).string(), "-n", "10", "--no-cache", "What is 1+1?"});
  EXPECT_EQ(a.tokens, cli.at("tokens").get<std::vector<int32_t>>());
  EXPECT_EQ(escape_invalid_utf8(a.text), cli.at("text").get<std::string>());  // as --json writes it
  EXPECT_EQ(streamed, a.text);
  EXPECT_FALSE(a.tokens.empty());
  EXPECT_EQ(a.usage.prompt_tokens, cli.at("prompt_tokens").size());
  EXPECT_EQ(a.usage.generated_tokens, a.tokens.size());
  EXPECT_EQ(a.stop, engine::StopReason::Length);
  EXPECT_FALSE(a.interrupted);
  EXPECT_TRUE(a.warnings.empty());
  ASSERT_TRUE(a.recorded.has_value()) << a.store_error;
  EXPECT_EQ(a.recorded->turn, 1);
  EXPECT_EQ(a.recorded->answer_tokens, a.tokens);
  EXPECT_NE(a.recorded->conversation, cli.at("conversation").get<int64_t>());

  // The CLI's call was recorded last in this session: -c continues it.
  auto base = find_base(r.database, std::nullopt, kSession);
  ASSERT_TRUE(base.ok()) << base.failure().message;
  EXPECT_EQ(base->conversation, cli.at("conversation").get<int64_t>());
  // The API's conversation, continued by id through the API and the binary.
  base = find_base(r.database, ConversationRef{a.recorded->conversation, std::nullopt}, kSession);
  ASSERT_TRUE(base.ok()) << base.failure().message;
  Request next = request(kChatModel, 8);
  next.messages = user("And 2+2?");
  next.no_cache = true;
  next.base = std::move(*base);
  const Answer a2 = call(kChatModel, next);
  const nlohmann::json cli2 = run_cli({"--cid", std::to_string(a.recorded->conversation) + "@1",
                                       "-n", "8", "--no-cache", "And 2+2?"});
  EXPECT_EQ(a2.tokens, cli2.at("tokens").get<std::vector<int32_t>>());
  ASSERT_TRUE(a2.recorded.has_value()) << a2.store_error;
  EXPECT_EQ(a2.recorded->conversation, a.recorded->conversation);
  EXPECT_EQ(a2.recorded->turn, 2);
  EXPECT_EQ(a2.recorded->parent_turn, 1);
}

// --raw through the API: llama.cpp's greedy tokens for its prompt.
TEST_F(SessionApi, RawCallGivesLlamaCppsGreedyTokens) {
  QUIP_REQUIRE_SHARED();
  const nlohmann::json ref = nlohmann::json::parse(
      testing::read_file(testing::shared_dir() / "models" / "reference.json"));
  const nlohmann::json* completion = nullptr;
  for (const auto& m : ref.at("models")) {
    if (m.at("model") == kRawModel) completion = &m.at("completions").at(0);
  }
  ASSERT_NE(completion, nullptr);
  Request r = request(kRawModel, 8);
  r.raw = true;
  r.raw_text = completion->at("text");
  r.logprobs = 2;
  auto prompt = build_prompt(model(kRawModel), r);
  ASSERT_TRUE(prompt.ok()) << prompt.failure().message;
  EXPECT_EQ(prompt->tokens, completion->at("prompt_tokens").get<std::vector<int32_t>>());
  const Answer a = call(kRawModel, r);
  const std::vector<int32_t> greedy = completion->at("greedy");
  EXPECT_EQ(a.tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 8));
  ASSERT_EQ(a.steps.size(), 8u);
  EXPECT_EQ(a.steps[0].top.size(), 2u);
  // Token ids instead of text: the same prompt.
  r.raw_text.clear();
  r.raw_tokens.emplace();
  for (int32_t id : completion->at("prompt_tokens")) r.raw_tokens->push_back(id);
  auto by_ids = build_prompt(model(kRawModel), r);
  ASSERT_TRUE(by_ids.ok()) << by_ids.failure().message;
  EXPECT_EQ(by_ids->tokens, prompt->tokens);
}

// The callbacks stop a call: on_token returning false after 3 tokens, or
// keep_going turning false; either way the partial answer is recorded as
// interrupted.
TEST_F(SessionApi, CallbacksStopTheCall) {
  QUIP_REQUIRE_SHARED();
  Request r = request(kRawModel, 50);
  r.raw = true;
  r.raw_text = "Once upon a time";
  r.ignore_eos = true;
  int seen = 0;
  Callbacks by_token;
  by_token.on_token = [&](int32_t id, std::string_view) { return id < 0 || ++seen < 3; };
  const Answer a = call(kRawModel, r, by_token);
  EXPECT_EQ(a.tokens.size(), 3u);
  EXPECT_EQ(a.stop, engine::StopReason::Caller);
  EXPECT_TRUE(a.interrupted);
  ASSERT_TRUE(a.recorded.has_value()) << a.store_error;
  EXPECT_TRUE(a.recorded->interrupted);

  int asked = 0;
  r.no_cache = true;  // the prompt evaluated again: asked between its batches too
  Callbacks by_predicate;
  by_predicate.keep_going = [&] { return ++asked < 5; };
  const Answer b = call(kRawModel, r, by_predicate);
  EXPECT_EQ(b.stop, engine::StopReason::Caller);
  EXPECT_TRUE(b.interrupted);
  EXPECT_LT(b.tokens.size(), 5u);
}

// Failures come back with their kind; nothing is printed or recorded.
TEST_F(SessionApi, FailuresHaveKinds) {
  QUIP_REQUIRE_SHARED();
  Request r = request(kRawModel, 4);
  r.raw = true;
  r.raw_text = "a b c d e f g h";
  r.n_ctx = 4;
  auto prompt = build_prompt(model(kRawModel), r);
  ASSERT_TRUE(prompt.ok());
  auto too_long = generate(model(kRawModel), r, *prompt, {});
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.failure().kind, FailureKind::Usage);
  EXPECT_NE(too_long.failure().message.find("context holds 4"), std::string::npos);

  r.raw_text.clear();
  r.raw_tokens = std::vector<int64_t>{1, 1 << 30};
  auto bad_id = build_prompt(model(kRawModel), r);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_EQ(bad_id.failure().kind, FailureKind::Usage);
  EXPECT_NE(bad_id.failure().message.find(std::to_string(1 << 30)), std::string::npos);

  Request chat = request(kChatModel, 4);
  chat.messages = user("hi");
  // The caller's template: one that does not parse, and one that refuses
  // the messages, are the caller's errors, named by its file.
  chat.template_file = home_.path() / "mine.jinja";
  chat.template_text = "{% for m in messages %}";
  auto broken = build_prompt(model(kChatModel), chat);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.failure().kind, FailureKind::Usage);
  EXPECT_EQ(broken.failure().message.rfind(chat.template_file->string() + ": ", 0), 0u)
      << broken.failure().message;
  chat.template_text = "{{ raise_exception('no users here') }}";
  auto refused = build_prompt(model(kChatModel), chat);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().kind, FailureKind::Usage);
  EXPECT_NE(refused.failure().message.find("no users here"), std::string::npos)
      << refused.failure().message;

  auto none =
      find_base(home_.path() / "data" / "quip.db", ConversationRef{7, std::nullopt}, kSession);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.failure().kind, FailureKind::Runtime);
  EXPECT_FALSE(fs::exists(home_.path() / "data" / "quip.db"));
}

// No database folder: the answer comes back, with why it was not recorded.
TEST_F(SessionApi, NoDatabaseStillAnswers) {
  QUIP_REQUIRE_SHARED();
  Request r = request(kRawModel, 3);
  r.raw = true;
  r.raw_text = "Once upon a time";
  r.ignore_eos = true;
  r.database.reset();
  const Answer a = call(kRawModel, r);
  EXPECT_EQ(a.tokens.size(), 3u);
  EXPECT_FALSE(a.recorded.has_value());
  EXPECT_NE(a.store_error.find("no folder"), std::string::npos) << a.store_error;
}

}  // namespace
}  // namespace quip::session
