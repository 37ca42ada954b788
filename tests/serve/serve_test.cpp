// A real `quip serve` on a free loopback port and a socket of the test's
// own, driven by real clients: curl, Python's standard HTTP client
// (tests/serve/serve_client.py, which checks OpenAI's and Ollama's framing)
// and the `quip` command attaching to it. Answers are checked against the
// same call run in-process (`quip --local`), greedy, on a tiny model.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli_home.h"

extern char** environ;

namespace quip::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using quip::testing::RunOptions;
using quip::testing::RunResult;
using quip::testing::TempDir;

constexpr int kTimeoutMs = 120'000;

RunOptions limited(int timeout_ms) {
  RunOptions o;
  o.timeout_ms = timeout_ms;
  return o;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// curl's "@FILE" (appended: GCC 12 warns falsely of overlap on "@" + ...).
std::string at_file(const fs::path& p) {
  std::string s = "@";
  s += p.string();
  return s;
}

std::string client_script() {
  return std::string(QUIP_SOURCE_DIR) + "/tests/serve/serve_client.py";
}

// A server process of the test's own.
class ServerProcess {
 public:
  ServerProcess(const fs::path& home, std::vector<std::string> args) : home_(home) {
    log_ = home / ("serve-" + std::to_string(counter_++) + ".log");
    std::vector<std::string> argv = {QUIP_BINARY, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    env_ = quip::testing::environment_with({{"QUIP_HOME", home.string()}, {"QUIP_SOCKET", ""}});
    std::vector<char*> cenv;
    for (auto& e : env_) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    EXPECT_EQ(posix_spawn(&pid_, QUIP_BINARY, &fa, nullptr, cargv.data(), cenv.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }

  fs::path socket() const { return home_ / "serve.sock"; }

  // Waits until the server answers on its socket; false if it exited.
  bool ready() {
    for (int i = 0; i < 600; ++i) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return false;
      }
      if (fs::exists(socket())) {
        RunResult r = quip::testing::run_command(
            {"/usr/bin/curl", "-sf", "--unix-socket", socket().string(), "http://quip/health"},
            limited(10'000));
        if (r.status == 0) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Sends `signo` (0: none) and waits for the exit status (-1: still running after the wait).
  int stop(int signo, int wait_ms = 60'000) {
    if (pid_ <= 0) return status_;
    if (signo != 0) ::kill(pid_, signo);
    for (int waited = 0; waited < wait_ms; waited += 20) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  std::string log() const { return read_file(log_); }

  // Sends `signo` and leaves it running (or stopped).
  void signal(int signo) const {
    if (pid_ > 0) ::kill(pid_, signo);
  }

 private:
  static inline int counter_ = 0;
  fs::path home_, log_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
  int status_ = -1;
};

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = cli::testing_home::qwen_model();
    if (!fs::exists(model_)) GTEST_SKIP() << "no " << model_;
    name_ = fs::path(model_).stem().string();
    port_ = free_port();
    base_ = "http://127.0.0.1:" + std::to_string(port_);
  }

  RunOptions opts() const {
    RunOptions o = limited(kTimeoutMs);
    o.env = {{"QUIP_HOME", home_.path().string()},
             {"QUIP_SESSION", "serve-test"},
             {"QUIP_SOCKET", ""},
             {"QUIP_NO_SERVE", ""}};
    return o;
  }

  std::unique_ptr<ServerProcess> start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"-m", model_, "--port", std::to_string(port_), "-t", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto s = std::make_unique<ServerProcess>(home_.path(), args);
    EXPECT_TRUE(s->ready()) << s->log();
    return s;
  }

  json client(const std::vector<std::string>& args) {
    std::vector<std::string> cmd = {"/usr/bin/python3", client_script()};
    cmd.insert(cmd.end(), args.begin(), args.end());
    RunResult r = quip::testing::run_command(cmd, limited(kTimeoutMs));
    EXPECT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  RunResult curl(const std::vector<std::string>& args) {
    std::vector<std::string> cmd = {"/usr/bin/curl", "-s"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return quip::testing::run_command(cmd, limited(kTimeoutMs));
  }

  // `quip --json` with these arguments.
  json quip_json(std::vector<std::string> args, RunOptions o) {
    args.insert(args.begin(), {"--json", "-m", model_});
    RunResult r = quip::testing::run_quip(args, o);
    EXPECT_EQ(r.status, 0) << quip::testing::describe(args, r);
    return json::parse(r.out, nullptr, false);
  }

  // The in-process greedy answer to `prompt` as a first turn, as its bytes
  // (made in a home of its own, so that the server's records stand alone).
  std::string local_answer(const std::string& prompt, int n) {
    RunOptions o = opts();
    o.env = {{"QUIP_HOME", local_home_.path().string()}, {"QUIP_NO_SERVE", "1"}};
    RunResult r = quip::testing::run_quip({"-m", model_, "-n", std::to_string(n), prompt}, o);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }

  // The same as a JSON API carries it: a random-weight model's answer may hold
  // bytes that are not UTF-8, which become U+FFFD each.
  static std::string as_api_text(const std::string& bytes) {
    return json::parse(json(bytes).dump(-1, ' ', false, json::error_handler_t::replace));
  }

  uint64_t metric(const std::string& name) {
    RunResult r = curl({base_ + "/metrics"});
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + " ", 0) == 0) return std::stoull(line.substr(name.size() + 1));
    }
    ADD_FAILURE() << "no metric " << name << " in " << r.out;
    return 0;
  }

  // Metric `name` once it has moved from `before`, or as it is after 20 s.
  uint64_t metric_after(const std::string& name, uint64_t before) {
    uint64_t now = before;
    for (int i = 0; i < 400 && now == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      now = metric(name);
    }
    return now;
  }

  TempDir home_, local_home_;
  std::string model_, name_, base_;
  int port_ = 0;
};

TEST_F(ServeTest, OpenAiChatEqualsTheInProcessAnswerStreamedOrNot) {
  const std::string prompt = "What is 1+1?";
  const std::string expected = as_api_text(local_answer(prompt, 12));
  ASSERT_FALSE(expected.empty());
  auto server = start();
  const json plain = client({"chat", base_, name_, prompt, "12"});
  EXPECT_EQ(plain["text"], expected);
  EXPECT_EQ(plain["usage"]["completion_tokens"], 12);
  const json streamed = client({"chat", base_, name_, prompt, "12", "stream"});
  EXPECT_EQ(streamed["text"], expected);
  EXPECT_EQ(streamed["finish_reason"], "length");
  // The second call found the first one's prompt in the prefix cache.
  EXPECT_EQ(streamed["usage"]["prompt_tokens_details"]["cached_tokens"],
            streamed["usage"]["prompt_tokens"]);
  // The model's file name names it too; an unknown name is a 404 in OpenAI's shape.
  EXPECT_EQ(client({"chat", base_, name_ + ".gguf", prompt, "12"})["text"], expected);
  RunResult nope = curl({"-w", "\n%{http_code}", base_ + "/v1/chat/completions", "-d",
                         R"({"model": "nope", "messages": [{"role": "user", "content": "x"}]})"});
  EXPECT_NE(nope.out.find("\"not_found_error\""), std::string::npos) << nope.out;
  EXPECT_TRUE(nope.out.ends_with("\n404")) << nope.out;
  // OpenAI's own client, streaming a long prompt too (whose stream carries
  // SSE comments while the prompt is evaluated).
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "word" + std::to_string(i % 89) + " ";
  const json openai = client({"openai", base_, name_, prompt, "12", long_prompt});
  if (openai.value("skipped", false)) {
    // scripts/setup.sh installs it; CI must not pass without it.
    if (std::getenv("CI") != nullptr) ADD_FAILURE() << "no openai package (CI is set)";
  } else {
    EXPECT_EQ(openai["text"], expected);
    EXPECT_EQ(openai["streamed"], expected);
    EXPECT_EQ(openai["long_streamed"], client({"chat", base_, name_, long_prompt, "12"})["text"]);
  }
  EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
}

TEST_F(ServeTest, FollowUpEvaluatesOnlyItsNewTurn) {
  auto server = start();
  const json first = client({"chat", base_, name_, "Name a color.", "6"});
  const json history = json::array({{{"role", "user"}, {"content", "Name a color."}},
                                    {{"role", "assistant"}, {"content", first["text"]}},
                                    {{"role", "user"}, {"content", "Another one."}}});
  const json second = client({"messages", base_, name_, history.dump(), "6"});
  const uint64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  // Everything up to the new user message came from the cache.
  EXPECT_GE(cached, first["usage"]["prompt_tokens"].get<uint64_t>());
  EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<uint64_t>());
}

// The follow-up takes the cache the first call left in memory: with the
// prefix cache's files gone from disk meanwhile, it still evaluates only its
// new turn. A server without the memory tier then evaluates it all.
TEST_F(ServeTest, AFollowUpTakesItsCacheFromMemoryWithoutTheDisk) {
  const fs::path kv = home_.path() / "cache" / "kv";
  for (const bool ram : {true, false}) {
    std::vector<std::string> extra;
    if (!ram) extra = {"--cache-ram", "0"};
    auto server = start(extra);
    const std::string question = ram ? "Name a color." : "Name a fruit.";
    const json first = client({"chat", base_, name_, question, "6"});
    ASSERT_TRUE(fs::exists(kv));
    fs::remove_all(kv);
    const json history = json::array({{{"role", "user"}, {"content", question}},
                                      {{"role", "assistant"}, {"content", first["text"]}},
                                      {{"role", "user"}, {"content", "Another one."}}});
    const json second = client({"messages", base_, name_, history.dump(), "6"});
    const uint64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
    if (ram) {
      EXPECT_GE(cached, first["usage"]["prompt_tokens"].get<uint64_t>());
      EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<uint64_t>());
      EXPECT_EQ(metric("quip_cache_ram_hits_total"), 1u);
      EXPECT_EQ(metric("quip_cache_ram_tokens_total"), cached);
      EXPECT_GT(metric("quip_cache_ram_bytes"), 0u);
    } else {
      EXPECT_EQ(cached, 0u);
      EXPECT_EQ(metric("quip_cache_ram_bytes"), 0u);
    }
    EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
  }
}

TEST_F(ServeTest, OllamaRoutes) {
  const std::string prompt = "Why is the sky blue?";
  const std::string expected = as_api_text(local_answer(prompt, 10));
  auto server = start();
  const json streamed = client({"ollama", base_, name_ + ":latest", prompt, "10", "stream"});
  EXPECT_EQ(streamed["text"], expected);
  EXPECT_EQ(streamed["done_reason"], "length");
  EXPECT_EQ(streamed["eval_count"], 10);
  EXPECT_EQ(client({"ollama", base_, name_, prompt, "10"})["text"], expected);
  EXPECT_GT(client({"generate", base_, name_, prompt, "4"})["objects"].get<int>(), 1);

  const json tags = json::parse(curl({base_ + "/api/tags"}).out);
  ASSERT_EQ(tags["models"].size(), 1u) << tags;
  EXPECT_EQ(tags["models"][0]["name"], name_);
  EXPECT_EQ(tags["models"][0]["size"], fs::file_size(model_));
  const json ps = json::parse(curl({base_ + "/api/ps"}).out);
  ASSERT_EQ(ps["models"].size(), 1u) << ps;
  EXPECT_EQ(ps["models"][0]["name"], name_);
  EXPECT_EQ(json::parse(curl({base_ + "/api/version"}).out)["version"], QUIP_PROJECT_VERSION);
  const json show =
      json::parse(curl({base_ + "/api/show", "-d", R"({"model": ")" + name_ + "\"}"}).out);
  EXPECT_EQ(show["details"]["format"], "gguf");
  EXPECT_EQ(show["model_info"]["general.architecture"], "qwen2");
  RunResult missing =
      curl({"-w", "\n%{http_code}", base_ + "/api/chat", "-d",
            R"({"model": "nope", "messages": [{"role": "user", "content": "x"}]})"});
  EXPECT_TRUE(missing.out.ends_with("\n404")) << missing.out;
  EXPECT_NE(missing.out.find("not found"), std::string::npos);
  // quip ps reads the same over the socket.
  RunResult qps = quip::testing::run_quip({"ps"}, opts());
  EXPECT_EQ(qps.status, 0) << qps.err;
  EXPECT_NE(qps.out.find(name_), std::string::npos) << qps.out;
}

TEST_F(ServeTest, TheShellAttachesAndRecordsAsInProcess) {
  const std::string expected = local_answer("Hello there", 8);
  auto server = start();
  const json a = quip_json({"-n", "8", "Hello there"}, opts());
  EXPECT_EQ(a["engine"], "serve");
  ASSERT_TRUE(a["conversation"].is_number());
  // -c continues it on the server, evaluating only the new turn.
  const json b = quip_json({"-c", "-n", "8", "And then?"}, opts());
  EXPECT_EQ(b["engine"], "serve");
  EXPECT_EQ(b["conversation"], a["conversation"]);
  EXPECT_EQ(b["turn"], 2);
  EXPECT_GE(b["usage"]["cached_tokens"].get<size_t>(), a["prompt_tokens"].size());
  // The same follow-up in-process gives the same answer.
  RunOptions local = opts();
  local.env.push_back({"QUIP_NO_SERVE", "1"});
  const json c = quip_json(
      {"--cid", std::to_string(a["conversation"].get<int64_t>()) + "@1", "-n", "8", "And then?"},
      local);
  EXPECT_EQ(c["engine"], "local");
  EXPECT_EQ(c["text"], b["text"]);
  EXPECT_EQ(c["prompt_tokens"], b["prompt_tokens"]);
  EXPECT_EQ(quip_json({"--local", "-n", "2", "x"}, opts())["engine"], "local");
  // Plain text output, and a usage error, are the same as in-process.
  RunResult text = quip::testing::run_quip({"-m", model_, "-n", "8", "Hello there"}, opts());
  EXPECT_EQ(text.status, 0);
  EXPECT_EQ(text.out, expected);
  RunResult bad =
      quip::testing::run_quip({"-m", model_, "--template", "/nonexistent", "x"}, opts());
  EXPECT_EQ(bad.status, 2) << bad.err;
  // With no model named anywhere, the server's answers.
  RunResult bare = quip::testing::run_quip({"-n", "8", "Hello there"}, opts());
  EXPECT_EQ(bare.status, 0) << bare.err;
  EXPECT_EQ(bare.out, expected);
  RunResult log = quip::testing::run_quip({"log", "--json"}, opts());
  // The attached conversation, its fork, and the three single calls.
  EXPECT_EQ(json::parse(log.out).size(), 5u) << log.out;
}

// A client and a server of other attach protocol versions never read each
// other: the server answers 409 to a request that names another version
// (or none), and a call that finds a server naming another version (or
// none) runs in-process.
TEST_F(ServeTest, AttachingAcrossProtocolVersionsRunsTheCallInProcess) {
  {
    auto server = start();
    RunResult r = curl({"-w", "\n%{http_code}", "--unix-socket", server->socket().string(),
                        "http://quip/quip/generate", "-d", "{}"});
    EXPECT_TRUE(r.out.ends_with("\n409")) << r.out;
    EXPECT_EQ(server->stop(SIGTERM), 0);  // which takes its socket away
  }
  const std::string expected = local_answer("Hello there", 8);
  // A fake server on the socket; without the check, its failure would be the call's.
  const std::string script =
      "rm -f \"$2\"; /usr/bin/python3 \"$1\" other-version-server \"$2\" & fake=$!\n"
      "for i in $(seq 1 100); do [ -S \"$2\" ] && break; sleep 0.05; done\n"
      "\"$3\" -m \"$4\" -n 8 'Hello there'; status=$?\n"
      "kill $fake; exit $status\n";
  RunResult r =
      quip::testing::run_command({"/bin/sh", "-c", script, "sh", client_script(),
                                  (home_.path() / "serve.sock").string(), QUIP_BINARY, model_},
                                 opts());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
}

TEST_F(ServeTest, SixteenConcurrentCallsAllCompleteCorrectlyAndAreRecorded) {
  std::vector<std::string> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back("Count to " + std::to_string(i + 3));
  std::vector<std::string> expected;
  for (const auto& p : prompts) expected.push_back(local_answer(p, 6));
  auto server = start({"--parallel", "16"});
  // 16 streaming HTTP clients at once.
  std::vector<std::string> args = {"concurrent", base_, name_, "6"};
  args.insert(args.end(), prompts.begin(), prompts.end());
  const json http = client(args);
  ASSERT_EQ(http["results"].size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(http["results"][i]["text"], as_api_text(expected[i])) << i;
  }
  // 16 shell calls at once, each printing what the call in-process prints
  // and recorded.
  std::vector<std::thread> calls;
  std::vector<RunResult> answers(16);
  for (size_t i = 0; i < 16; ++i) {
    calls.emplace_back([&, i] {
      answers[i] = quip::testing::run_quip({"-m", model_, "-n", "6", prompts[i]}, opts());
    });
  }
  for (auto& t : calls) t.join();
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(answers[i].status, 0) << answers[i].err;
    EXPECT_EQ(answers[i].out, expected[i]) << i;
  }
  EXPECT_EQ(metric("quip_requests_total{route=\"/quip/generate\"}"), 16u);
  // Each answer's tokens but its last (the one whose logits no one asks
  // for, at the length limit) were rows of shared steps; how many steps
  // depends on when the calls came.
  const uint64_t generated = metric("quip_generated_tokens_total");
  EXPECT_LE(metric("quip_batch_rows_total"), generated);
  EXPECT_GE(metric("quip_batch_rows_total"), generated - 32);
  EXPECT_EQ(metric("quip_batch_size_count"), metric("quip_batch_steps_total"));
  RunResult log = quip::testing::run_quip({"log", "-n", "100", "--json"}, opts());
  EXPECT_EQ(json::parse(log.out).size(), 16u);
}

