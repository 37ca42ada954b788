// `quip pull` (cli/pull.h, hub/hf_download.h) against tests/cli/fake_hf_hub.py,
// a fake hub on a free loopback port that serves the hub's routes and
// headers (the listing, resolve/ with its redirect to a CDN, X-Linked-Etag,
// ranges) and records every request. The blobs are the tiny models of
// ../shared. Checked: the Hugging Face cache layout to the byte, the file a
// quant tag picks, split models, a resumed transfer, Ctrl-C, a wrong
// checksum, 404, 401 and HF_TOKEN, and a full disk; after every failure
// nothing half-written is visible in snapshots/.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
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

using nlohmann::json;
using testing_home::QuipHome;
using testing_home::RunOptions;
using testing_home::RunResult;
namespace fs = std::filesystem;

constexpr const char* kFakeHub = QUIP_SOURCE_DIR "/tests/cli/fake_hf_hub.py";
constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* kToken = "hf_TestToken0123456789abcdefghijklmnopq";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The SHA-256 of a file as coreutils' sha256sum computes it: an
// expectation independent of quip's own hashing.
std::string sha256sum(const fs::path& p) {
  const RunResult r = quip::testing::run_command({"/usr/bin/sha256sum", p.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out.substr(0, 64);
}

std::string shared_model(const std::string& name) {
  return (quip::testing::shared_dir() / "models" / name).string();
}

// The fake hub, started for one test and stopped with it.
class FakeHub {
 public:
  explicit FakeHub(const fs::path& dir)
      : port_file_(dir / "hub-port"),
        log_file_(dir / "hub-requests"),
        config_file_(dir / "hub.json") {
    quip::testing::write_bytes(config_file_, R"({"repos": {}})");
    std::vector<std::string> args = {"python3", kFakeHub, port_file_.string(), log_file_.string(),
                                     config_file_.string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    for (int i = 0; i < 200 && pid_ > 0 && !fs::exists(port_file_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (fs::exists(port_file_)) port_ = std::stoi(read_all(port_file_));
  }
  ~FakeHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  bool up() const { return port_ > 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void configure(const json& config) { quip::testing::write_bytes(config_file_, config.dump()); }

  std::vector<json> requests() const {
    std::vector<json> all;
    std::istringstream in(read_all(log_file_));
    for (std::string line; std::getline(in, line);) all.push_back(json::parse(line));
    return all;
  }
  // The requests for the CDN's bytes (GET /cdn/...).
  std::vector<json> cdn_gets() const {
    std::vector<json> gets;
    for (const json& r : requests()) {
      if (r["method"] == "GET" && r["path"].get<std::string>().starts_with("/cdn/"))
        gets.push_back(r);
    }
    return gets;
  }
  void forget_requests() { fs::remove(log_file_); }

 private:
  fs::path port_file_, log_file_, config_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class Pull : public QuipHome {
 protected:
  void SetUp() override {
    QUIP_REQUIRE_SHARED();
    hub_ = std::make_unique<FakeHub>(home());
    ASSERT_TRUE(hub_->up()) << "the fake hub did not start (python3 " << kFakeHub << ")";
    // Three quants of one model, a README that is not an LFS file, a
    // split model in a folder, and a private repository.
    const fs::path model = shared_model("tiny-llama-spm-e64-q8_0.gguf");
    const std::string bytes = read_all(model);
    const size_t third = bytes.size() / 3;
    for (int i = 0; i < 3; ++i) {
      const std::string part = bytes.substr(i * third, i == 2 ? std::string::npos : third);
      quip::testing::write_bytes(split_part(i + 1), part);
    }
    quip::testing::write_bytes(home() / "README.md", "# tiny\n");
    config_ = {
        {"cdn_host", "localhost"},
        {"token", kToken},
        {"repos",
         {{"org/tiny",
           {{"commit", kCommit},
            {"files",
             {{"README.md", (home() / "README.md").string()},
              {"tiny-llama-spm-e256-Q4_K_M.gguf", shared_model("tiny-llama-spm-e256-q4_k_m.gguf")},
              {"tiny-llama-spm-e64-Q8_0.gguf", model.string()},
              {"tiny-llama-spm-e64-F16.gguf", shared_model("tiny-llama-spm-e64-f16.gguf")}}}}},
          {"org/no-q4",
           {{"commit", kCommit},
            {"files",
             {{"tiny-llama-spm-e64-F16.gguf", shared_model("tiny-llama-spm-e64-f16.gguf")},
              {"tiny-llama-spm-e64-Q8_0.gguf", model.string()}}}}},
          {"org/split",
           {{"commit", kCommit},
            {"files",
             {{"Q8_0/tiny-Q8_0-00001-of-00003.gguf", split_part(1).string()},
              {"Q8_0/tiny-Q8_0-00002-of-00003.gguf", split_part(2).string()},
              {"Q8_0/tiny-Q8_0-00003-of-00003.gguf", split_part(3).string()},
              {"tiny-F16.gguf", shared_model("tiny-llama-spm-e64-f16.gguf")}}}}},
          {"org/private",
           {{"commit", kCommit},
            {"private", true},
            {"files", {{"tiny-Q8_0.gguf", model.string()}}}}}}}};
    hub_->configure(config_);
  }

  fs::path split_part(int i) const { return home() / ("part" + std::to_string(i)); }
  fs::path cache() const { return home() / "hf" / "hub"; }
  fs::path repo_dir(const std::string& folder) const { return cache() / folder; }

  RunOptions env(std::vector<std::pair<std::string, std::string>> more = {}) const {
    RunOptions o;
    o.env = std::move(more);
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"HF_ENDPOINT", hub_->url()},
             {"HF_HUB_CACHE", cache().string()},
             {"HF_TOKEN", ""},
             {"HF_TOKEN_PATH", (home() / "no-token").string()}}) {
      if (std::none_of(o.env.begin(), o.env.end(),
                       [&](const auto& v) { return v.first == name; })) {
        o.env.push_back({name, value});
      }
    }
    return o;
  }

  RunResult pull(const std::string& ref,
                 std::vector<std::pair<std::string, std::string>> more = {}) {
    return run({"pull", ref}, env(std::move(more)));
  }

  // Runs `command` (a program and its arguments) with quip's run options.
  RunResult run_wrapped(std::vector<std::string> command, const std::string& ref) const {
    command.insert(command.end(), {QUIP_BINARY, "pull", ref});
    return quip::testing::run_command(command, options(env()));
  }

  // Nothing of the repository is visible: no snapshot, no ref, no blob
  // (an .incomplete part may stay).
  void expect_nothing_visible(const std::string& folder) const {
    const fs::path dir = repo_dir(folder);
    EXPECT_FALSE(fs::exists(dir / "snapshots")) << dir;
    EXPECT_FALSE(fs::exists(dir / "refs")) << dir;
    if (fs::exists(dir / "blobs")) {
      for (const auto& e : fs::directory_iterator(dir / "blobs")) {
        EXPECT_TRUE(e.path().string().ends_with(".incomplete")) << e.path();
      }
    }
  }

  // The .incomplete parts in a repository's blobs/.
  std::vector<fs::path> parts(const std::string& folder) const {
    std::vector<fs::path> found;
    const fs::path blobs = repo_dir(folder) / "blobs";
    if (!fs::exists(blobs)) return found;
    for (const auto& e : fs::directory_iterator(blobs)) {
      if (e.path().string().ends_with(".incomplete")) found.push_back(e.path());
    }
    return found;
  }

  // Checks one file of a pulled snapshot: a relative symlink to
  // ../../blobs/SHA256 (one more ../ per folder) whose blob holds `source`.
  void expect_snapshot_file(const std::string& folder, const std::string& path,
                            const fs::path& source) const {
    const std::string sha = sha256sum(source);
    const fs::path link = repo_dir(folder) / "snapshots" / kCommit / path;
    ASSERT_TRUE(fs::is_symlink(link)) << link;
    std::string up = "../../";
    for (const char c : path) {
      if (c == '/') up += "../";
    }
    EXPECT_EQ(fs::read_symlink(link).string(), up + "blobs/" + sha);
    const fs::path blob = repo_dir(folder) / "blobs" / sha;
    EXPECT_TRUE(fs::is_regular_file(blob) && !fs::is_symlink(blob)) << blob;
    EXPECT_TRUE(read_all(link) == read_all(source)) << link << " does not hold " << source;
    EXPECT_EQ(read_all(repo_dir(folder) / "refs" / "main"), kCommit);
  }

  std::unique_ptr<FakeHub> hub_;
  json config_;
};

TEST_F(Pull, DownloadsTheDefaultQuantIntoTheHuggingFaceCache) {
  const RunResult r = pull("hf:org/tiny");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path expected =
      repo_dir("models--org--tiny") / "snapshots" / kCommit / "tiny-llama-spm-e256-Q4_K_M.gguf";
  EXPECT_EQ(r.out, expected.string() + "\n");
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e256-Q4_K_M.gguf",
                       shared_model("tiny-llama-spm-e256-q4_k_m.gguf"));
  // Only the chosen file was fetched; nothing temporary is left.
  size_t blobs = 0;
  for (const auto& e : fs::directory_iterator(repo_dir("models--org--tiny") / "blobs")) {
    EXPECT_EQ(e.path().filename().string().size(), 64u) << e.path();
    ++blobs;
  }
  EXPECT_EQ(blobs, 1u);
  size_t snapshot_entries = 0;
  for ([[maybe_unused]] const auto& e :
       fs::directory_iterator(repo_dir("models--org--tiny") / "snapshots" / kCommit)) {
    ++snapshot_entries;
  }
  EXPECT_EQ(snapshot_entries, 1u);
  // On a pipe: one line at the end, naming what was pulled.
  EXPECT_EQ(quip::testing::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("hf:org/tiny: tiny-llama-spm-e256-Q4_K_M.gguf"), std::string::npos) << r.err;
  // The hub's routes in the order hf_hub_download uses them; the bytes
  // from the CDN, which gets no token (there is none here either way).
  const auto requests = hub_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0]["path"], "/api/models/org/tiny/revision/main?blobs=true");
  EXPECT_EQ(requests[1]["method"], "HEAD");
  EXPECT_EQ(requests[1]["path"],
            std::string("/org/tiny/resolve/") + kCommit + "/tiny-llama-spm-e256-Q4_K_M.gguf");
  EXPECT_EQ(requests[2]["method"], "GET");
  EXPECT_TRUE(requests[2]["path"].get<std::string>().starts_with("/cdn/"));
  EXPECT_TRUE(requests[2]["host"].get<std::string>().starts_with("localhost:"));
  EXPECT_EQ(requests[2]["range"], "");

  // The printed path is a model quip runs.
  const std::string path = r.out.substr(0, r.out.size() - 1);
  const RunResult inspect = run({"inspect", path});
  EXPECT_EQ(inspect.status, 0) << inspect.err;
  const RunResult answer = run({"-m", path, "--raw", "-n", "1", "--temp", "0", "hi"});
  EXPECT_EQ(answer.status, 0) << answer.err;
  EXPECT_FALSE(answer.out.empty());

  // A second pull finds it in the cache and fetches nothing.
  hub_->forget_requests();
  const RunResult again = pull("hf:org/tiny");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
  EXPECT_NE(again.err.find("already in the cache"), std::string::npos) << again.err;
  EXPECT_TRUE(hub_->cdn_gets().empty());
}

// A renamed repository answers with relative redirects to its new name;
// the files stay under the name asked for, as huggingface_hub keeps them.
TEST_F(Pull, ARenamedRepositoryIsFollowed) {
  config_["moved"] = {{"org/old-name", "org/tiny"}};
  hub_->configure(config_);
  const RunResult r = pull("hf:org/old-name:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, (repo_dir("models--org--old-name") / "snapshots" / kCommit /
                    "tiny-llama-spm-e64-Q8_0.gguf")
                           .string() +
                       "\n");
  expect_snapshot_file("models--org--old-name", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
}

TEST_F(Pull, AQuantTagChoosesTheFile) {
  for (const auto& [tag, file] : std::vector<std::pair<std::string, std::string>>{
           {"Q8_0", "tiny-llama-spm-e64-Q8_0.gguf"},
           {"f16", "tiny-llama-spm-e64-F16.gguf"},
           {"Q4_K_M", "tiny-llama-spm-e256-Q4_K_M.gguf"}}) {
    const RunResult r = pull("hf:org/tiny:" + tag);
    ASSERT_EQ(r.status, 0) << tag << ": " << r.err;
    EXPECT_EQ(r.out,
              (repo_dir("models--org--tiny") / "snapshots" / kCommit / file).string() + "\n");
  }
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-F16.gguf",
                       shared_model("tiny-llama-spm-e64-f16.gguf"));
  // Without Q4_K_M, the default is Q8_0 (as llama.cpp's -hf).
  const RunResult fallback = pull("hf:org/no-q4");
  ASSERT_EQ(fallback.status, 0) << fallback.err;
  EXPECT_TRUE(fallback.out.ends_with("/tiny-llama-spm-e64-Q8_0.gguf\n")) << fallback.out;
}

