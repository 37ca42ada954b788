// The names of other tools' stores resolve to their files (session/model_stores.h),
// on stores made as those tools make them (tests/cli/fake_stores.h).
#include "session/model_stores.h"

#include <gtest/gtest.h>

#include <map>

#include "cli/fake_stores.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::session {
namespace {

namespace fs = std::filesystem;
using quip::testing_stores::FakeStores;
using quip::testing_stores::shared_model;
using quip::testing_stores::write_text;

constexpr const char* kRev = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* kOldRev = "fedcba9876543210fedcba9876543210fedcba98";

class ModelStores : public ::testing::Test {
 protected:
  void SetUp() override {
    if (quip::testing::shared_dir().empty()) GTEST_SKIP() << "no shared test data";
    qwen_ = shared_model("tiny-qwen2-e64-q8_0.gguf");
    llama_ = shared_model("tiny-llama-spm-e64-q8_0.gguf");
    qwen3_ = shared_model("tiny-qwen3-e64-q8_0.gguf");
  }

  fs::path home() const { return tmp_.path() / "home"; }

  // The roots from an environment of HOME and `vars` only.
  StoreRoots roots(std::map<std::string, std::string> vars = {}) const {
    vars.emplace("HOME", home().string());
    return store_roots(
        [&](const char* name) -> std::optional<std::string> {
          auto it = vars.find(name);
          return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        },
        tmp_.path() / "usr-share-ollama");
  }

  // The file `name` names, expecting exactly one store to have it.
  fs::path resolve(const std::string& name, const StoreRoots& r) const {
    const StoreLookup l = find_in_stores(name, r);
    EXPECT_EQ(l.found.size(), 1u) << name;
    EXPECT_TRUE(l.problems.empty()) << name << ": " << (l.problems.empty() ? "" : l.problems[0]);
    return l.found.empty() ? fs::path() : l.found[0].path;
  }

  quip::testing::TempDir tmp_;
  FakeStores stores_{home()};
  fs::path qwen_, llama_, qwen3_;
};

TEST_F(ModelStores, OllamaNamesWithDefaultRegistryNamespaceAndTag) {
  const fs::path small =
      stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "0.5b", qwen_);
  const fs::path latest =
      stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "latest", llama_);
  const fs::path user = stores_.ollama_pull("registry.ollama.ai", "someone", "tiny", "v1", qwen3_);
  const fs::path hf = stores_.ollama_pull("hf.co", "bartowski", "Qwen2.5-GGUF", "Q8_0", llama_);
  const StoreRoots r = roots();
  EXPECT_EQ(r.ollama, stores_.ollama_root());
  EXPECT_EQ(resolve("qwen2.5:0.5b", r), small);
  EXPECT_EQ(resolve("library/qwen2.5:0.5b", r), small);
  EXPECT_EQ(resolve("registry.ollama.ai/library/qwen2.5:0.5b", r), small);
  EXPECT_EQ(resolve("ollama:qwen2.5:0.5b", r), small);
  EXPECT_EQ(resolve("qwen2.5", r), latest);      // the tag latest
  EXPECT_EQ(resolve("Qwen2.5:0.5B", r), small);  // Ollama ignores case
  EXPECT_EQ(resolve("someone/tiny:v1", r), user);
  EXPECT_EQ(resolve("hf.co/bartowski/Qwen2.5-GGUF:Q8_0", r), hf);
  EXPECT_EQ(find_in_stores("qwen2.5:7b", r).found.size(), 0u);
  EXPECT_EQ(find_in_stores("tiny:v1", r).found.size(), 0u);  // not in library
  EXPECT_EQ(find_in_stores("../../etc:passwd", r).found.size(), 0u);
  // The names `ollama list` shows resolve back.
  EXPECT_EQ(find_in_stores("qwen2.5:0.5b", r).found[0].name, "qwen2.5:0.5b");
  EXPECT_EQ(find_in_stores("hf.co/bartowski/Qwen2.5-GGUF:Q8_0", r).found[0].name,
            "hf.co/bartowski/Qwen2.5-GGUF:Q8_0");
}

