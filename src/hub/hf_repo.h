// What `quip pull` knows about a Hugging Face model repository without the
// network: the "hf:ORG/REPO[@REVISION][:QUANT]" a user types, the hub's listing of a
// repository (untrusted JSON), which GGUF file a quant tag names, and where
// the Hugging Face cache keeps each file.
//
// The cache layout is the one huggingface_hub (file_download.py) and
// llama.cpp's -hf share, so each finds what the other downloaded:
//
//   HUB_CACHE/models--ORG--REPO/
//     blobs/SHA256                   the file's bytes, named by their hash
//     blobs/SHA256.incomplete        a download in progress (resumable)
//     snapshots/COMMIT/PATH          a relative symlink to ../../blobs/SHA256
//     refs/main                      COMMIT, the commit main pointed at
//     refs/REVISION                  likewise for another branch or tag
//                                    (none for a revision that is a commit)
//
// Nothing here does I/O but reading environment variables.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace quip::hub {

// "hf:ORG/REPO[@REVISION][:QUANT]" parsed.
struct ModelRef {
  std::string repo;               // "ORG/REPO"
  std::string revision = "main";  // a branch, a tag, "refs/pr/N" or a commit's 40 hex digits
  std::string tag;                // "Q8_0" as typed; empty: the default choice
};

// Errors name what is wrong: no "hf:" prefix, not ORG/REPO, a name with
// characters the hub does not allow (it allows letters, digits, '-', '_'
// and '.', with no "--" or ".." and no '-' or '.' at either end), a
// revision that is not a valid_revision, a tag that is not letters, digits
// and '_'.
Result<ModelRef> parse_model_ref(std::string_view text);

// A revision as git allows a ref's name, within what a cache folder may
// hold: letters, digits, '-', '_', '.' and '/' between non-empty parts,
// none starting with '.' or ending with ".lock", no "..", at most 200
// bytes ("v1.0", "refs/pr/3", a commit's hex digits).
bool valid_revision(std::string_view revision);

// Whether a revision names a commit itself: 40 lower-case hex digits.
bool is_commit(std::string_view revision);

// One file of a repository as the hub lists it.
struct RepoFile {
  std::string path;    // "model-Q4_K_M.gguf", "Q8_0/model-00001-of-00002.gguf"
  uint64_t size = 0;   // bytes
  std::string sha256;  // 64 lower-case hex digits for LFS files; empty otherwise
};

// A repository at one commit.
struct RepoListing {
  std::string commit;  // 40 lower-case hex digits
  std::vector<RepoFile> files;
};

// The answer of GET {endpoint}/api/models/ORG/REPO/revision/REVISION?blobs=true
// (huggingface_hub's model_info(files_metadata=True)): {"sha": COMMIT,
// "siblings": [{"rfilename": PATH, "size": N, "lfs": {"sha256": HEX,
// "size": N}}, ...]}. Errors (one line each, naming the field): not JSON,
// no commit or a malformed one, a sibling without a usable path (absolute,
// with "..", "." or empty components, a backslash or control character: it
// would land outside the snapshot), a size or hash of the wrong type or
// form, an LFS size different from the file's, the same path twice.
// Unknown fields are ignored.
Result<RepoListing> parse_model_info(std::string_view json);

// "-00001-of-00003" in "model-Q8_0-00001-of-00003.gguf".
struct SplitPart {
  int index = 1;  // 1-based
  int count = 1;
};
// Nullopt when `path` is not a split part.
std::optional<SplitPart> split_part(std::string_view path);

// The quant tag llama.cpp reads from a GGUF file name, upper-cased: the last
// run of letters, digits and '_' after a '-' or '.', split suffix and
// ".gguf" removed ("tiny-q8_0.gguf" -> "Q8_0"); empty when none.
std::string file_quant_tag(std::string_view path);

// The file(s) of the model that `tag` names, the first part first (all parts
// of a split model, in order). As llama.cpp's -hf chooses: among the .gguf
// files that are models (not mmproj, imatrix or speculative-decoding
// sidecars), the first whose name holds the tag (case-insensitive) right
// after the start or a '-', '.', '_' or '/' and right before a '.' or '-';
// with no tag, Q4_K_M, else Q8_0, else the first model file. Errors: no
// GGUF model file at all; no file for the tag (the message lists the tags
// there are); a split model with a part missing.
Result<std::vector<RepoFile>> choose_model_files(const std::vector<RepoFile>& files,
                                                 std::string_view tag);

// The cache folder: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// $HOME/.cache/huggingface/hub (huggingface_hub's constants.py; a leading
// "~/" is the home folder, as its expanduser). Empty values count as unset.
// Nullopt when none is set.
std::optional<std::filesystem::path> hub_cache_dir();

// Where `hf auth login` (huggingface_hub's login) saves the access token:
// $HF_TOKEN_PATH, else $HF_HOME/token, else
// $XDG_CACHE_HOME/huggingface/token, else $HOME/.cache/huggingface/token
// (as hub_cache_dir reads them). Nullopt when none is set.
std::optional<std::filesystem::path> hub_token_file();

// "models--ORG--REPO".
std::string repo_folder_name(std::string_view repo);

// A valid_revision as one segment of a URL's path: "refs/pr/3" as
// "refs%2Fpr%2F3", as huggingface_hub quotes it (no other character it
// allows needs escaping).
std::string revision_url_segment(std::string_view revision);

// The symlink's target for a snapshot file at `path`: "../../blobs/SHA256"
// with one more "../" per folder in `path`.
std::string snapshot_link_target(std::string_view path, std::string_view sha256);

}  // namespace quip::hub