// A branch, a tag or a pull request's ref pulls the commit it points at,
// and the cache records it under refs/ as huggingface_hub does; a commit
// pulls itself and records no ref.
TEST_F(Pull, ARevisionPullsItsCommit) {
  const std::string v1 = "1111111111111111111111111111111111111111";
  const std::string pr = "2222222222222222222222222222222222222222";
  const fs::path q8 = shared_model("tiny-llama-spm-e64-q8_0.gguf");
  config_["repos"]["org/tiny"]["refs"] = {
      {"v1.0", {{"commit", v1}, {"files", {{"old-Q8_0.gguf", q8.string()}}}}},
      {"refs/pr/3",
       {{"commit", pr},
        {"files", {{"pr-F16.gguf", shared_model("tiny-llama-spm-e64-f16.gguf")}}}}}};
  hub_->configure(config_);
  const fs::path dir = repo_dir("models--org--tiny");

  RunResult r = pull("hf:org/tiny@v1.0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, (dir / "snapshots" / v1 / "old-Q8_0.gguf").string() + "\n");
  EXPECT_TRUE(read_all(dir / "snapshots" / v1 / "old-Q8_0.gguf") == read_all(q8));
  EXPECT_EQ(read_all(dir / "refs" / "v1.0"), v1);
  EXPECT_FALSE(fs::exists(dir / "refs" / "main"));
  EXPECT_NE(r.err.find("hf:org/tiny@v1.0: old-Q8_0.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(hub_->requests()[0]["path"], "/api/models/org/tiny/revision/v1.0?blobs=true");

  hub_->forget_requests();
  r = pull("hf:org/tiny@refs/pr/3:F16");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, (dir / "snapshots" / pr / "pr-F16.gguf").string() + "\n");
  EXPECT_EQ(read_all(dir / "refs" / "refs" / "pr" / "3"), pr);
  EXPECT_EQ(hub_->requests()[0]["path"], "/api/models/org/tiny/revision/refs%2Fpr%2F3?blobs=true");

  // A commit: the same snapshot, already in the cache, and no new ref.
  r = pull("hf:org/tiny@" + v1);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, (dir / "snapshots" / v1 / "old-Q8_0.gguf").string() + "\n");
  EXPECT_NE(r.err.find("already in the cache"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "refs" / v1));

  // A model name finds each revision's file in the cache.
  for (const auto& [name, file] : std::vector<std::pair<std::string, std::string>>{
           {"hf:org/tiny@v1.0", "old-Q8_0.gguf"},
           {"hf:org/tiny@" + v1 + ":Q8_0", "old-Q8_0.gguf"},
           {"hf:org/tiny@refs/pr/3", "pr-F16.gguf"}}) {
    const RunResult shown = run({"inspect", "--json", name}, env());
    ASSERT_EQ(shown.status, 0) << name << ": " << shown.err;
    EXPECT_NE(shown.out.find(file), std::string::npos) << name << ": " << shown.out;
  }

  // A revision the hub does not have.
  expect_failure({"pull", "hf:org/tiny@v9"}, kExitFailure,
                 "hf:org/tiny@v9: no such repository or revision 'v9' on " + hub_->url(), env());
}

TEST_F(Pull, ATagThatMatchesNothingListsTheAvailableOnes) {
  const RunResult r =
      expect_failure({"pull", "hf:org/tiny:Q5_K_M"}, kExitFailure,
                     "hf:org/tiny:Q5_K_M: no GGUF file for the quant tag 'Q5_K_M'", env());
  EXPECT_NE(r.err.find("the repository has: Q4_K_M, F16, Q8_0"), std::string::npos) << r.err;
  expect_nothing_visible("models--org--tiny");
  EXPECT_TRUE(hub_->cdn_gets().empty());
}

TEST_F(Pull, ASplitModelComesWithAllItsParts) {
  const RunResult r = pull("hf:org/split:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, (repo_dir("models--org--split") / "snapshots" / kCommit /
                    "Q8_0/tiny-Q8_0-00001-of-00003.gguf")
                           .string() +
                       "\n");
  for (int i = 1; i <= 3; ++i) {
    expect_snapshot_file("models--org--split",
                         "Q8_0/tiny-Q8_0-0000" + std::to_string(i) + "-of-00003.gguf",
                         split_part(i));
  }
  // The parts together are the model they were cut from.
  std::string joined;
  for (int i = 1; i <= 3; ++i) joined += read_all(split_part(i));
  EXPECT_TRUE(joined == read_all(shared_model("tiny-llama-spm-e64-q8_0.gguf")));
  EXPECT_EQ(hub_->cdn_gets().size(), 3u);
  EXPECT_FALSE(
      fs::exists(repo_dir("models--org--split") / "snapshots" / kCommit / "tiny-F16.gguf"));
}