TEST_F(ModelStores, OllamaFolderFromTheEnvironmentElseHomeElseTheService) {
  EXPECT_EQ(roots().ollama, tmp_.path() / "usr-share-ollama");  // no ~/.ollama/models
  fs::create_directories(stores_.ollama_root());
  EXPECT_EQ(roots().ollama, stores_.ollama_root());
  EXPECT_EQ(roots({{"OLLAMA_MODELS", "/elsewhere"}}).ollama, fs::path("/elsewhere"));

  // The service's folder is used like any other.
  FakeStores service(tmp_.path() / "service-home");
  const fs::path blob = service.ollama_pull("registry.ollama.ai", "library", "m", "latest", qwen_);
  fs::remove_all(stores_.ollama_root());
  fs::rename(service.ollama_root(), tmp_.path() / "usr-share-ollama");
  EXPECT_EQ(resolve("m", roots()), tmp_.path() / "usr-share-ollama" / "blobs" / blob.filename());
}

TEST_F(ModelStores, OllamaBrokenManifestsAreProblemsNotMisses) {
  stores_.ollama_pull("registry.ollama.ai", "library", "a", "latest", qwen_);
  write_text(stores_.ollama_manifest("registry.ollama.ai", "library", "a", "latest"), "{not json");
  StoreLookup l = find_in_stores("a", roots());
  EXPECT_TRUE(l.found.empty());
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("not a JSON object"), std::string::npos) << l.problems[0];

  const fs::path blob = stores_.ollama_pull("registry.ollama.ai", "library", "b", "latest", llama_);
  fs::remove(blob);
  l = find_in_stores("b", roots());
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("is missing"), std::string::npos) << l.problems[0];

  // A manifest without a model layer (an adapter, say) is no GGUF model.
  write_text(stores_.ollama_manifest("registry.ollama.ai", "library", "c", "latest"),
             R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.adapter",)"
             R"("digest":"sha256:00","size":1}]})");
  l = find_in_stores("c", roots());
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("application/vnd.ollama.image.model"), std::string::npos);
}

// Manifests as a bug or another tool might leave them: each is a problem
// that names the manifest and what is wrong, never a crash or a miss.
TEST_F(ModelStores, BrokenManifestCatalogue) {
  const std::string sha(64, 'a');
  const std::vector<std::pair<std::string, std::string>> ollama = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {"{}", "no 'layers' array"},
      {R"({"layers":{}})", "no 'layers' array"},
      {R"({"layers":[]})", "no layer of mediaType"},
      {R"({"layers":[1,"x",null]})", "no layer of mediaType"},
      {R"({"layers":[{"mediaType":"application/vnd.ollama.image.model"}]})", "digest ''"},
      {R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":7}]})",
       "digest ''"},
      {R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../x"}]})",
       "is not sha256: and 64 hex digits"},
      {R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"md5:)" + sha +
           R"("}]})",
       "is not sha256: and 64 hex digits"},
      {R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + sha +
           R"("}]})",
       "is missing"},
  };
  for (const auto& [text, says] : ollama) {
    const fs::path manifest = stores_.ollama_manifest("registry.ollama.ai", "library", "m", "t");
    write_text(manifest, text);
    const StoreLookup l = find_in_stores("m:t", roots());
    EXPECT_TRUE(l.found.empty()) << text;
    ASSERT_EQ(l.problems.size(), 1u) << text;
    EXPECT_NE(l.problems[0].find(manifest.string()), std::string::npos) << l.problems[0];
    EXPECT_NE(l.problems[0].find(says), std::string::npos) << text << ": " << l.problems[0];
  }

  const std::vector<std::pair<std::string, std::string>> llamacpp = {
      {"{", "not a JSON object"},
      {"{}", "no ggufFile.rfilename"},
      {R"({"ggufFile":"x.gguf"})", "no ggufFile.rfilename"},
      {R"({"ggufFile":{"rfilename":3}})", "no ggufFile.rfilename"},
      {R"({"ggufFile":{"rfilename":"../../etc/passwd"}})", "is not a file name"},
      {R"({"ggufFile":{"rfilename":"/abs.gguf"}})", "is not a file name"},
      {R"({"ggufFile":{"rfilename":"gone.gguf"}})", "is missing"},
  };
  for (const auto& [text, says] : llamacpp) {
    const fs::path manifest = stores_.llamacpp_root() / "manifest=o=r=latest.json";
    write_text(manifest, text);
    const StoreLookup l = find_in_stores("o/r", roots());
    EXPECT_TRUE(l.found.empty()) << text;
    ASSERT_EQ(l.problems.size(), 1u) << text;
    EXPECT_NE(l.problems[0].find(manifest.string()), std::string::npos) << l.problems[0];
    EXPECT_NE(l.problems[0].find(says), std::string::npos) << text << ": " << l.problems[0];
  }
  // The listing leaves broken entries out.
  EXPECT_TRUE(list_stores(roots()).empty());
}

