#include "gguf/fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <xxhash.h>

#include "base/check.h"

namespace quip::gguf {

namespace {

// Hashes a file's header, metadata and tensor table, its size and samples of
// its tensor data: where the samples are is a function of its size alone,
// so the same file always gives the same fingerprint.
void hash_file(XXH3_state_t* state, const GgufFile& file) {
  constexpr uint64_t kSamples = 16, kSampleBytes = 256;
  const std::span<const std::byte> bytes = file.bytes();
  const uint64_t data_offset = std::min<uint64_t>(file.data_offset(), bytes.size());
  XXH3_64bits_update(state, bytes.data(), data_offset);
  const uint64_t size = bytes.size();
  XXH3_64bits_update(state, &size, sizeof size);
  const uint64_t data_bytes = size - data_offset;
  if (data_bytes > 0) {
    for (uint64_t i = 0; i < kSamples; ++i) {
      const uint64_t at = data_offset + (data_bytes - 1) * i / (kSamples - 1);
      const uint64_t n = std::min(kSampleBytes, size - at);
      XXH3_64bits_update(state, bytes.data() + at, n);
    }
  }
}

}  // namespace

std::string fingerprint(const GgufFile& file) {
  XXH3_state_t* state = XXH3_createState();
  CHECK(state != nullptr);
  XXH3_64bits_reset(state);
  hash_file(state, file);
  // The other parts of a split model (none for a whole file, whose
  // fingerprint is then what it always was).
  for (const GgufFile& part : file.parts()) hash_file(state, part);
  const XXH64_hash_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace quip::gguf