TEST_F(Pull, ACutTransferResumesWhereItStopped) {
  config_["cut_after"] = 100000;
  hub_->configure(config_);
  const RunResult cut =
      expect_failure({"pull", "hf:org/tiny:Q8_0"}, kExitFailure, "pull again to resume", env());
  EXPECT_NE(cut.err.find("after 100000 of "), std::string::npos) << cut.err;
  expect_nothing_visible("models--org--tiny");
  const auto kept = parts("models--org--tiny");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(fs::file_size(kept[0]), 100000u);

  config_.erase("cut_after");
  hub_->configure(config_);
  hub_->forget_requests();
  const RunResult resumed = pull("hf:org/tiny:Q8_0");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto gets = hub_->cdn_gets();
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["range"], "bytes=100000-");
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
  EXPECT_TRUE(parts("models--org--tiny").empty());
}

TEST_F(Pull, AServerThatIgnoresTheRangeGivesTheWholeFileAgain) {
  config_["cut_after"] = 100000;
  hub_->configure(config_);
  expect_failure({"pull", "hf:org/tiny:Q8_0"}, kExitFailure, "pull again to resume", env());
  config_.erase("cut_after");
  config_["ignore_range"] = true;
  hub_->configure(config_);
  const RunResult r = pull("hf:org/tiny:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
}

TEST_F(Pull, CtrlCKeepsThePartForTheNextPull) {
  config_["stall_after"] = 50000;
  hub_->configure(config_);
  // SIGINT once the download has begun (the fake CDN then sends nothing
  // more); timeout(1) passes the command's own exit status on.
  const RunResult r =
      run_wrapped({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "2"}, "hf:org/tiny:Q8_0");
  EXPECT_EQ(r.status, kExitInterrupted) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  expect_nothing_visible("models--org--tiny");
  const auto kept = parts("models--org--tiny");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(fs::file_size(kept[0]), 50000u);

  config_.erase("stall_after");
  hub_->configure(config_);
  hub_->forget_requests();
  const RunResult resumed = pull("hf:org/tiny:Q8_0");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto gets = hub_->cdn_gets();
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["range"], "bytes=50000-");
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
}