TEST_F(ModelStores, HuggingFaceRepositoryQuantAndFile) {
  const fs::path q4 = stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-Q4_K_M.gguf", qwen_);
  const fs::path q8 = stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-q8_0.gguf", llama_);
  const fs::path proj = stores_.hf_download("Org", "Tiny-GGUF", kRev, "mmproj-Q8_0.gguf", qwen3_);
  const fs::path sub =
      stores_.hf_download("Org", "Tiny-GGUF", kRev, "sub/dir/tiny-F16.gguf", qwen3_);
  const StoreRoots r = roots();
  EXPECT_EQ(r.huggingface, stores_.hf_root());
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF", r), q4);       // Q4_K_M by default
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF:Q8_0", r), q8);  // case ignored; mmproj is no model
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF:q4_k_m", r), q4);
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF:F16", r), sub);
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF/sub/dir/tiny-F16.gguf", r), sub);
  EXPECT_EQ(resolve("hf:Org/Tiny-GGUF/mmproj-Q8_0.gguf", r), proj);  // named: taken as asked
  EXPECT_EQ(find_in_stores("hf:Org/Tiny-GGUF:Q5_K_M", r).found.size(), 0u);
  EXPECT_EQ(find_in_stores("hf:Org/Tiny-GGUF/../x.gguf", r).found.size(), 0u);
  // Without the prefix the hub cache is not asked.
  EXPECT_EQ(find_in_stores("Org/Tiny-GGUF", r).found.size(), 0u);
  // The snapshot's link is what is found: the model reads through it.
  EXPECT_TRUE(fs::is_symlink(q4));
  EXPECT_EQ(fs::file_size(q4), fs::file_size(qwen_));
}

TEST_F(ModelStores, HuggingFaceRevisionOfRefsMain) {
  const fs::path old_file = stores_.hf_download(stores_.hf_root(), "Org", "R", kOldRev,
                                                "m-Q8_0.gguf", llama_, /*main=*/false);
  const fs::path new_file = stores_.hf_download("Org", "R", kRev, "m-Q8_0.gguf", qwen_);
  EXPECT_EQ(resolve("hf:Org/R", roots()), new_file);
  // Without refs/main, two snapshots are a problem; one is the one.
  fs::remove(stores_.hf_root() / "models--Org--R" / "refs" / "main");
  StoreLookup l = find_in_stores("hf:Org/R", roots());
  EXPECT_TRUE(l.found.empty());
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("refs/main"), std::string::npos) << l.problems[0];
  fs::remove_all(new_file.parent_path());
  EXPECT_EQ(resolve("hf:Org/R", roots()), old_file);
}

