// hub/hf_repo.h: the hf: reference, the hub's listing (a broken-input
// catalogue: it is untrusted JSON), the file a quant tag picks, and the
// cache's names; and the pull's progress line (cli/download_progress.h).
#include "hub/hf_repo.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "cli/download_progress.h"

namespace quip::hub {
namespace {

const std::string kSha(64, 'a');
const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

TEST(HfRepo, ParsesModelReferences) {
  auto r = parse_model_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->repo, "Qwen/Qwen2.5-0.5B-Instruct-GGUF");
  EXPECT_EQ(r->tag, "");
  r = parse_model_ref("hf:unsloth/gpt_oss.x-GGUF:q8_0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->repo, "unsloth/gpt_oss.x-GGUF");
  EXPECT_EQ(r->revision, "main");
  EXPECT_EQ(r->tag, "q8_0");
  r = parse_model_ref("hf:a/b@refs/pr/3:Q8_0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->repo, "a/b");
  EXPECT_EQ(r->revision, "refs/pr/3");
  EXPECT_EQ(r->tag, "Q8_0");
  r = parse_model_ref("hf:a/b@" + kCommit);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->revision, kCommit);
  EXPECT_EQ(r->tag, "");
  EXPECT_TRUE(is_commit(kCommit));
  EXPECT_FALSE(is_commit("v1.0"));
  EXPECT_FALSE(is_commit(std::string(40, 'A')));  // the hub's commits are lower case
}

TEST(HfRepo, RevisionsAreRefNames) {
  EXPECT_EQ(revision_url_segment("refs/pr/3"), "refs%2Fpr%2F3");
  EXPECT_EQ(revision_url_segment("v1.0"), "v1.0");
  for (const char* ok : {"main", "v1.0", "refs/pr/3", "release_2-x", "a.b/c.d"}) {
    EXPECT_TRUE(valid_revision(ok)) << ok;
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "/main", "main/", "a//b", ".hidden", "a/.b", "a..b", "../x", "x/..", "v1.", "x.lock",
           "a b", "a:b", "a~1", "a^", "a\\b", "a\x1b", std::string(201, 'v')}) {
    EXPECT_FALSE(valid_revision(bad)) << bad;
  }
}

TEST(HfRepo, RejectsMalformedReferences) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected hf:ORG/REPO"},
      {"Qwen/Qwen2.5", "expected hf:ORG/REPO"},
      {"hf:", "exactly one '/'"},
      {"hf:Qwen", "exactly one '/'"},
      {"hf:a/b/c", "exactly one '/'"},
      {"hf:/b", "a repository name"},
      {"hf:a/", "a repository name"},
      {"hf:a/b--c", "'--'"},
      {"hf:a/b..c", "'--'"},
      {"hf:a/-b", "a repository name"},
      {"hf:a/b.", "a repository name"},
      {"hf:a/b c", "a repository name"},
      {"hf:a/b\x1b[31m", "a repository name"},
      {"hf:a/b:", "quant tag"},
      {"hf:a/b:Q4-K", "quant tag"},
      {"hf:a/b:Q4:K", "quant tag"},
      {"hf:a/b@", "the revision after '@'"},
      {"hf:a/b@../c", "the revision after '@'"},
      {"hf:a/b@x/", "the revision after '@'"},
      {"hf:a/b@x\x1b[31m", "the revision after '@'"},
      {"hf:a/b@x@y", "the revision after '@'"},
      {"hf:a@b/c", "exactly one '/'"},
      {"hf:a/" + std::string(97, 'x'), "a repository name"},
  };
  for (const auto& [text, says] : cases) {
    auto r = parse_model_ref(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << text << ": " << r.error().message;
    EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos) << "escaped: " << text;
  }
}

std::string listing(const std::string& siblings) {
  return R"({"id": "a/b", "sha": ")" + kCommit + R"(", "siblings": [)" + siblings + "]}";
}