TEST_F(Pull, CtrlCWhileWaitingForTheHubStopsAtOnce) {
  config_["stall_api"] = true;
  hub_->configure(config_);
  const auto start = std::chrono::steady_clock::now();
  const RunResult r =
      run_wrapped({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1"}, "hf:org/tiny");
  EXPECT_EQ(r.status, kExitInterrupted) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(fs::exists(repo_dir("models--org--tiny")));
}

// On a terminal (script(1) gives quip one), a bar with the size, the speed
// and the time left, erased before the last line.
TEST_F(Pull, ATerminalGetsAProgressBar) {
  config_["throttle"] = 256 * 1024;  // about a second for the Q8_0 file
  hub_->configure(config_);
  const std::string command = std::string(QUIP_BINARY) + " pull hf:org/tiny:Q8_0";
  const RunResult r = quip::testing::run_command({"/usr/bin/script", "-qec", command, "/dev/null"},
                                                 options(env({{"NO_COLOR", "1"}})));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\r\033[Kquip: tiny-llama-spm-e64-Q8_0.gguf [#"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("/4.9 MiB, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MiB/s, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" s left"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("\r\033[Kquip pull: hf:org/tiny:Q8_0: tiny-llama-spm-e64-Q8_0.gguf, 4.9 MiB: "
                 "downloaded 4.9 MiB in "),
      std::string::npos)
      << r.out;
}

// Two pulls of one file at once: the second waits for the first's lock
// (the file huggingface_hub locks too) and finds the file there.
TEST_F(Pull, TwoPullsAtOnceDownloadOnce) {
  config_["throttle"] = 512 * 1024;
  hub_->configure(config_);
  const std::string pull = std::string(QUIP_BINARY) + " pull hf:org/tiny:Q8_0";
  const std::string script = pull + " >" + (home() / "out1").string() + " 2>/dev/null & " + pull +
                             " >" + (home() / "out2").string() +
                             " 2>/dev/null; b=$?; wait $!; a=$?; echo $a $b";
  const RunResult r = quip::testing::run_command({"/bin/sh", "-c", script}, options(env()));
  EXPECT_EQ(r.out, "0 0\n") << r.err;
  const std::string path =
      (repo_dir("models--org--tiny") / "snapshots" / kCommit / "tiny-llama-spm-e64-Q8_0.gguf")
          .string() +
      "\n";
  EXPECT_EQ(read_all(home() / "out1"), path);
  EXPECT_EQ(read_all(home() / "out2"), path);
  EXPECT_EQ(hub_->cdn_gets().size(), 1u);
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
}

TEST_F(Pull, AWrongChecksumLeavesNothing) {
  config_["wrong_bytes"] = true;
  hub_->configure(config_);
  const RunResult r =
      expect_failure({"pull", "hf:org/tiny:Q8_0"}, kExitFailure, "SHA-256 mismatch", env());
  EXPECT_NE(r.err.find(sha256sum(shared_model("tiny-llama-spm-e64-q8_0.gguf"))), std::string::npos);
  expect_nothing_visible("models--org--tiny");
  EXPECT_TRUE(parts("models--org--tiny").empty());
}

TEST_F(Pull, NotFoundNamesTheRepositoryOrFile) {
  expect_failure({"pull", "hf:org/nothing"}, kExitFailure,
                 "quip pull: hf:org/nothing: no such repository on " + hub_->url(), env());
  config_["repos"]["org/tiny"]["gone"] = {"tiny-llama-spm-e64-Q8_0.gguf"};
  hub_->configure(config_);
  expect_failure({"pull", "hf:org/tiny:Q8_0"}, kExitFailure,
                 "hf:org/tiny:Q8_0: tiny-llama-spm-e64-Q8_0.gguf: no such file on " + hub_->url(),
                 env());
  expect_nothing_visible("models--org--tiny");
  EXPECT_FALSE(fs::exists(repo_dir("models--org--nothing")));
}

TEST_F(Pull, APrivateRepositoryNeedsHfToken) {
  const RunResult none =
      expect_failure({"pull", "hf:org/private"}, kExitFailure, "set HF_TOKEN", env());
  EXPECT_NE(none.err.find("401"), std::string::npos) << none.err;
  const std::string wrong = "hf_WrongToken0123456789abcdefghijklmnop";
  const RunResult refused = expect_failure({"pull", "hf:org/private"}, kExitFailure,
                                           "refused HF_TOKEN", env({{"HF_TOKEN", wrong}}));
  EXPECT_EQ(refused.err.find(wrong), std::string::npos) << "the token must never be printed";
  expect_nothing_visible("models--org--private");

  hub_->forget_requests();
  const RunResult r = pull("hf:org/private", {{"HF_TOKEN", kToken}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find(kToken), std::string::npos);
  expect_snapshot_file("models--org--private", "tiny-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
  // The token goes to the hub, never to the CDN on another host.
  const auto requests = hub_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0]["authorization"], std::string("Bearer ") + kToken);
  EXPECT_EQ(requests[1]["authorization"], std::string("Bearer ") + kToken);
  EXPECT_TRUE(requests[2]["host"].get<std::string>().starts_with("localhost:"));
  EXPECT_EQ(requests[2]["authorization"], "");

  // Without HF_TOKEN, the token `hf auth login` saved: the file
  // HF_TOKEN_PATH names, else HF_HOME/token (a newline after it).
  quip::testing::write_bytes(home() / "token-file", std::string(kToken) + "\n");
  hub_->forget_requests();
  const RunResult saved =
      pull("hf:org/private", {{"HF_TOKEN_PATH", (home() / "token-file").string()}});
  ASSERT_EQ(saved.status, 0) << saved.err;
  EXPECT_EQ(hub_->requests().at(0)["authorization"], std::string("Bearer ") + kToken);
  const fs::path hf_home = home() / "hf-home";
  fs::create_directories(hf_home);
  quip::testing::write_bytes(hf_home / "token", wrong);
  const RunResult refused_file =
      expect_failure({"pull", "hf:org/private"}, kExitFailure,
                     "refused the token in " + (hf_home / "token").string(),
                     env({{"HF_TOKEN_PATH", ""}, {"HF_HOME", hf_home.string()}}));
  EXPECT_EQ(refused_file.err.find(wrong), std::string::npos) << "the token must never be printed";
  // HF_TOKEN comes first.
  const RunResult first =
      pull("hf:org/private",
           {{"HF_TOKEN", kToken}, {"HF_TOKEN_PATH", ""}, {"HF_HOME", hf_home.string()}});
  EXPECT_EQ(first.status, 0) << first.err;
}

// A full disk, made with a file size limit (RLIMIT_FSIZE, through
// prlimit(1)): writes past it fail with EFBIG, as they fail with ENOSPC on
// a full disk, and quip ignores SIGXFSZ so that the write returns the error
// instead of the signal killing it. (A small tmpfs would need root to mount.)
TEST_F(Pull, AFullDiskLeavesNothingVisibleAndResumesLater) {
  const RunResult r = run_wrapped({"/usr/bin/prlimit", "--fsize=200000"}, "hf:org/tiny:Q8_0");
  EXPECT_EQ(r.status, kExitFailure) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(quip::testing::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("free some space and pull again to resume"), std::string::npos) << r.err;
  expect_nothing_visible("models--org--tiny");
  const auto kept = parts("models--org--tiny");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(fs::file_size(kept[0]), 200000u);

  hub_->forget_requests();
  const RunResult resumed = pull("hf:org/tiny:Q8_0");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  ASSERT_EQ(hub_->cdn_gets().size(), 1u);
  EXPECT_EQ(hub_->cdn_gets()[0]["range"], "bytes=200000-");
  expect_snapshot_file("models--org--tiny", "tiny-llama-spm-e64-Q8_0.gguf",
                       shared_model("tiny-llama-spm-e64-q8_0.gguf"));
}

TEST_F(Pull, MalformedReferencesAreUsageErrors) {
  expect_failure({"pull"}, kExitUsage, "MODEL", env());
  expect_failure({"pull", "org/tiny"}, kExitUsage, "expected hf:ORG/REPO[@REVISION][:QUANT]",
                 env());
  expect_failure({"pull", "hf:org/tiny@"}, kExitUsage, "the revision after '@'", env());
  expect_failure({"pull", "hf:org/tiny@../x"}, kExitUsage, "the revision after '@'", env());
  expect_failure({"pull", "hf:org/tiny@v1/"}, kExitUsage, "the revision after '@'", env());
  expect_failure({"pull", "hf:org/tiny/x"}, kExitUsage, "exactly one '/'", env());
  expect_failure({"pull", "hf:org/ti--ny"}, kExitUsage, "'--'", env());
  expect_failure({"pull", "hf:org/tiny:Q4 K"}, kExitUsage, "quant tag", env());
  expect_failure({"pull", "hf:org/tiny"}, kExitUsage, "HF_ENDPOINT 'ftp://x'",
                 env({{"HF_ENDPOINT", "ftp://x"}}));
  expect_failure({"pull", "hf:org/tiny"}, kExitUsage, "HF_TOKEN holds a space",
                 env({{"HF_TOKEN", "hf_abc\r\nX-Injected: 1"}}));
  EXPECT_TRUE(hub_->requests().empty());
}

}  // namespace
}  // namespace quip::cli
