// The prefix cache: evaluated KV rows kept on disk, so that a call whose
// tokens start with tokens an earlier call evaluated (a continued
// conversation, a repeated system prompt, a re-run command) restores them
// and evaluates only the rest, across processes and reboots.
//
// Layout: DIR/<model fingerprint>/<key>.kv, one file per segment of a token
// sequence. A segment holds the rows of positions [begin, end) and names its
// parent, the segment ending at `begin`; keys hash the whole token prefix
// [0, end), so the files form a radix tree on disk and a follow-up stores
// only its new rows. Segments end at every multiple of kBlock positions (so
// prompts that share a long beginning share its rows) and wherever the
// caller marks (the end of a prompt, so the same prompt again is found
// whole).
//
// A segment that ends where a prompt ended may also carry the logits after
// its last position, as the call that evaluated them computed them: a later
// call whose whole prompt is in the cache uses them instead of evaluating
// the last token again, which (in other float orders than the batch that
// first evaluated it) would move the answer's distribution.
//
// Every file carries a format version, the model fingerprint, the KV type
// and shape, its token ids and a checksum of everything; a file that fails
// any check is ignored with one warning and removed, and the call computes
// normally. Files are written to a temporary name and renamed into place, so
// concurrent readers and writers never see half a file. Size is bounded:
// after each save the least recently used segments are removed until the
// whole folder fits the limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/kv_cache.h"

namespace quip::store {

inline constexpr uint64_t kDefaultCacheBytes = uint64_t{4} << 30;  // 4 GiB

// What a cache entry must match to be used.
struct KvShape {
  std::string fingerprint;  // gguf::fingerprint() of the model
  uint32_t n_layer = 0;
  uint32_t row_width = 0;  // halves per key (and value) row
  uint32_t n_vocab = 0;    // floats in a segment's logits
  // What else the rows depend on (engine::Model::kv_variant): "" for most
  // models. Entries of one variant are never found under another.
  std::string variant;
  // Key rows alone (engine::KvCache's values in the keys).
  bool values_in_keys = false;
  // The bytes of a snapshot of the recurrent layers (KvCache::state_bytes);
  // 0 without recurrent layers.
  uint64_t state_bytes = 0;
};

// The logits after the first `end` tokens of a sequence (n_vocab floats).
struct EndLogits {
  size_t end = 0;
  std::span<const float> logits;
};

// The recurrent layers' state after the first `end` tokens of a sequence
// (KvCache::save_state's bytes).
struct EndState {
  size_t end = 0;
  std::span<const uint8_t> bytes;
};

class PrefixCache {
 public:
  static constexpr size_t kBlock = 64;  // positions per segment, at most

  // `dir` is the cache's folder (cache_dir()/kv); it is created on first save.
  PrefixCache(std::filesystem::path dir, KvShape shape, uint64_t max_bytes);

  // Restores into `cache` (empty) the longest stored prefix of `tokens`, and
  // returns its length. Unusable files are removed, each adding one line to
  // `warnings`; missing ones are not an error (the result is shorter).
  // `logits`, when given, receives the logits stored after the restored
  // prefix (n_vocab floats), or is emptied when its segment has none. With
  // recurrent layers, a prefix is restored only where a segment kept their
  // state, and all of `tokens` only with its logits.
  size_t restore(std::span<const int32_t> tokens, engine::KvCache& cache,
                 std::vector<std::string>& warnings, std::vector<float>* logits = nullptr);

  // What restore() would restore for `tokens` (asked with logits), found
  // without restoring it and without changing the cache: no file is
  // removed, touched or written. Files are checked as restore() checks
  // them but for their checksums (their rows are not read), so a file
  // whose bytes rotted makes the real call restore less than this says.
  struct Found {
    size_t length = 0;    // the prefix's length
    bool logits = false;  // its segment keeps the logits after it
  };
  Found find(std::span<const int32_t> tokens) const;

  // Stores the rows of positions [from, cache.size()) of `tokens` (whose
  // first cache.size() tokens the cache holds), `from` being 0 or a length
  // restore() returned. Segments also end at each of `marks`. A segment
  // written here that ends at end_logits.end carries end_logits.logits
  // (n_vocab floats; empty: none). With recurrent layers, the segment
  // ending at cache.size() carries their state, and segments end at each
  // of `states` too, carrying theirs. Then removes the least recently used
  // files beyond the size limit.
  Result<void> save(std::span<const int32_t> tokens, const engine::KvCache& cache, size_t from,
                    std::span<const size_t> marks, const EndLogits& end_logits = {},
                    std::span<const EndState> states = {});

 private:
  std::filesystem::path model_dir() const;

  std::filesystem::path dir_;
  KvShape shape_;
  uint64_t max_bytes_;
};

// A file of the cache that quip wrote but cannot use: zero-length,
// truncated, or of another format version.
struct BrokenCacheFile {
  std::filesystem::path path;
  uint64_t bytes = 0;
  std::string problem;  // "zero-length", "truncated (12 bytes)", ...
};

struct CacheStats {
  uint64_t files = 0;   // segment files that look whole (header and size)
  uint64_t bytes = 0;   // of those and of the broken ones
  uint64_t models = 0;  // fingerprint folders
  std::vector<BrokenCacheFile> broken;
  uint64_t foreign = 0;  // entries that are not quip's (never touched)
};

// Statistics of the cache folder (all models). Each segment's header and
// size are checked (not its checksum, which restore() checks).
Result<CacheStats> cache_stats(const std::filesystem::path& dir);

// Removes least recently used segment files (and stale temporary files)
// until the folder holds at most max_bytes; with `remove_broken`, first the
// broken ones too (which needs their headers read). Returns the bytes
// removed.
Result<uint64_t> prune_cache(const std::filesystem::path& dir, uint64_t max_bytes,
                             bool remove_broken = false);

// What clear_cache did.
struct ClearReport {
  uint64_t files = 0;  // removed
  uint64_t bytes = 0;
  std::vector<std::filesystem::path> left;    // not quip's: left as they are
  std::vector<std::filesystem::path> failed;  // quip's, but could not be removed
};

// Removes quip's files from the cache folder: segments (whole or broken)
// and temporary files, by quip's names in quip's model folders, and model
// folders left empty. Anything else (another program's file, a file with a
// segment's name that is not in quip's format, a FIFO) is left and listed.
Result<ClearReport> clear_cache(const std::filesystem::path& dir);

// "4GiB", "512M", "1000000" (bytes) -> bytes; errors say what was expected.
Result<uint64_t> parse_size(std::string_view text);

}  // namespace quip::store
