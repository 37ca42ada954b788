// Other tools' model stores, made in a temporary HOME as those tools lay them
// out on disk, with the shared tiny models as their files:
//   Ollama        ~/.ollama/models/manifests/HOST/NAMESPACE/MODEL/TAG (the
//                 manifest JSON as Ollama writes it) and blobs/sha256-HEX
//   Hugging Face  ~/.cache/huggingface/hub/models--ORG--REPO/{refs/main,
//                 blobs/SHA256, snapshots/REV/PATH -> ../../blobs/SHA256}
//   LM Studio     ~/.lmstudio/models/PUBLISHER/REPO/FILE.gguf
//   llama.cpp     ~/.cache/llama.cpp/ORG_REPO_FILE.gguf, its .etag and
//                 manifest=ORG=REPO=TAG.json (the hub's answer it keeps)
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::testing_stores {

namespace fs = std::filesystem;

inline fs::path shared_model(const std::string& file) {
  return quip::testing::shared_dir() / "models" / file;
}

// The SHA-256 of a file, as 64 hex digits (the name of its blob in the
// Ollama and Hugging Face stores).
inline std::string sha256_of(const fs::path& p) {
  const quip::testing::RunResult r = quip::testing::run_command({"/usr/bin/sha256sum", p.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out.substr(0, 64);
}

inline void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << p;
}

// A copy of `from` at `to`, writable by its owner (the shared files are
// read-only); a blob already there is the same content.
inline void place_file(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  if (fs::exists(to)) fs::remove(to);
  fs::copy_file(from, to);
  fs::permissions(to, fs::perms::owner_write, fs::perm_options::add);
}

class FakeStores {
 public:
  explicit FakeStores(fs::path home) : home_(std::move(home)) {}

  fs::path ollama_root() const { return home_ / ".ollama" / "models"; }
  fs::path hf_root() const { return home_ / ".cache" / "huggingface" / "hub"; }
  fs::path lmstudio_root() const { return home_ / ".lmstudio" / "models"; }
  fs::path llamacpp_root() const { return home_ / ".cache" / "llama.cpp"; }

  // `ollama pull HOST/NAMESPACE/MODEL:TAG` of `gguf`; returns the model blob.
  fs::path ollama_pull(const std::string& host, const std::string& ns, const std::string& model,
                       const std::string& tag, const fs::path& gguf) const {
    const fs::path root = ollama_root();
    const std::string model_sha = sha256_of(gguf);
    const fs::path blob = root / "blobs" / ("sha256-" + model_sha);
    place_file(gguf, blob);
    const std::string config = R"({"model_format":"gguf","model_family":"qwen2",)"
                               R"("model_families":["qwen2"],"model_type":"494.03M",)"
                               R"("file_type":"F16","architecture":"amd64","os":"linux",)"
                               R"("rootfs":{"type":"layers","diff_ids":["sha256:)" +
                               model_sha + R"("]}})";
    const fs::path config_file = root / "blobs" / "config.tmp";
    write_text(config_file, config);
    const std::string config_sha = sha256_of(config_file);
    fs::rename(config_file, root / "blobs" / ("sha256-" + config_sha));
    const std::string manifest =
        R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
        R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
        config_sha + R"(","size":)" + std::to_string(config.size()) +
        R"(},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
        model_sha + R"(","size":)" + std::to_string(fs::file_size(gguf)) + "}]}";
    write_text(root / "manifests" / host / ns / model / tag, manifest);
    return blob;
  }

  fs::path ollama_manifest(const std::string& host, const std::string& ns, const std::string& model,
                           const std::string& tag) const {
    return ollama_root() / "manifests" / host / ns / model / tag;
  }

  // What huggingface_hub's hf_hub_download leaves of ORG/REPO's `path` at
  // revision `rev` (refs/main names it when `main`); returns the snapshot's
  // link.
  fs::path hf_download(const fs::path& root, const std::string& org, const std::string& repo,
                       const std::string& rev, const std::string& path, const fs::path& gguf,
                       bool main = true) const {
    const fs::path dir = root / ("models--" + org + "--" + repo);
    const std::string sha = sha256_of(gguf);
    place_file(gguf, dir / "blobs" / sha);
    if (main) write_text(dir / "refs" / "main", rev);  // no newline, as the hub writes it
    const fs::path link = dir / "snapshots" / rev / path;
    fs::create_directories(link.parent_path());
    fs::path target = "../..";
    for (size_t depth = std::count(path.begin(), path.end(), '/'); depth > 0; --depth) {
      target = ".." / target;
    }
    fs::create_symlink(target / "blobs" / sha, link);
    return link;
  }
  fs::path hf_download(const std::string& org, const std::string& repo, const std::string& rev,
                       const std::string& path, const fs::path& gguf) const {
    return hf_download(hf_root(), org, repo, rev, path, gguf);
  }

  // LM Studio's download of PUBLISHER/REPO's FILE.
  fs::path lmstudio_download(const std::string& publisher, const std::string& repo,
                             const std::string& file, const fs::path& gguf) const {
    const fs::path to = lmstudio_root() / publisher / repo / file;
    place_file(gguf, to);
    return to;
  }

  // `llama-cli -hf ORG/REPO:TAG` of `file` (before llama.cpp moved to the
  // hub layout): the file, its etag and the manifest the hub answered.
  fs::path llamacpp_download(const std::string& org, const std::string& repo,
                             const std::string& tag, const std::string& file,
                             const fs::path& gguf) const {
    std::string local = org + "_" + repo + "_" + file;
    std::replace(local.begin(), local.end(), '/', '_');
    const fs::path to = llamacpp_root() / local;
    place_file(gguf, to);
    const std::string sha = sha256_of(gguf);
    write_text(fs::path(to.string() + ".etag"), "\"" + sha + "\"");
    const std::string size = std::to_string(fs::file_size(gguf));
    write_text(llamacpp_root() / ("manifest=" + org + "=" + repo + "=" + tag + ".json"),
               R"({"ggufFile":{"rfilename":")" + file +
                   R"(","blobId":"0123456789abcdef0123456789abcdef01234567","size":)" + size +
                   R"(,"lfs":{"sha256":")" + sha + R"(","size":)" + size +
                   R"(,"pointerSize":135}}})");
    return to;
  }

 private:
  fs::path home_;
};

}  // namespace quip::testing_stores
