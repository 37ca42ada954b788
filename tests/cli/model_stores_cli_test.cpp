// `quip -m NAME` with the names of other tools' stores, and `quip models`,
// in a temporary HOME holding those stores (fake_stores.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_home.h"
#include "cli/fake_stores.h"
#include "cli/model_names.h"
#include "gguf/writer.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;
using quip::testing::RunOptions;
using quip::testing::RunResult;
using quip::testing_stores::FakeStores;
using quip::testing_stores::shared_model;
using quip::testing_stores::write_text;

constexpr int kExitUsage = 2;
constexpr int kExitBadData = 3;
constexpr const char* kRev = "0123456789abcdef0123456789abcdef01234567";

class ModelStoresCli : public testing_home::QuipHome {
 protected:
  void SetUp() override {
    QUIP_REQUIRE_SHARED();
    qwen_ = shared_model("tiny-qwen2-e64-q8_0.gguf");
    llama_ = shared_model("tiny-llama-spm-e64-q8_0.gguf");
  }

  fs::path user_home() const { return home() / "user"; }

  // HOME is the fake one; the stores' own variables are unset.
  RunOptions store_env() const {
    RunOptions o;
    o.env = {{"HOME", user_home().string()},
             {"OLLAMA_MODELS", ""},
             {"HF_HUB_CACHE", ""},
             {"HUGGINGFACE_HUB_CACHE", ""},
             {"HF_HOME", ""},
             {"XDG_CACHE_HOME", ""},
             {"LLAMA_CACHE", ""},
             {"QUIP_NO_SERVE", "1"}};
    return o;
  }

  RunResult in_home(const std::vector<std::string>& args) const { return run(args, store_env()); }

  std::string answer(const std::string& model) const {
    const std::vector<std::string> args = {"-m", model, "--raw", "--temp", "0", "-n", "4", "hi"};
    const RunResult r = in_home(args);
    EXPECT_EQ(r.status, 0) << quip::testing::describe(args, r);
    return r.out;
  }

  fs::path qwen_, llama_;
  FakeStores stores_{user_home()};
};

TEST_F(ModelStoresCli, EachStoresNamesRunTheirFile) {
  stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "0.5b", qwen_);
  stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-Q8_0.gguf", llama_);
  stores_.lmstudio_download("pub", "Tiny-GGUF", "tiny-Q8_0.gguf", qwen_);
  stores_.llamacpp_download("ggml-org", "Tiny-GGUF", "Q8_0", "tiny-q8_0.gguf", llama_);
  const std::string qwen_answer = answer(qwen_.string());
  const std::string llama_answer = answer(llama_.string());
  ASSERT_FALSE(qwen_answer.empty());
  ASSERT_NE(qwen_answer, llama_answer);
  EXPECT_EQ(answer("qwen2.5:0.5b"), qwen_answer);
  EXPECT_EQ(answer("hf:Org/Tiny-GGUF"), llama_answer);
  EXPECT_EQ(answer("pub/Tiny-GGUF/tiny-Q8_0.gguf"), qwen_answer);
  EXPECT_EQ(answer("ggml-org/Tiny-GGUF:Q8_0"), llama_answer);

  // The commands that take a model take the names too.
  const RunResult inspect = in_home({"inspect", "qwen2.5:0.5b"});
  EXPECT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find((stores_.ollama_root() / "blobs").string()), std::string::npos);
  const RunResult tokenize = in_home({"tokenize", "-m", "hf:Org/Tiny-GGUF", "--ids", "hi"});
  EXPECT_EQ(tokenize.status, 0) << tokenize.err;
  const RunResult direct = run({"tokenize", "-m", llama_.string(), "--ids", "hi"});
  EXPECT_EQ(tokenize.out, direct.out);
  const RunResult bench =
      in_home({"bench", "-m", "pub/Tiny-GGUF:Q8_0", "-p", "4", "-n", "1", "-r", "1", "-t", "1"});
  EXPECT_EQ(bench.status, 0) << bench.err;
  write_text(home() / "messages.json", R"([{"role":"user","content":"Hi"}])");
  const RunResult rendered =
      in_home({"template", "-m", "qwen2.5:0.5b", (home() / "messages.json").string()});
  EXPECT_EQ(rendered.status, 0) << rendered.err;
  EXPECT_EQ(rendered.out,
            run_ok({"template", "-m", qwen_.string(), (home() / "messages.json").string()}));
}