TEST(HfRepo, ReadsTheHubsListing) {
  auto r = parse_model_info(listing(
      R"({"rfilename": "README.md", "blobId": "x", "size": 7},
         {"rfilename": "Q8_0/m-Q8_0.gguf", "size": 1000, "lfs": {"sha256": ")" +
      kSha +
      R"(", "size": 1000, "pointerSize": 135}, "future": [1]},
         {"rfilename": "no-size.gguf", "lfs": {"sha256": ")" +
      kSha + R"(", "size": 5}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->commit, kCommit);
  ASSERT_EQ(r->files.size(), 3u);
  EXPECT_EQ(r->files[0].path, "README.md");
  EXPECT_EQ(r->files[0].size, 7u);
  EXPECT_EQ(r->files[0].sha256, "");
  EXPECT_EQ(r->files[1].path, "Q8_0/m-Q8_0.gguf");
  EXPECT_EQ(r->files[1].size, 1000u);
  EXPECT_EQ(r->files[1].sha256, kSha);
  EXPECT_EQ(r->files[2].size, 5u);
}

// Every way the listing can be broken gives one line naming the problem.
TEST(HfRepo, BrokenListingsAreErrors) {
  const std::string lfs = R"(, "lfs": {"sha256": ")" + kSha + R"(", "size": 3})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"[]", "not a JSON object"},
      {R"({"siblings": []})", "'sha'"},
      {R"({"sha": 5, "siblings": []})", "'sha'"},
      {R"({"sha": "abc", "siblings": []})", "'sha'"},
      {R"({"sha": ")" + std::string(40, 'G') + R"(", "siblings": []})", "'sha'"},
      {R"({"sha": ")" + kCommit + R"("})", "'siblings'"},
      {R"({"sha": ")" + kCommit + R"(", "siblings": {}})", "'siblings'"},
      {listing("1"), "siblings[0] is not an object"},
      {listing("{}"), "no 'rfilename'"},
      {listing(R"({"rfilename": 3})"), "no 'rfilename'"},
      {listing(R"({"rfilename": ""})"), "not a relative path"},
      {listing(R"({"rfilename": "/etc/passwd"})"), "not a relative path"},
      {listing(R"({"rfilename": "../x.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "a/../../x.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "a//x.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "./x.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "a/"})"), "not a relative path"},
      {listing(R"({"rfilename": "a\\x.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "x\u001b[2J.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "x\u0085.gguf"})"), "not a relative path"},
      {listing(R"({"rfilename": "a"}, {"rfilename": "a"})"), "listed twice"},
      {listing(R"({"rfilename": "a", "size": -1})"), "'size'"},
      {listing(R"({"rfilename": "a", "size": "3"})"), "'size'"},
      {listing(R"({"rfilename": "a", "size": 1.5})"), "'size'"},
      {listing(R"({"rfilename": "a", "lfs": 1})"), "'lfs' is not an object"},
      {listing(R"({"rfilename": "a", "lfs": {"size": 3}})"), "'lfs.sha256'"},
      {listing(R"({"rfilename": "a", "lfs": {"sha256": "abc", "size": 3}})"), "'lfs.sha256'"},
      {listing(R"({"rfilename": "a", "lfs": {"sha256": ")" + std::string(64, 'A') +
               R"(", "size": 3}})"),
       "'lfs.sha256'"},
      {listing(R"({"rfilename": "a", "lfs": {"sha256": ")" + kSha + R"("}})"), "'lfs.size'"},
      {listing(R"({"rfilename": "a", "size": 4)" + lfs + "}"), "differ"},
  };
  for (const auto& [text, says] : cases) {
    auto r = parse_model_info(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << text << ": " << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos) << r.error().message;
  }
}

