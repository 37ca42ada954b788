// Saved BPE merge tables. Resolving a large vocabulary's merges is most of
// its load time (280k merges of the Llama 3 vocabulary: ~25 ms), and every
// one-shot call would pay it again; the table depends only on the file's
// metadata, so it is saved once in the cache folder and read back after.
//
// A file is keyed by a 128-bit hash of the GGUF metadata section it was built
// from (so it was validated with that exact metadata), and carries the table
// layout version, the sizes and a checksum of its slots. A file that fails
// any check is removed and the table rebuilt; writes go to a temporary file
// renamed into place, so concurrent calls never see half a file. Nothing
// here is an error to the caller: at worst the table is built again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "tokenizer/tables.h"

namespace quip::tokenizer {

struct MergeCacheKey {
  uint64_t lo = 0, hi = 0;
};

MergeCacheKey merge_cache_key(std::span<const std::byte> metadata);

// `dir`/tokenizer-merges-<key>.bin
std::filesystem::path merge_cache_path(const std::filesystem::path& dir, const MergeCacheKey& key);

// Fills `index` from the file at `path` if it is valid for this key and
// these sizes; removes the file if it exists but is not.
bool load_merge_cache(const std::filesystem::path& path, const MergeCacheKey& key, size_t n_vocab,
                      size_t n_merges, PairIndex& index);

// Writes `index` to `path` (creating its folder), or does nothing on failure.
void save_merge_cache(const std::filesystem::path& path, const MergeCacheKey& key, size_t n_vocab,
                      size_t n_merges, const PairIndex& index);

}  // namespace quip::tokenizer