// ORG/REPO@REVISION: the snapshot refs/REVISION names (a branch, a tag,
// "refs/pr/3" in folders), or a commit's own snapshot.
TEST_F(ModelStores, HuggingFaceNamedRevisions) {
  const fs::path old_file = stores_.hf_download(stores_.hf_root(), "Org", "R", kOldRev,
                                                "m-Q8_0.gguf", llama_, /*main=*/false);
  const fs::path old_f16 = stores_.hf_download(stores_.hf_root(), "Org", "R", kOldRev, "m-F16.gguf",
                                               qwen3_, /*main=*/false);
  const fs::path new_file = stores_.hf_download("Org", "R", kRev, "m-Q8_0.gguf", qwen_);
  const fs::path refs = stores_.hf_root() / "models--Org--R" / "refs";
  quip::testing::write_bytes(refs / "v1.0", kOldRev);
  fs::create_directories(refs / "refs" / "pr");
  quip::testing::write_bytes(refs / "refs" / "pr" / "3", std::string(kOldRev) + "\n");
  const StoreRoots r = roots();
  EXPECT_EQ(resolve("hf:Org/R", r), new_file);
  EXPECT_EQ(resolve("hf:Org/R@main", r), new_file);
  EXPECT_EQ(resolve("hf:Org/R@v1.0", r), old_file);  // Q8_0 before F16
  EXPECT_EQ(resolve("hf:Org/R@v1.0:F16", r), old_f16);
  EXPECT_EQ(resolve("hf:Org/R@refs/pr/3:f16", r), old_f16);
  EXPECT_EQ(resolve(std::string("hf:Org/R@") + kOldRev, r), old_file);
  EXPECT_EQ(resolve(std::string("hf:Org/R@") + kRev, r), new_file);
  // The name found is the one typed, so that it resolves again.
  EXPECT_EQ(find_in_stores("hf:Org/R@v1.0:F16", r).found.at(0).name, "hf:Org/R@v1.0:F16");
  // A revision not in the cache is a problem naming it; malformed ones, or
  // a path after a revision, name nothing.
  const StoreLookup missing = find_in_stores("hf:Org/R@v2", r);
  EXPECT_TRUE(missing.found.empty());
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_NE(missing.problems[0].find("no snapshot of revision 'v2'"), std::string::npos)
      << missing.problems[0];
  for (const char* bad : {"hf:Org/R@", "hf:Org/R@../R", "hf:Org/R@v1.0:", "hf:Org@v1.0",
                          "hf:Org/R@v1.0/m-F16.gguf"}) {
    const StoreLookup l = find_in_stores(bad, r);
    EXPECT_TRUE(l.found.empty()) << bad;
  }
}

TEST_F(ModelStores, HuggingFaceFolderFromTheEnvironment) {
  EXPECT_EQ(roots({{"HF_HUB_CACHE", "/a"}, {"HF_HOME", "/b"}}).huggingface, fs::path("/a"));
  EXPECT_EQ(roots({{"HF_HOME", "/b"}}).huggingface, fs::path("/b/hub"));
  EXPECT_EQ(roots({{"XDG_CACHE_HOME", "/c"}}).huggingface, fs::path("/c/huggingface/hub"));
  EXPECT_EQ(roots().huggingface, home() / ".cache" / "huggingface" / "hub");

  const fs::path elsewhere = tmp_.path() / "hub";
  const fs::path f = stores_.hf_download(elsewhere, "o", "r", kRev, "x-Q8_0.gguf", qwen_);
  EXPECT_EQ(resolve("hf:o/r", roots({{"HF_HUB_CACHE", elsewhere.string()}})), f);
  EXPECT_TRUE(find_in_stores("hf:o/r", roots()).found.empty());
}

TEST_F(ModelStores, LmStudioRepositoryQuantAndFile) {
  const fs::path q8 =
      stores_.lmstudio_download("lmstudio-community", "Tiny-GGUF", "Tiny-Q8_0.gguf", qwen_);
  const fs::path f16 =
      stores_.lmstudio_download("lmstudio-community", "Tiny-GGUF", "Tiny-F16.gguf", llama_);
  const StoreRoots r = roots();
  EXPECT_EQ(r.lmstudio, stores_.lmstudio_root());
  EXPECT_EQ(resolve("lmstudio-community/Tiny-GGUF/Tiny-F16.gguf", r), f16);
  EXPECT_EQ(resolve("lmstudio-community/Tiny-GGUF:f16", r), f16);
  EXPECT_EQ(resolve("lmstudio-community/Tiny-GGUF", r), q8);  // no Q4_K_M: Q8_0
  EXPECT_EQ(resolve("lmstudio:lmstudio-community/Tiny-GGUF", r), q8);

  // A home LM Studio moved, as ~/.lmstudio-home-pointer says.
  const fs::path moved = tmp_.path() / "lms";
  fs::rename(home() / ".lmstudio", moved);
  write_text(home() / ".lmstudio-home-pointer", moved.string());
  EXPECT_EQ(roots().lmstudio, moved / "models");
  EXPECT_EQ(resolve("lmstudio-community/Tiny-GGUF:F16", roots()),
            moved / "models" / "lmstudio-community" / "Tiny-GGUF" / "Tiny-F16.gguf");
}