// Shell calls that connect at once, while the server is slow to accept
// (its cores taken), wait in the socket's queue: none is refused and run
// in-process. Here the server is stopped while they connect.
TEST_F(ServeTest, ABurstOfConnectionsWaitsToBeAccepted) {
  auto server = start();
  constexpr int kBurst = 64;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = server->socket().string();
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::copy(path.begin(), path.end(), addr.sun_path);
  server->signal(SIGSTOP);
  std::vector<int> fds;
  int queued = 0;
  for (int i = 0; i < kBurst; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    // A full queue answers EAGAIN at once.
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) ++queued;
  }
  server->signal(SIGCONT);
  for (const int fd : fds) ::close(fd);
  EXPECT_EQ(queued, kBurst);
  EXPECT_EQ(curl({"--unix-socket", path, "http://quip/health"}).status, 0);
}

TEST_F(ServeTest, ADisconnectedClientCancelsItsCall) {
  auto server = start();
  const uint64_t before = metric("quip_requests_cancelled_total");
  client({"disconnect", base_, name_, "Tell me a very long story."});
  EXPECT_EQ(metric_after("quip_requests_cancelled_total", before), before + 1);
  EXPECT_EQ(metric("quip_active_calls"), 0u);
}

// A client gone while its long prompt is evaluated stops the call there,
// before its first token: the stream's SSE comments, written as each batch
// of the prompt begins, find the connection closed.
TEST_F(ServeTest, AClientGoneDuringItsPromptStopsItBeforeAnyToken) {
  auto server = start();
  const uint64_t before = metric("quip_requests_cancelled_total");
  std::string prompt;  // about 2600 tokens: six batches of the prompt
  for (int i = 0; i < 900; ++i) prompt += "word" + std::to_string(i % 97) + " ";
  client({"hang-up-in-prompt", base_, name_, prompt});
  EXPECT_EQ(metric_after("quip_requests_cancelled_total", before), before + 1);
  EXPECT_EQ(metric("quip_generated_tokens_total"), 0u);
  EXPECT_EQ(metric("quip_active_calls"), 0u);
}

