// The GGUF files other tools already keep, found by the names those tools
// give them, so that `quip -m NAME` reads them in place (no copy):
//
//   Ollama        [HOST/][NAMESPACE/]MODEL[:TAG]: manifests/HOST/NAMESPACE/MODEL/TAG
//                 (registry.ollama.ai, library and latest by default), a JSON
//                 manifest whose layer of mediaType
//                 application/vnd.ollama.image.model names the blob
//                 blobs/sha256-HEX by its digest "sha256:HEX".
//   Hugging Face  hf:ORG/REPO[@REVISION][:QUANT] or hf:ORG/REPO/PATH.gguf in
//                 the hub cache: models--ORG--REPO/refs/main (refs/REVISION)
//                 holds the commit, snapshots/COMMIT/PATH are the files
//                 (links into ../../blobs); a REVISION that is a commit is
//                 its snapshot's name.
//   LM Studio     PUBLISHER/REPO[:QUANT] or PUBLISHER/REPO/FILE.gguf under
//                 its models folder: models/PUBLISHER/REPO/FILE.gguf.
//   llama.cpp     ORG/REPO[:TAG] as `llama-cli -hf` downloaded it: the flat
//                 cache holds manifest=ORG=REPO=TAG.json, whose
//                 ggufFile.rfilename names the file ORG_REPO_RFILENAME (each
//                 '/' as '_'); a file's own name (ORG_REPO_FILE.gguf) names
//                 it too. A cache in the hub layout (newer llama.cpp with
//                 $LLAMA_CACHE) answers ORG/REPO[:QUANT] and ORG/REPO/PATH.gguf.
//
// A QUANT (or a llama.cpp TAG without a manifest) picks a file as llama.cpp
// does: the first file, in name order, whose path holds the quant followed
// by '.' or '-', ignoring case; without one, Q4_K_M, then Q8_0, then the
// first model file. Projector, imatrix and draft files (mmproj, imatrix,
// mtp-, eagle3-, dflash-, dspark-) are never models, and of a split
// (NAME-00001-of-00003.gguf) only the first part names the model.
//
// A name may carry its store as a prefix (ollama:, hf:, lmstudio:,
// llama.cpp:) to look in that store alone; Hugging Face names always do.
// These functions read folders and small files only, never a model.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::session {

enum class Store { Ollama, HuggingFace, LmStudio, LlamaCpp };
inline constexpr Store kStores[] = {Store::Ollama, Store::HuggingFace, Store::LmStudio,
                                    Store::LlamaCpp};

// "Ollama", "Hugging Face", "LM Studio", "llama.cpp".
std::string_view store_title(Store s);
// The prefix that restricts a name to the store: "ollama", "hf", "lmstudio", "llama.cpp".
std::string_view store_prefix(Store s);

// Where each store keeps its files. Empty: the store has no folder here.
struct StoreRoots {
  std::filesystem::path ollama;       // the models folder (manifests/, blobs/)
  std::filesystem::path huggingface;  // the hub cache (models--ORG--REPO/)
  std::filesystem::path lmstudio;     // the models folder (PUBLISHER/REPO/)
  std::filesystem::path llamacpp;     // the cache folder

  const std::filesystem::path& of(Store s) const;
};

// A variable of the environment, or nullopt when unset or empty.
using GetEnv = std::function<std::optional<std::string>(const char* name)>;

// The stores' folders from the environment, as each tool finds its own:
//   Ollama        $OLLAMA_MODELS, else ~/.ollama/models when it exists,
//                 else `ollama_system` (where the Linux service keeps them)
//   Hugging Face  $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
//                 $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub
//   LM Studio     the folder ~/.lmstudio-home-pointer names, else ~/.lmstudio;
//                 its models/ folder
//   llama.cpp     $LLAMA_CACHE, $XDG_CACHE_HOME/llama.cpp, ~/.cache/llama.cpp
// (~ is $HOME; without it, folders under it are left empty).
StoreRoots store_roots(const GetEnv& env, const std::filesystem::path& ollama_system =
                                              "/usr/share/ollama/.ollama/models");
// store_roots of this process's environment.
StoreRoots store_roots();

struct StoreModel {
  Store store;
  std::string name;            // the store's own name for it: "qwen2.5:0.5b"
  std::filesystem::path path;  // the GGUF file (of a split, the first part)
};

struct StoreLookup {
  std::vector<StoreModel> found;  // one per store at most, in kStores order
  // Stores where the name named something that is broken (a manifest that
  // does not parse, a blob that is missing), one line each.
  std::vector<std::string> problems;
  // Where it looked: "Ollama (/home/u/.ollama/models)", one per store asked.
  std::vector<std::string> looked;
};

// Looks `name` up in every store (or the one its prefix names).
StoreLookup find_in_stores(std::string_view name, const StoreRoots& roots);

// Every model of every store, in kStores order, each store's by name. Each
// name given resolves to its file through find_in_stores (when no other
// store has the same name). Broken entries are left out.
std::vector<StoreModel> list_stores(const StoreRoots& roots);

// The name -m takes for `m` (one of list_stores'): its store's own, or
// with the store's prefix where the plain name is another store's too.
std::string usable_name(const StoreModel& m, const StoreRoots& roots);

// The SHA-256 (64 hex digits) of the blob an Ollama manifest's model layer
// names. Errors say what the manifest lacks.
Result<std::string> ollama_model_digest(std::string_view manifest);

// The file of the repository that a llama.cpp manifest names (its
// ggufFile.rfilename), a relative path that stays inside the repository.
Result<std::string> llamacpp_manifest_file(std::string_view manifest);

// The parts of a split file name "PREFIX-00001-of-00003.gguf", or nullopt.
struct SplitName {
  std::string prefix;
  int index = 0, count = 0;
};
std::optional<SplitName> split_name(std::string_view file_name);

}  // namespace quip::session