TEST_F(ModelStores, LlamaCppManifestsAndFileNames) {
  const fs::path q8 =
      stores_.llamacpp_download("ggml-org", "Tiny-GGUF", "Q8_0", "tiny-q8_0.gguf", qwen_);
  const fs::path latest =
      stores_.llamacpp_download("ggml-org", "Tiny-GGUF", "latest", "sub/tiny-q4_k_m.gguf", llama_);
  EXPECT_EQ(q8.filename(), "ggml-org_Tiny-GGUF_tiny-q8_0.gguf");
  EXPECT_EQ(latest.filename(), "ggml-org_Tiny-GGUF_sub_tiny-q4_k_m.gguf");
  const StoreRoots r = roots();
  EXPECT_EQ(r.llamacpp, stores_.llamacpp_root());
  EXPECT_EQ(resolve("ggml-org/Tiny-GGUF:Q8_0", r), q8);
  EXPECT_EQ(resolve("ggml-org/Tiny-GGUF", r), latest);
  EXPECT_EQ(resolve("llama.cpp:ggml-org/Tiny-GGUF", r), latest);
  EXPECT_EQ(resolve("ggml-org_Tiny-GGUF_tiny-q8_0.gguf", r), q8);
  // Without a manifest for the tag: the repository's files by their names.
  fs::remove(stores_.llamacpp_root() / "manifest=ggml-org=Tiny-GGUF=Q8_0.json");
  EXPECT_EQ(resolve("ggml-org/Tiny-GGUF:q8_0", r), q8);
  // A manifest whose file is gone is a problem.
  fs::remove(latest);
  const StoreLookup l = find_in_stores("ggml-org/Tiny-GGUF", r);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("is missing"), std::string::npos) << l.problems[0];

  EXPECT_EQ(roots({{"LLAMA_CACHE", "/l"}}).llamacpp, fs::path("/l"));
  EXPECT_EQ(roots({{"XDG_CACHE_HOME", "/x"}}).llamacpp, fs::path("/x/llama.cpp"));
}

TEST_F(ModelStores, LlamaCppCacheInTheHubLayout) {
  // Newer llama.cpp keeps $LLAMA_CACHE in the hub's layout.
  const fs::path cache = tmp_.path() / "llama-cache";
  const fs::path f = stores_.hf_download(cache, "ggml-org", "T-GGUF", kRev, "t-Q4_K_M.gguf", qwen_);
  const StoreRoots r = roots({{"LLAMA_CACHE", cache.string()}});
  EXPECT_EQ(resolve("ggml-org/T-GGUF", r), f);
  EXPECT_EQ(resolve("ggml-org/T-GGUF:Q4_K_M", r), f);
  EXPECT_EQ(resolve("ggml-org/T-GGUF/t-Q4_K_M.gguf", r), f);
}

TEST_F(ModelStores, ANameInTwoStoresIsFoundInBoth) {
  const fs::path a = stores_.lmstudio_download("org", "Tiny-GGUF", "tiny-Q8_0.gguf", qwen_);
  const fs::path b =
      stores_.llamacpp_download("org", "Tiny-GGUF", "Q8_0", "tiny-Q8_0.gguf", llama_);
  const StoreLookup l = find_in_stores("org/Tiny-GGUF:Q8_0", roots());
  ASSERT_EQ(l.found.size(), 2u);
  EXPECT_EQ(l.found[0].store, Store::LmStudio);
  EXPECT_EQ(l.found[0].path, a);
  EXPECT_EQ(l.found[1].store, Store::LlamaCpp);
  EXPECT_EQ(l.found[1].path, b);
  // Each store's prefix picks its own.
  EXPECT_EQ(resolve("lmstudio:org/Tiny-GGUF:Q8_0", roots()), a);
  EXPECT_EQ(resolve("llama.cpp:org/Tiny-GGUF:Q8_0", roots()), b);
}