TEST_F(ServeTest, SigtermFinishesTheCallsInFlightAndExitsZero) {
  auto server = start();
  json streamed;
  std::thread call([&] {
    streamed = client({"chat", base_, name_, "Tell me a story.", "200", "stream"});
  });
  // Once it is generating, stop the server.
  for (int i = 0; i < 400 && metric("quip_active_calls") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
  call.join();
  EXPECT_EQ(streamed["usage"]["completion_tokens"], 200) << streamed;
  EXPECT_FALSE(fs::exists(server->socket()));
}

TEST_F(ServeTest, AThousandFuzzedBodiesDoNotKillTheServer) {
  // A short context: a body whose limit was fuzzed away generates to its end.
  auto server = start({"--ctx-size", "96"});
  const json r = client({"fuzz", base_, "1000", "7"});
  EXPECT_TRUE(r.contains("statuses")) << r;
  EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
}

TEST_F(ServeTest, LimitsKeysAndStopping) {
  // A body over the limit is a 413.
  const fs::path big = home_ / "big.json";
  quip::testing::write_bytes(big, std::string(9u << 20, ' '));
  auto server = start();
  RunResult r413 = curl({"-o", "/dev/null", "-w", "%{http_code}", base_ + "/v1/chat/completions",
                         "--data-binary", at_file(big)});
  EXPECT_EQ(r413.out, "413");
  // A second server on the same socket is refused.
  ServerProcess second(home_.path(), {"-m", model_});
  EXPECT_EQ(second.stop(0), 1);
  EXPECT_NE(second.log().find("already running"), std::string::npos) << second.log();
  // quip serve --stop drains and stops it.
  RunResult stop = quip::testing::run_quip({"serve", "--stop"}, opts());
  EXPECT_EQ(stop.status, 0) << stop.err;
  EXPECT_EQ(server->stop(0), 0) << server->log();
  EXPECT_EQ(quip::testing::run_quip({"ps"}, opts()).status, 1);
  // Without a server, a call that names no model is the usage error it always was.
  EXPECT_EQ(quip::testing::run_quip({"-n", "1", "hi"}, opts()).status, 2);

  // Off loopback, a key is required; with one, TCP clients must send it.
  RunResult open = quip::testing::run_quip(
      {"serve", "-m", model_, "--host", "0.0.0.0", "--port", std::to_string(port_)}, opts());
  EXPECT_EQ(open.status, 2);
  EXPECT_NE(open.err.find("--api-key-file"), std::string::npos) << open.err;
  const fs::path key = home_ / "key";
  quip::testing::write_bytes(key, "sekrit-123\n");
  auto keyed = start({"--api-key-file", key.string()});
  RunResult denied = curl({"-o", "/dev/null", "-w", "%{http_code}", base_ + "/v1/models"});
  EXPECT_EQ(denied.out, "401");
  RunResult allowed = curl({"-H", "Authorization: Bearer sekrit-123", base_ + "/v1/models"});
  EXPECT_NE(allowed.out.find(name_), std::string::npos) << allowed.out;
  EXPECT_EQ(keyed->stop(SIGINT), 0);
  EXPECT_EQ(keyed->log().find("sekrit"), std::string::npos);
}

}  // namespace
}  // namespace quip::serve

