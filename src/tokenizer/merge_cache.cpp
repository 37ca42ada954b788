#include "tokenizer/merge_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/file_io.h"

namespace quip::tokenizer {

namespace {

constexpr char kMagic[8] = {'Q', 'U', 'I', 'P', 'M', 'R', 'G', 'E'};

struct Header {
  char magic[8];
  uint32_t layout_version;
  uint32_t header_bytes;
  uint64_t key_lo, key_hi;
  uint64_t n_vocab, n_merges, n_slots;
  uint64_t checksum;  // XXH3-64 of the slots
};
static_assert(sizeof(Header) == 64);

bool read_all(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

MergeCacheKey merge_cache_key(std::span<const std::byte> metadata) {
  const XXH128_hash_t h = XXH3_128bits(metadata.data(), metadata.size());
  return {h.low64, h.high64};
}

std::filesystem::path merge_cache_path(const std::filesystem::path& dir, const MergeCacheKey& key) {
  char name[64];
  std::snprintf(name, sizeof name, "tokenizer-merges-%016" PRIx64 "%016" PRIx64 ".bin", key.hi,
                key.lo);
  return dir / name;
}

bool load_merge_cache(const std::filesystem::path& path, const MergeCacheKey& key, size_t n_vocab,
                      size_t n_merges, PairIndex& index) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;  // not saved yet
  if (!S_ISREG(st.st_mode)) return false;  // not ours (a FIFO would block): replaced by the save
  auto opened = open_regular_file(path, &st);
  if (!opened) return false;
  const int fd = opened->get();
  make_private(fd);  // 0600, as save writes it (an older quip's may be looser)
  Header h{};
  bool ok = read_all(fd, &h, sizeof h) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            h.layout_version == PairIndex::kLayoutVersion && h.header_bytes == sizeof h &&
            h.key_lo == key.lo && h.key_hi == key.hi && h.n_vocab == n_vocab &&
            h.n_merges == n_merges && h.n_slots > 0 && h.n_slots < (uint64_t{1} << 40) &&
            static_cast<uint64_t>(st.st_size) == sizeof h + h.n_slots * sizeof(uint64_t);
  if (ok) {
    BigVector<uint64_t> slots(h.n_slots);
    ok = read_all(fd, slots.data(), slots.size() * sizeof(uint64_t)) &&
         XXH3_64bits(slots.data(), slots.size() * sizeof(uint64_t)) == h.checksum &&
         index.adopt(std::move(slots), n_vocab, n_merges);
  }
  if (!ok) ::unlink(path.c_str());  // truncated, corrupt or foreign: rebuilt and saved anew
  return ok;
}

void save_merge_cache(const std::filesystem::path& path, const MergeCacheKey& key, size_t n_vocab,
                      size_t n_merges, const PairIndex& index) {
  if (!make_private_dir(path.parent_path())) return;  // the cache folder: 0700
  std::string tmp = path.string() + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return;
  const std::span<const uint64_t> slots = index.slots();
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.layout_version = PairIndex::kLayoutVersion;
  h.header_bytes = sizeof h;
  h.key_lo = key.lo;
  h.key_hi = key.hi;
  h.n_vocab = n_vocab;
  h.n_merges = n_merges;
  h.n_slots = slots.size();
  h.checksum = XXH3_64bits(slots.data(), slots.size_bytes());
  const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, slots.data(), slots.size_bytes());
  if (::close(fd) != 0 || !ok || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace quip::tokenizer