TEST_F(ModelStores, ANameFoundNowhereSaysWhereItLooked) {
  fs::create_directories(stores_.ollama_root());
  const StoreLookup l = find_in_stores("nothing:here", roots());
  EXPECT_TRUE(l.found.empty());
  EXPECT_TRUE(l.problems.empty());
  ASSERT_EQ(l.looked.size(), 3u);  // hf: names only are looked for in the hub cache
  EXPECT_EQ(l.looked[0], "Ollama (" + stores_.ollama_root().string() + ")");
  EXPECT_EQ(l.looked[1], "LM Studio (" + stores_.lmstudio_root().string() + ", absent)");
  EXPECT_EQ(l.looked[2], "llama.cpp (" + stores_.llamacpp_root().string() + ", absent)");
  const StoreLookup hf = find_in_stores("hf:a/b", roots());
  ASSERT_EQ(hf.looked.size(), 1u);
  EXPECT_EQ(hf.looked[0], "Hugging Face (" + stores_.hf_root().string() + ", absent)");
}

TEST_F(ModelStores, EveryListedNameResolvesToItsFile) {
  stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "0.5b", qwen_);
  stores_.ollama_pull("hf.co", "bartowski", "Tiny-GGUF", "Q8_0", llama_);
  stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-Q4_K_M.gguf", qwen_);
  stores_.hf_download("Org", "Tiny-GGUF", kRev, "mmproj-f16.gguf", qwen3_);
  stores_.lmstudio_download("pub", "Tiny-GGUF", "tiny-Q8_0.gguf", qwen3_);
  stores_.llamacpp_download("ggml-org", "Tiny-GGUF", "Q8_0", "tiny-q8_0.gguf", qwen_);
  quip::testing_stores::place_file(llama_,
                                   stores_.llamacpp_root() / "someone_R_r.gguf");  // no manifest
  const StoreRoots r = roots();
  const std::vector<StoreModel> all = list_stores(r);
  std::vector<std::string> names;
  for (const StoreModel& m : all) {
    names.push_back(m.name);
    const StoreLookup l = find_in_stores(
        m.store == Store::HuggingFace ? m.name : std::string(store_prefix(m.store)) + ":" + m.name,
        r);
    ASSERT_EQ(l.found.size(), 1u) << m.name;
    EXPECT_EQ(l.found[0].path, m.path) << m.name;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "hf.co/bartowski/Tiny-GGUF:Q8_0", "qwen2.5:0.5b",
                "hf:Org/Tiny-GGUF/tiny-Q4_K_M.gguf",  // the projector is no model
                "pub/Tiny-GGUF/tiny-Q8_0.gguf", "ggml-org/Tiny-GGUF:Q8_0", "someone_R_r.gguf"}));
}

TEST_F(ModelStores, SplitNames) {
  const std::optional<SplitName> s = split_name("Model-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->prefix, "Model-Q4_K_M");
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  EXPECT_FALSE(split_name("Model-00004-of-00003.gguf"));
  EXPECT_FALSE(split_name("Model-0001-of-00003.gguf"));
  EXPECT_FALSE(split_name("Model.gguf"));
  EXPECT_FALSE(split_name("-00001-of-00003.gguf"));
}

TEST_F(ModelStores, OnlyTheFirstPartOfASplitIsAModel) {
  const fs::path first = stores_.hf_download("o", "r", kRev, "m-Q8_0-00001-of-00002.gguf", qwen_);
  stores_.hf_download("o", "r", kRev, "m-Q8_0-00002-of-00002.gguf", llama_);
  EXPECT_EQ(resolve("hf:o/r:Q8_0", roots()), first);
  const std::vector<StoreModel> all = list_stores(roots());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].path, first);
}

}  // namespace
}  // namespace quip::session