namespace quip::serve {
namespace {

// quip as a client of a quip server (--backend): the server's answer,
// printed exactly, continued with -c and recorded in the local store.
TEST_F(ServeTest, QuipAsTheBackendOfQuip) {
  auto server = start();
  const json served = client({"chat", base_, name_, "What is 1+1?", "8"});
  RunOptions o = opts();
  o.env.push_back({"QUIP_NO_SERVE", "1"});  // the HTTP route, not the socket
  RunResult r =
      quip::testing::run_quip({"--backend", base_, "-m", name_, "-n", "8", "What is 1+1?"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(as_api_text(r.out), served["text"]);
  RunResult next = quip::testing::run_quip({"-c", "-n", "4", "And 2+2?"}, o);
  EXPECT_EQ(next.status, 0) << next.err;
  RunResult show = quip::testing::run_quip({"show", "--json", "1"}, o);
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["turns"].size(), 2u);
}

}  // namespace
}  // namespace quip::serve

namespace quip::serve {
namespace {

// Models load on first use and unload after --keep-alive idle, and their
// caches kept in memory go with them.
TEST_F(ServeTest, ModelsLoadOnFirstUseAndUnloadWhenIdle) {
  auto server = start({"--keep-alive", "1s"});
  const auto held = [&] { return json::parse(curl({base_ + "/api/ps"}).out)["models"].size(); };
  EXPECT_EQ(held(), 0u);
  client({"chat", base_, name_, "Hi", "2"});
  EXPECT_EQ(held(), 1u);
  EXPECT_EQ(metric("quip_cache_ram_entries"), 1u);  // the call's cache, kept
  size_t now = 1;
  for (int i = 0; i < 100 && now != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = held();
  }
  EXPECT_EQ(now, 0u);
  EXPECT_EQ(metric("quip_models_loaded"), 0u);
  // Its caches in memory went with it.
  EXPECT_EQ(metric("quip_cache_ram_entries"), 0u);
  EXPECT_EQ(metric("quip_cache_ram_bytes"), 0u);
  // And loads again on the next call.
  client({"chat", base_, name_, "Hi", "2"});
  EXPECT_EQ(held(), 1u);
}

}  // namespace
}  // namespace quip::serve