// Shell completion offers the stores' models for -m, by the names -m takes.
TEST_F(ModelStoresCli, CompletionOffersTheStoresModels) {
  stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "0.5b", qwen_);
  stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-Q8_0.gguf", llama_);
  const RunResult r = in_home({"completion", "--complete", "--", "quip", "-m", ""});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("qwen2.5:0.5b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hf:Org/Tiny-GGUF"), std::string::npos) << r.out;
  // Without the stores, neither.
  fs::remove_all(user_home() / ".ollama");
  EXPECT_EQ(in_home({"completion", "--complete", "--", "quip", "-m", ""}).out.find("qwen2.5:0.5b"),
            std::string::npos);
}

// The order of resolve_model_name: an existing file, then an alias, then
// the stores; a path that does not exist stays a path.
TEST_F(ModelStoresCli, AFileComesBeforeAnAliasWhichComesBeforeTheStores) {
  stores_.ollama_pull("registry.ollama.ai", "library", "tiny", "latest", qwen_);
  const session::StoreRoots roots = session::store_roots(
      [&](const char* name) -> std::optional<std::string> {
        if (std::string_view(name) == "HOME") return user_home().string();
        return std::nullopt;
      },
      home() / "no-service");
  Config config;
  config.models["tiny:latest"] = ModelAlias{llama_, {}};
  config.models[qwen_.string()] = ModelAlias{llama_, {}};

  auto alias = resolve_model_name("tiny:latest", config, roots);
  ASSERT_TRUE(std::holds_alternative<ModelFile>(alias));
  EXPECT_EQ(std::get<ModelFile>(alias).path, llama_);
  EXPECT_EQ(std::get<ModelFile>(alias).alias, &config.models["tiny:latest"]);

  auto store = resolve_model_name("tiny", config, roots);
  ASSERT_TRUE(std::holds_alternative<ModelFile>(store));
  EXPECT_EQ(std::get<ModelFile>(store).path.filename().string().substr(0, 7), "sha256-");
  EXPECT_EQ(std::get<ModelFile>(store).alias, nullptr);

  auto file = resolve_model_name(qwen_.string(), config, roots);
  ASSERT_TRUE(std::holds_alternative<ModelFile>(file));
  EXPECT_EQ(std::get<ModelFile>(file).path, qwen_);
  EXPECT_EQ(std::get<ModelFile>(file).alias, nullptr);

  for (const std::string path : {"/no/such.gguf", "./no.gguf", "../no.gguf", "~/no.gguf"}) {
    auto r = resolve_model_name(path, config, roots);
    ASSERT_TRUE(std::holds_alternative<ModelFile>(r)) << path;
    EXPECT_EQ(std::get<ModelFile>(r).path, fs::path(path));
  }
}

TEST_F(ModelStoresCli, AnAliasComesBeforeTheStores) {
  stores_.ollama_pull("registry.ollama.ai", "library", "tiny", "latest", qwen_);
  const std::string llama_answer = answer(llama_.string());
  write_text(home() / "config" / "config.toml",
             "[models.tiny]\npath = \"" + llama_.string() + "\"\n");
  EXPECT_EQ(answer("tiny"), llama_answer);
  EXPECT_EQ(answer("tiny:latest"), answer(qwen_.string()));
}

