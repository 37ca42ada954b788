// quip as a client of a remote OpenAI-compatible server (cli/remote_call.h):
// against tests/serve/fake_openai_server.py on a free loopback port, which
// records the requests it got and answers with canned event streams. The
// stdout contract, -c with the history, the record, --json's usage, the
// error lines, and the API key kept out of everything quip writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli_home.h"
#include "cli/exit_status.h"

extern char** environ;

namespace quip::cli {
namespace {

using testing_home::QuipHome;
using testing_home::RunOptions;
using testing_home::RunResult;
using nlohmann::json;
namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fake server, started for one test and stopped with it.
class FakeServer {
 public:
  explicit FakeServer(const fs::path& dir) : port_file_(dir / "port"), log_file_(dir / "requests") {
    std::vector<std::string> args = {"python3", QUIP_FAKE_OPENAI_SERVER, port_file_.string(),
                                     log_file_.string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    for (int i = 0; i < 200 && pid_ > 0 && !fs::exists(port_file_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (fs::exists(port_file_)) port_ = std::stoi(read_all(port_file_));
  }
  ~FakeServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  bool up() const { return port_ > 0; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url() const { return "http://" + host(); }

  // The requests received so far, oldest first.
  std::vector<json> requests() const {
    std::vector<json> all;
    std::istringstream in(read_all(log_file_));
    for (std::string line; std::getline(in, line);) all.push_back(json::parse(line));
    return all;
  }

 private:
  fs::path port_file_, log_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class RemoteBackend : public QuipHome {
 protected:
  void SetUp() override {
    server_ = std::make_unique<FakeServer>(home());
    ASSERT_TRUE(server_->up()) << "the fake server did not start (python3 " QUIP_FAKE_OPENAI_SERVER ")";
  }

  // A config with [backends.fake] (and `extra` lines), returned as --config's path.
  std::string config(const std::string& extra = "") const {
    const fs::path file = home() / "config.toml";
    quip::testing::write_bytes(file, "[backends.fake]\nurl = \"" + server_->url() + "/v1\"\n" + extra);
    return file.string();
  }

  // The same contract as QuipHome::expect_failure, for failures that come
  // after some of the answer was printed.
  void expect_one_line(const RunResult& r, int status, const std::vector<std::string>& says) const {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status, status) << r.err;
    EXPECT_EQ(quip::testing::count_lines(r.err), 1u) << r.err;
    for (const std::string& s : says) EXPECT_NE(r.err.find(s), std::string::npos) << r.err;
  }

  std::unique_ptr<FakeServer> server_;
};

TEST_F(RemoteBackend, StreamsTheAnswerAndSendsTheRequest) {
  const std::string out = run_ok({"--backend", server_->url(), "What is 1+1?"});
  EXPECT_EQ(out, "Hello, world! (1 messages)");
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["path"], "/v1/chat/completions");
  const json& body = requests[0]["body"];
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["messages"], json::parse(R"([{"role":"user","content":"What is 1+1?"}])"));
  EXPECT_EQ(body["temperature"], 0.0);  // quip's default: greedy
  EXPECT_TRUE(body["seed"].is_number_unsigned());
  EXPECT_FALSE(body.contains("model"));
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(requests[0]["authorization"], "");
}

TEST_F(RemoteBackend, SamplerFlagsAndModelAreSent) {
  run_ok({"--backend", server_->url() + "/v1/", "-m", "some-model", "--temp", "0.5", "--top-p",
          "0.9", "-s", "42", "-n", "7", "--system", "Be brief.", "Hi"});
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 1u);
  const json& body = requests[0]["body"];
  EXPECT_EQ(body["model"], "some-model");
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["top_p"], 0.9);
  EXPECT_EQ(body["seed"], 42);
  EXPECT_EQ(body["max_tokens"], 7);
  const json expected = json::parse(
      R"([{"role":"system","content":"Be brief."}, {"role":"user","content":"Hi"}])");
  EXPECT_EQ(body["messages"], expected);
}

TEST_F(RemoteBackend, TheEnvironmentVariableNamesTheBackend) {
  RunOptions o;
  o.env = {{"QUIP_BACKEND", server_->url() + "/v1"}};
  EXPECT_EQ(run_ok({"Hi"}, o), "Hello, world! (1 messages)");
  ASSERT_EQ(server_->requests().size(), 1u);
}

TEST_F(RemoteBackend, ContinuingSendsTheHistoryAndLogShowsBothTurns) {
  run_ok({"--backend", server_->url(), "-m", "m1", "--system", "Be brief.", "First?"});
  // -c alone: the conversation's own backend and model.
  EXPECT_EQ(run_ok({"-c", "Second?"}), "Hello, world! (4 messages)");
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1]["body"]["model"], "m1");
  const json history = json::parse(
      R"([{"role":"system","content":"Be brief."}, {"role":"user","content":"First?"},)"
      R"j({"role":"assistant","content":"Hello, world! (2 messages)"},)j"
      R"({"role":"user","content":"Second?"}])");
  EXPECT_EQ(requests[1]["body"]["messages"], history);