TEST(HfRepo, SplitPartsAndQuantTags) {
  auto p = split_part("Q8_0/m-Q8_0-00002-of-00003.gguf");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->index, 2);
  EXPECT_EQ(p->count, 3);
  EXPECT_FALSE(split_part("m-Q8_0.gguf").has_value());
  EXPECT_FALSE(split_part("m-00004-of-00003.gguf").has_value());
  EXPECT_FALSE(split_part("m-00000-of-00003.gguf").has_value());
  EXPECT_FALSE(split_part("m-0001-of-00003.gguf").has_value());
  EXPECT_FALSE(split_part("m-00001-of-00003.bin").has_value());
  EXPECT_EQ(file_quant_tag("tiny-llama-spm-e64-q8_0.gguf"), "Q8_0");
  EXPECT_EQ(file_quant_tag("dir/Model.Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(file_quant_tag("m-UD-Q4_K_XL-00001-of-00002.gguf"), "Q4_K_XL");
  EXPECT_EQ(file_quant_tag("model.gguf"), "");
}

std::vector<RepoFile> files(const std::vector<std::string>& paths) {
  std::vector<RepoFile> out;
  for (const std::string& p : paths) out.push_back({p, 1, kSha});
  return out;
}

std::vector<std::string> chosen(const std::vector<std::string>& paths, const std::string& tag) {
  auto r = choose_model_files(files(paths), tag);
  EXPECT_TRUE(r.ok()) << tag << ": " << r.error().message;
  std::vector<std::string> out;
  if (r.ok()) {
    for (const RepoFile& f : *r) out.push_back(f.path);
  }
  return out;
}

TEST(HfRepo, ChoosesTheFileAsLlamaCppDoes) {
  const std::vector<std::string> repo = {
      "README.md",   "mmproj-m-Q4_K_M.gguf", "m-IQ4_XS.gguf", "m-Q4_K_M.gguf",
      "m-Q8_0.gguf", "m-F16.gguf",           "imatrix.gguf",
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(chosen(repo, ""), V{"m-Q4_K_M.gguf"});
  EXPECT_EQ(chosen(repo, "q8_0"), V{"m-Q8_0.gguf"});
  EXPECT_EQ(chosen(repo, "F16"), V{"m-F16.gguf"});
  // A tag is a word of the name: XS is not IQ4_XS's.
  EXPECT_EQ(chosen(repo, "IQ4_XS"), V{"m-IQ4_XS.gguf"});
  EXPECT_FALSE(choose_model_files(files(repo), "Q4_XS").ok());
  // No Q4_K_M: Q8_0; neither: the first model file.
  EXPECT_EQ(chosen({"m-F16.gguf", "m-Q8_0.gguf"}, ""), V{"m-Q8_0.gguf"});
  EXPECT_EQ(chosen({"mmproj-F16.gguf", "m-BF16.gguf", "m-F16.gguf"}, ""), V{"m-BF16.gguf"});
  // All the parts of a split model, in order, whatever order the listing has.
  EXPECT_EQ(
      chosen({"Q8_0/m-Q8_0-00002-of-00002.gguf", "Q8_0/m-Q8_0-00001-of-00002.gguf", "m-F16.gguf"},
             "Q8_0"),
      (V{"Q8_0/m-Q8_0-00001-of-00002.gguf", "Q8_0/m-Q8_0-00002-of-00002.gguf"}));
}

TEST(HfRepo, ChoiceErrorsSayWhatThereIs) {
  auto r = choose_model_files(
      files({"README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "other.gguf", "m-Q8_0-b.gguf"}),
      "Q5_K_M");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no GGUF file for the quant tag 'Q5_K_M'; the repository has: "
                                   "Q4_K_M, Q8_0, other.gguf, B"),
            std::string::npos)
      << r.error().message;
  r = choose_model_files(files({"README.md", "mmproj-F16.gguf"}), "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no GGUF model file"), std::string::npos);
  r = choose_model_files(files({"m-Q8_0-00001-of-00003.gguf", "m-Q8_0-00003-of-00003.gguf"}), "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("has no m-Q8_0-00002-of-00003.gguf"), std::string::npos)
      << r.error().message;
}

// Sets environment variables for one test and restores them after.
class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::pair<std::string, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      if (value) {
        ::setenv(name.c_str(), value, 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(HfRepo, CacheFolderAsHuggingfaceHubFindsIt) {
  const auto dir = [](std::vector<std::pair<std::string, const char*>> vars) {
    for (const char* name :
         {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME"}) {
      if (std::none_of(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; })) {
        vars.push_back({name, nullptr});
      }
    }
    EnvGuard env(vars);
    auto d = hub_cache_dir();
    return d ? d->string() : std::string("(none)");
  };
  EXPECT_EQ(dir({{"HOME", "/h"}}), "/h/.cache/huggingface/hub");
  EXPECT_EQ(dir({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}}), "/x/huggingface/hub");
  EXPECT_EQ(dir({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}, {"HF_HOME", "/hf"}}), "/hf/hub");
  EXPECT_EQ(dir({{"HF_HOME", "~/hf"}, {"HOME", "/h"}}), "/h/hf/hub");
  EXPECT_EQ(dir({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/old"}}), "/old");
  EXPECT_EQ(dir({{"HUGGINGFACE_HUB_CACHE", "/old"}, {"HF_HUB_CACHE", "/new"}}), "/new");
  EXPECT_EQ(dir({{"HF_HUB_CACHE", ""}, {"HOME", "/h"}}), "/h/.cache/huggingface/hub");
  EXPECT_EQ(dir({}), "(none)");
}

TEST(HfRepo, CacheNames) {
  EXPECT_EQ(repo_folder_name("Qwen/Qwen2.5-0.5B"), "models--Qwen--Qwen2.5-0.5B");
  EXPECT_EQ(snapshot_link_target("m.gguf", kSha), "../../blobs/" + kSha);
  EXPECT_EQ(snapshot_link_target("Q8_0/sub/m.gguf", kSha), "../../../../blobs/" + kSha);
}

}  // namespace
}  // namespace quip::hub

namespace quip::cli {
namespace {

TEST(DownloadProgress, LineShowsSizeSpeedAndTimeLeft) {
  EXPECT_EQ(DownloadProgress::text("m.gguf", 512 << 20, 1024 << 20, 32.0 * (1 << 20), 16.0, 10),
            "quip: m.gguf [#####-----] 50% 512 MiB/1 GiB, 32 MiB/s, 16 s left");
  EXPECT_EQ(DownloadProgress::text("m.gguf", 0, 100, std::nullopt, std::nullopt, 4),
            "quip: m.gguf [----] 0% 0 B/100 B");
  EXPECT_EQ(duration_text(0.2), "1 s");
  EXPECT_EQ(duration_text(150), "3 min");
  EXPECT_EQ(duration_text(7500), "2 h 5 min");
}

TEST(DownloadProgress, DrawsOnATerminalOnlyAndErasesAtTheEnd) {
  using Clock = DownloadProgress::Clock;
  PromptProgress::Options o;
  o.dim = false;
  const Clock::time_point t0 = Clock::now();
  std::ostringstream pipe;
  {
    DownloadProgress p(pipe, /*live=*/false, o);
    p.update("m.gguf", 10, 100, 0, t0);
    p.update("m.gguf", 60, 100, 0, t0 + std::chrono::seconds(1));
  }
  EXPECT_EQ(pipe.str(), "");
  std::ostringstream tty;
  {
    DownloadProgress p(tty, /*live=*/true, o);
    p.update("m.gguf", 20, 100, 20, t0);  // 20 bytes were there before this run
    p.update("m.gguf", 60, 100, 20, t0 + std::chrono::seconds(2));
    EXPECT_EQ(*p.speed(t0 + std::chrono::seconds(2)), 20.0);
  }
  EXPECT_NE(tty.str().find(
                "\r\033[Kquip: m.gguf [############--------] 60% 60 B/100 B, 20 B/s, 2 s left"),
            std::string::npos)
      << tty.str();
  EXPECT_TRUE(tty.str().ends_with("\r\033[K"));
}

}  // namespace
}  // namespace quip::cli