TEST_F(ModelStoresCli, ANameInTwoStoresIsAnErrorListingBoth) {
  const fs::path a = stores_.lmstudio_download("org", "Tiny-GGUF", "tiny-Q8_0.gguf", qwen_);
  const fs::path b =
      stores_.llamacpp_download("org", "Tiny-GGUF", "Q8_0", "tiny-Q8_0.gguf", llama_);
  const RunResult r = expect_failure({"-m", "org/Tiny-GGUF:Q8_0", "--raw", "hi"}, kExitUsage,
                                     "is in 2 stores", store_env());
  EXPECT_NE(r.err.find("LM Studio (" + a.string() + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("llama.cpp (" + b.string() + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lmstudio:org/Tiny-GGUF:Q8_0 or llama.cpp:org/Tiny-GGUF:Q8_0"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(answer("llama.cpp:org/Tiny-GGUF:Q8_0"), answer(llama_.string()));
}

TEST_F(ModelStoresCli, ANameFoundNowhereSaysWhereItLooked) {
  fs::create_directories(stores_.ollama_root());
  const RunResult r = expect_failure({"-m", "qwen9:1b", "--raw", "hi"}, kExitBadData,
                                     "model 'qwen9:1b' is no file, no alias", store_env());
  EXPECT_NE(r.err.find("Ollama (" + stores_.ollama_root().string() + ")"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("LM Studio (" + stores_.lmstudio_root().string() + ", absent)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("llama.cpp (" + stores_.llamacpp_root().string() + ", absent)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hf:ORG/REPO"), std::string::npos) << r.err;
  expect_failure({"-m", "hf:Org/None", "--raw", "hi"}, kExitBadData,
                 "Hugging Face (" + stores_.hf_root().string() + ", absent)", store_env());
  expect_failure({"inspect", "qwen9:1b"}, kExitBadData, "no model in Ollama", store_env());
  // A path stays a path: its own error, as before.
  expect_failure({"-m", "/no/such.gguf", "--raw", "hi"}, kExitBadData, "/no/such.gguf",
                 store_env());
}

TEST_F(ModelStoresCli, ABrokenStoreEntryIsAnError) {
  stores_.ollama_pull("registry.ollama.ai", "library", "tiny", "latest", qwen_);
  write_text(stores_.ollama_manifest("registry.ollama.ai", "library", "tiny", "latest"), "[");
  expect_failure({"-m", "tiny", "--raw", "hi"}, kExitBadData, "the manifest is not a JSON object",
                 store_env());
}

TEST_F(ModelStoresCli, AConversationContinuesWhenTheNameIsGone) {
  const fs::path blob =
      stores_.ollama_pull("registry.ollama.ai", "library", "tiny", "latest", qwen_);
  const RunResult first = in_home({"-m", "tiny", "--raw", "--temp", "0", "-n", "2", "hi"});
  ASSERT_EQ(first.status, 0) << first.err;
  const nlohmann::json log = nlohmann::json::parse(run_ok({"log", "--json"}, store_env()));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["model_path"], blob.string());
  fs::remove(stores_.ollama_manifest("registry.ollama.ai", "library", "tiny", "latest"));
  const RunResult next = in_home({"-c", "--raw", "--temp", "0", "-n", "2", "more"});
  EXPECT_EQ(next.status, 0) << next.err;
}

// A GGUF file of an architecture quip does not run.
void write_unsupported(const fs::path& path) {
  gguf::GgufWriter w;
  w.set("general.architecture", std::string("gemma3n"));
  w.set("general.file_type", uint32_t{7});
  w.set("gemma3n.context_length", uint32_t{32768});
  w.add_tensor("token_embd.weight", 0, {4, 2}, std::vector<std::byte>(32));
  fs::create_directories(path.parent_path());
  ASSERT_TRUE(w.write(path.string()).ok());
}

TEST_F(ModelStoresCli, ModelsListsEveryStoreOnceForEachFile) {
  const fs::path blob =
      stores_.ollama_pull("registry.ollama.ai", "library", "qwen2.5", "0.5b", qwen_);
  const fs::path hf = stores_.hf_download("Org", "Tiny-GGUF", kRev, "tiny-Q8_0.gguf", qwen_);
  const fs::path lms = stores_.lmstudio_download("pub", "Llama-GGUF", "llama-Q8_0.gguf", llama_);
  const fs::path odd = user_home() / "odd.gguf";
  write_unsupported(odd);
  const fs::path gemma =
      stores_.llamacpp_download("google", "gemma-3n-GGUF", "Q8_0", "gemma-3n-Q8_0.gguf", odd);

  const auto inspect = nlohmann::json::parse(run_ok({"inspect", "--json", qwen_.string()}));
  const uint64_t context = inspect["summary"]["context_length"];
  char size[32];
  std::snprintf(size, sizeof size, "%.2f MiB",
                static_cast<double>(fs::file_size(qwen_)) / (1 << 20));
  const std::string text = run_ok({"models"}, store_env());
  const std::string expected_start =
      "qwen2.5:0.5b (Ollama)\n"
      "  file      " +
      blob.string() +
      "\n"
      "  also      hf:Org/Tiny-GGUF/tiny-Q8_0.gguf (Hugging Face): " +
      hf.string() +
      "\n"
      "  model     qwen2, ";
  EXPECT_TRUE(text.starts_with(expected_start)) << text;
  EXPECT_NE(text.find(" parameters, Q8_0, context " + std::to_string(context) +
                      ", chat template\n"
                      "  size      " +
                      size +
                      "\n"
                      "  runs      yes\n"
                      "\n"
                      "pub/Llama-GGUF/llama-Q8_0.gguf (LM Studio)\n"
                      "  file      " +
                      lms.string() + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("google/gemma-3n-GGUF:Q8_0 (llama.cpp)\n"
                      "  file      " +
                      gemma.string() +
                      "\n"
                      "  model     gemma3n, 8 parameters, Q8_0, context 32768, no chat template\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  runs      no: architecture 'gemma3n' is not supported"), std::string::npos)
      << text;

  const nlohmann::json j = nlohmann::json::parse(run_ok({"models", "--json"}, store_env()));
  ASSERT_EQ(j["stores"].size(), 4u);
  EXPECT_EQ(j["stores"][0], (nlohmann::json{{"store", "Ollama"},
                                            {"folder", stores_.ollama_root().string()},
                                            {"exists", true}}));
  const nlohmann::json& models = j["models"];
  ASSERT_EQ(models.size(), 3u) << j.dump(2);
  const nlohmann::json& q = models[0];
  EXPECT_EQ(q["name"], "qwen2.5:0.5b");
  EXPECT_EQ(q["store"], "Ollama");
  EXPECT_EQ(q["file"], blob.string());
  ASSERT_EQ(q["names"].size(), 2u);
  EXPECT_EQ(q["names"][1], (nlohmann::json{{"name", "hf:Org/Tiny-GGUF/tiny-Q8_0.gguf"},
                                           {"store", "Hugging Face"},
                                           {"file", hf.string()}}));
  EXPECT_EQ(q["size"], fs::file_size(qwen_));
  EXPECT_EQ(q["architecture"], "qwen2");
  EXPECT_EQ(q["file_type"], "Q8_0");
  EXPECT_EQ(q["context_length"], context);
  EXPECT_EQ(q["chat_template"], true);
  EXPECT_EQ(q["runs"], true);
  EXPECT_TRUE(q["why_not"].is_null());
  EXPECT_EQ(q["parameters"], inspect["summary"]["parameters"]);

  EXPECT_EQ(models[1]["name"], "pub/Llama-GGUF/llama-Q8_0.gguf");
  EXPECT_EQ(models[1]["chat_template"], false);
  EXPECT_EQ(models[2]["name"], "google/gemma-3n-GGUF:Q8_0");
  EXPECT_EQ(models[2]["runs"], false);
  EXPECT_TRUE(models[2]["why_not"].get<std::string>().starts_with(
      "architecture 'gemma3n' is not supported"))
      << models[2];
}

TEST_F(ModelStoresCli, ModelsGivesThePrefixedNameWhereTwoStoresShareOne) {
  stores_.lmstudio_download("org", "Tiny-GGUF", "tiny-Q8_0.gguf", qwen_);
  stores_.llamacpp_download("org", "Tiny-GGUF", "Q8_0", "tiny-Q8_0.gguf", llama_);
  const nlohmann::json j = nlohmann::json::parse(run_ok({"models", "--json"}, store_env()));
  ASSERT_EQ(j["models"].size(), 2u);
  // The LM Studio name is its own (the other store names it otherwise).
  EXPECT_EQ(j["models"][0]["name"], "org/Tiny-GGUF/tiny-Q8_0.gguf");
  EXPECT_EQ(j["models"][1]["name"], "llama.cpp:org/Tiny-GGUF:Q8_0");
  EXPECT_EQ(answer(j["models"][1]["name"].get<std::string>()), answer(llama_.string()));
}

TEST_F(ModelStoresCli, ModelsWithNoStoreSaysWhereItLooked) {
  const std::string text = run_ok({"models"}, store_env());
  // (Without ~/.ollama/models, Ollama's is the Linux service's folder.)
  EXPECT_TRUE(text.starts_with("No models found in:\n  Ollama: /usr/share/ollama/.ollama/models"))
      << text;
  EXPECT_NE(text.find("\n  Hugging Face: " + stores_.hf_root().string() +
                      " (absent)\n"
                      "  LM Studio: " +
                      stores_.lmstudio_root().string() +
                      " (absent)\n"
                      "  llama.cpp: " +
                      stores_.llamacpp_root().string() + " (absent)\n"),
            std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(run_ok({"models", "--json"}, store_env()));
  EXPECT_EQ(j["models"], nlohmann::json::array());
  EXPECT_EQ(j["stores"][3]["exists"], false);
}

}  // namespace
}  // namespace quip::cli