  const std::string log = run_ok({"log"});
  EXPECT_NE(log.find("First?"), std::string::npos) << log;
  const json listed = json::parse(run_ok({"log", "--json"}));
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["turns"], 2);
  const std::string id = std::to_string(listed[0]["id"].get<int64_t>());
  const std::string shown = run_ok({"show", id});
  EXPECT_NE(shown.find("--- turn 1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("--- turn 2"), std::string::npos) << shown;
  EXPECT_NE(shown.find(server_->url() + "#m1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("assistant: Hello, world! (4 messages)"), std::string::npos) << shown;

  // A fork from turn 1 sends turn 1's history only.
  EXPECT_EQ(run_ok({"--cid", id + "@1", "Other?"}), "Hello, world! (4 messages)");
  EXPECT_EQ(server_->requests()[2]["body"]["messages"][3]["content"], "Other?");
}

TEST_F(RemoteBackend, JsonReportsTheServersUsage) {
  const json first = json::parse(run_ok({"--backend", server_->url(), "--json", "Hi"}));
  EXPECT_EQ(first["text"], "Hello, world! (1 messages)");
  EXPECT_EQ(first["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(first["usage"]["cached_tokens"], 0);
  EXPECT_EQ(first["usage"]["evaluated_tokens"], 10);
  EXPECT_EQ(first["usage"]["generated_tokens"], 4);
  EXPECT_EQ(first["tokens"], json::array());
  EXPECT_EQ(first["stop"], "end");
  EXPECT_EQ(first["turn"], 1);
  const json second = json::parse(run_ok({"-c", "--json", "-s", "5", "More?"}));
  EXPECT_EQ(second["usage"]["prompt_tokens"], 30);
  EXPECT_EQ(second["usage"]["cached_tokens"], 20);
  EXPECT_EQ(second["seed"], 5);
  EXPECT_EQ(second["conversation"], first["conversation"]);
  EXPECT_EQ(second["turn"], 2);
}

TEST_F(RemoteBackend, ReasoningAndStopReasons) {
  const std::string cfg = config();
  const json j = json::parse(run_ok({"--backend", server_->url(), "-m", "think", "--json", "Hi"}));
  EXPECT_EQ(j["text"], "Two.");
  EXPECT_EQ(j["reasoning"], "Let me think.");
  EXPECT_EQ(run_ok({"--backend", server_->url(), "-m", "think", "Hi"}), "Two.");
  const json cut = json::parse(run_ok({"--backend", server_->url(), "-m", "length", "--json", "Hi"}));
  EXPECT_EQ(cut["stop"], "length");
  EXPECT_EQ(cut["text"], "Hel");
  // A server that ignores "stream" and answers whole.
  EXPECT_EQ(run_ok({"--backend", server_->url(), "-m", "json", "Hi"}), "Whole answer.");
}

TEST_F(RemoteBackend, ServerErrorsAreOneLine) {
  const std::string url = server_->url();
  auto r = expect_failure({"--backend", url, "-m", "error500", "Hi"}, kExitFailure, "HTTP 500");
  EXPECT_NE(r.err.find(server_->host()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the model crashed"), std::string::npos) << r.err;
  r = expect_failure({"--backend", url, "-m", "error401", "Hi"}, kExitFailure, "HTTP 401");
  EXPECT_NE(r.err.find("Incorrect API key provided"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(server_->host()), std::string::npos) << r.err;
  // Nothing was recorded for them.
  EXPECT_EQ(run_ok({"log", "--json"}), "[]\n");
}

TEST_F(RemoteBackend, ARefusedConnectionIsOneLine) {
  const std::string host = "127.0.0.1:" + std::to_string(closed_port());
  const auto r = expect_failure({"--backend", "http://" + host, "Hi"}, kExitFailure, host);
  EXPECT_NE(r.err.find("cannot reach"), std::string::npos) << r.err;
}

TEST_F(RemoteBackend, ATimeoutIsOneLine) {
  const std::string cfg = config("timeout = 1\nmodel = \"slow\"\n");
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run({"--config", cfg, "-m", "fake", "Hi"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.out, "Hi");  // what came before the server went quiet
  expect_one_line(r, kExitFailure, {server_->host(), "timed out"});
  EXPECT_LT(s, 15.0);
}

TEST_F(RemoteBackend, BrokenStreamsAreOneLine) {
  RunResult r = run({"--backend", server_->url(), "-m", "malformed", "Hi"});
  expect_one_line(r, kExitFailure, {server_->host(), "malformed stream", "not JSON"});
  r = run({"--backend", server_->url(), "-m", "cut", "Hi"});
  expect_one_line(r, kExitFailure, {server_->host(), "ended before"});
}

TEST_F(RemoteBackend, ConfigTableWithModelAndKey) {
  const std::string key = "sk-test-5ecret-4f9a";
  const std::string cfg = config("model = \"m1\"\napi_key_env = \"FAKE_OPENAI_KEY\"\n");
  RunOptions o;
  o.env = {{"FAKE_OPENAI_KEY", key}};
  const std::string out = run_ok({"--config", cfg, "-m", "fake", "Hi"}, o);
  EXPECT_EQ(out, "Hello, world! (1 messages)");
  const RunResult j = run({"--config", cfg, "-m", "fake", "--json", "--stats", "-c", "Again"}, o);
  EXPECT_EQ(j.status, 0) << j.err;
  const RunResult e = run({"--config", cfg, "--json", "-c", "x"}, o);  // the recorded backend
  EXPECT_EQ(e.status, 0) << e.err;
  auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const json& req : requests) {
    EXPECT_EQ(req["authorization"], "Bearer " + key);
    EXPECT_EQ(req["body"]["model"], "m1");
  }
  // An error: its line names the host, never the key.
  const RunResult bad = run({"--config", cfg, "--backend", server_->url(), "-m", "error401", "x"}, o);
  EXPECT_EQ(bad.status, kExitFailure);
  for (const std::string& text : {out, j.out, j.err, e.out, e.err, bad.err}) {
    EXPECT_EQ(text.find(key), std::string::npos) << text;
  }
  EXPECT_EQ(server_->requests().back()["authorization"], "Bearer " + key) << "matched by url";
  for (const auto& f : fs::recursive_directory_iterator(home())) {
    if (!f.is_regular_file() || f.path() == fs::path(cfg)) continue;
    if (f.path().filename() == "requests") continue;  // the server's own log
    EXPECT_EQ(read_all(f.path()).find(key), std::string::npos) << f.path();
  }
  // The key's variable unset: a usage error naming the variable, not a call.
  expect_failure({"--config", cfg, "-m", "fake", "Hi"}, kExitUsage, "FAKE_OPENAI_KEY");
}

TEST_F(RemoteBackend, LocalOnlyOptionsAreUsageErrors) {
  const std::string url = server_->url();
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--raw"}, "--raw"},
      {{"--grammar", "x.gbnf"}, "--grammar"},
      {{"--json-schema", "{}"}, "--json-schema"},
      {{"--choice", "a,b"}, "--choice"},
      {{"--print-prompt"}, "--print-prompt"},
      {{"--estimate"}, "--estimate"},
      {{"--json", "--logprobs", "2"}, "--logprobs"},
      {{"--top-k", "5"}, "--top-k"},
      {{"--template", "t.jinja"}, "--template"},
      {{"--think", "off"}, "--think"}};
  for (const auto& [extra, says] : cases) {
    std::vector<std::string> args = {"--backend", url};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("Hi");
    expect_failure(args, kExitUsage, says);
  }
  expect_failure({"--backend", "localhost:8080", "Hi"}, kExitUsage, "http://");
  expect_failure({"--backend", "http://user:pw@localhost:8080", "Hi"}, kExitUsage, "api_key_env");
  EXPECT_TRUE(server_->requests().empty());
}

TEST_F(RemoteBackend, CtrlCStopsTheAnswerAndRecordsIt) {
  RunOptions o;
  o.signal_on_output = SIGINT;
  const RunResult r = run({"--backend", server_->url(), "-m", "endless", "Hi"}, o);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, kExitSignal + SIGINT) << r.err;
  EXPECT_TRUE(r.out.starts_with("tick ")) << r.out;
  const json listed = json::parse(run_ok({"log", "--json"}));
  ASSERT_EQ(listed.size(), 1u);
  const std::string shown = run_ok({"show", std::to_string(listed[0]["id"].get<int64_t>())});
  EXPECT_NE(shown.find("(interrupted)"), std::string::npos) << shown;
}

// With QUIP_LLAMA_SERVER naming llama.cpp's llama-server: quip prints
// exactly what that server answers, for the shared tiny model.
TEST_F(RemoteBackend, LlamaServerAnswersThroughQuip) {
  const char* binary = std::getenv("QUIP_LLAMA_SERVER");
  if (binary == nullptr || *binary == '\0') GTEST_SKIP() << "QUIP_LLAMA_SERVER is not set";
  QUIP_REQUIRE_SHARED();
  const int port = closed_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> args = {binary, "-m", testing_home::qwen_model(), "--port",
                                   std::to_string(port), "--host", "127.0.0.1", "-c", "512"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, binary, nullptr, nullptr, argv.data(), environ), 0);
  struct Stop {
    pid_t pid;
    ~Stop() {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  } stop{pid};
  // Ready when a request is answered (it loads the model first).
  RunResult r;
  for (int i = 0; i < 120; ++i) {
    r = run({"--backend", url, "--json", "-n", "8", "What is 1+1?"});
    if (r.status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string expected = json::parse(r.out)["text"];
  // The same call again, as text: exactly the server's (greedy) answer.
  EXPECT_EQ(run_ok({"--backend", url, "-n", "8", "What is 1+1?"}), expected);
}

}  // namespace
}  // namespace quip::cli
