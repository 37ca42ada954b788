// Downloading a GGUF model from a Hugging Face hub into the Hugging Face
// cache (hf_repo.h's layout), as huggingface_hub's hf_hub_download does, so
// that its tools and llama.cpp's -hf find the files too.
//
// The steps, for a repository at the commit that the revision (main by
// default) points at:
//   1. GET ENDPOINT/api/models/ORG/REPO/revision/REVISION?blobs=true: the
//      commit (a revision that is a commit must come back as itself) and
//      every file with its size and (LFS files) SHA-256;
//   2. the file(s) the quant tag names (hf_repo.h's choose_model_files);
//   3. for each file not in the cache yet, under a lock that huggingface_hub
//      shares (.locks/models--ORG--REPO/SHA256.lock, flock): HEAD
//      ENDPOINT/ORG/REPO/resolve/COMMIT/PATH without following its redirect,
//      whose X-Linked-Etag (else ETag) and X-Linked-Size must be the
//      listing's SHA-256 and size, and whose Location is where the bytes are
//      (a CDN); GET them into blobs/SHA256.incomplete, from where an earlier
//      download stopped (a Range request) when that file exists; check the
//      SHA-256 of the whole file, then rename it to blobs/SHA256;
//   4. when every file is in blobs/: the snapshot symlinks, then
//      refs/REVISION (not for a commit), each written under a temporary name
//      and renamed into place.
// So a file is visible in snapshots/ only whole and verified, a split model
// only with all its parts, and a failure leaves at most the .incomplete
// file of the download it stopped, which the next pull resumes from:
//   - a connection cut, a full disk (ENOSPC, EDQUOT, EFBIG) or an interrupt
//     keeps it, as huggingface_hub did until version 1.x (its <etag>.incomplete,
//     opened for append);
//   - a SHA-256 mismatch removes it: its bytes are wrong, not just short.
//
// HF_TOKEN goes as "Authorization: Bearer" only to the endpoint's own origin
// (scheme, host and port): a redirect elsewhere (a CDN's signed URL) gets no
// token. No message holds the token.
// Thread safety: one pull at a time per call; libcurl's global setup is done once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "hub/hf_repo.h"

namespace quip::hub {

// HF_ENDPOINT, or https://huggingface.co when unset or empty; the trailing
// '/' removed. Error: not an http:// or https:// URL with a host, or one
// with a user name, query or fragment.
Result<std::string> endpoint_from_environment();

struct PullRequest {
  std::string endpoint;  // endpoint_from_environment()
  std::string token;     // HF_TOKEN, or the token file's; empty: none
  // Where the token came from, as errors name it: "HF_TOKEN" (also when
  // there is none: where to give one) or the file.
  std::string token_source = "HF_TOKEN";
  std::string user_agent = "quip";
  ModelRef ref;
  std::filesystem::path cache;  // hub_cache_dir()
  long connect_timeout_s = 30;
  // No byte for this long ends a transfer as stalled.
  long stall_timeout_s = 60;
};

// Where a pull is.
struct PullProgress {
  std::string file;       // the repository path being downloaded
  uint64_t done = 0;      // bytes of the chosen files in place, resumed ones included
  uint64_t total = 0;     // bytes of the chosen files
  uint64_t at_start = 0;  // `done` when this run started (already there or resumed)
};

struct PullHandlers {
  // Called while files download, at least every second and after each
  // piece; false stops the pull as interrupted. Null: never.
  std::function<bool(const PullProgress&)> on_progress;
  // Asked at least every second while waiting for the hub's answers (the
  // listing, a file's metadata) or for another process's download of the
  // same file; false stops the pull as interrupted. Null: never.
  std::function<bool()> keep_going;
};

struct PullResult {
  std::vector<RepoFile> files;  // the model's file(s), the first part first
  std::string commit;
  std::filesystem::path path;  // snapshots/COMMIT/FIRST-FILE: the path to load
  uint64_t received = 0;       // bytes downloaded by this run
  bool interrupted = false;    // stopped by on_progress; nothing made visible
};

// Pulls request.ref. Errors are one line each, without the "hf:ORG/REPO"
// that the caller puts in front: "no such repository on ENDPOINT", "FILE:
// no such file on ENDPOINT", an HTTP 401 or 403 (naming HF_TOKEN: set it,
// or the one set was refused), the quant tag matching nothing (with the
// tags there are), "FILE: SHA-256 mismatch ...", "FILE: cannot write ...:
// No space left on device ...", a connection that failed or was cut
// (saying that the next pull resumes).
Result<PullResult> pull(const PullRequest& request, const PullHandlers& handlers);

}  // namespace quip::hub
