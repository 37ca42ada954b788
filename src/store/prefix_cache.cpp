#include "store/prefix_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "base/checked.h"
#include "base/file_io.h"

namespace quip::store {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'Q', 'U', 'I', 'P', '-', 'K', 'V', '\0'};
// 2: a segment may end with the logits after its last position. Files of
// version 1 are not used (so every prompt-end segment in use can carry its
// logits): a sound one is removed quietly, anything else with a warning.
constexpr uint32_t kFormatVersion = 2;
// The KV type: half-precision key and value rows, or key rows alone (latent
// attention, whose values are the first part of its keys), or key and
// value rows followed by a snapshot of the recurrent layers' state after
// the segment's last position (a hybrid model's segment that has one;
// its others are of the first type).
constexpr uint32_t kKvF16 = 1;
constexpr uint32_t kKvF16KeysOnly = 2;
constexpr uint32_t kKvF16WithState = 3;

uint32_t kv_type_of(const KvShape& shape, bool with_state = false) {
  return with_state ? kKvF16WithState : shape.values_in_keys ? kKvF16KeysOnly : kKvF16;
}

// The rows per layer and position of a KV type: 0 for an unknown one.
uint32_t rows_of(uint32_t kv_type) {
  return kv_type == kKvF16 || kv_type == kKvF16WithState ? 2 : kv_type == kKvF16KeysOnly ? 1 : 0;
}
constexpr std::string_view kSuffix = ".kv";
constexpr std::string_view kTempPrefix = "tmp-";
constexpr auto kStaleTemp = std::chrono::minutes(10);

// The fixed part of a segment file (little-endian, as written by x86-64).
// Followed by (end - begin) int32 token ids, then the rows as
// KvCache::save() writes them, then optionally the logits after position
// `end` (n_vocab float32, the model's vocabulary size): present exactly when
// the file is that much longer than its rows (and its state, with KV type
// kKvF16WithState, which comes between: KvCache::save_state's bytes, whose
// size KvShape::state_bytes gives). The checksum covers them.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t kv_type;
  char fingerprint[16];
  uint32_t n_layer;
  uint32_t row_width;
  uint64_t key;     // hash of the tokens [0, end)
  uint64_t parent;  // hash of the tokens [0, begin)
  uint32_t begin;
  uint32_t end;
  uint64_t checksum;  // XXH3 of the header before this field, then the tokens and rows
};
static_assert(sizeof(Header) == 72);
constexpr size_t kChecksummedHeader = offsetof(Header, checksum);

std::string errno_text() {
  return std::strerror(errno);
}

std::string key_name(uint64_t key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return std::string(hex) + std::string(kSuffix);
}

bool parse_key_name(const std::string& name, uint64_t& key) {
  if (name.size() != 16 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
  key = 0;
  for (size_t i = 0; i < 16; ++i) {
    const char c = name[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    key = key << 4 | static_cast<uint64_t>(d);
  }
  return true;
}

// keys[L]: the hash of the model, its variant and tokens [0, L), for L in
// [0, n]. Without a variant, the model's alone (as before variants were).
std::vector<uint64_t> prefix_keys(const KvShape& shape, std::span<const int32_t> tokens) {
  std::vector<uint64_t> keys(tokens.size() + 1);
  const std::string model =
      shape.variant.empty() ? shape.fingerprint : shape.fingerprint + "/" + shape.variant;
  keys[0] = XXH3_64bits(model.data(), model.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    keys[i + 1] = XXH3_64bits_withSeed(&tokens[i], sizeof(int32_t), keys[i]);
  }
  return keys;
}

// A segment file read whole. Gone: it does not exist (evicted meanwhile);
// Foreign: something other than a regular file has its name (a FIFO, a
// folder, a link), never opened; BadSize: larger than its place allows.
struct ReadFile {
  enum Kind { kOk, kGone, kForeign, kBadSize, kFailed } kind = kOk;
  std::string why;
  std::vector<uint8_t> bytes;
};

ReadFile read_file(const fs::path& path, size_t limit) {
  ReadFile r;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    r.kind = errno == ENOENT ? ReadFile::kGone : ReadFile::kFailed;
    r.why = errno_text();
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.kind = ReadFile::kForeign;
    r.why = "is " + std::string(file_kind_name(st.st_mode)) + ", not a cache file";
    return r;
  }
  // Opened without blocking: the name could have become a FIFO since.
  auto fd = open_regular_file(path, &st);
  if (!fd) {
    r.kind = ReadFile::kFailed;
    r.why = fd.error().message;
    return r;
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > limit) {
    r.kind = ReadFile::kBadSize;
    // Its first bytes: whether it is quip's at all.
    r.bytes.resize(sizeof kMagic);
    const ssize_t n = ::read(fd->get(), r.bytes.data(), r.bytes.size());
    r.bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return r;
  }
  make_private(fd->get());  // a file from before segments were 0600
  r.bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < r.bytes.size()) {
    const ssize_t n = ::read(fd->get(), r.bytes.data() + done, r.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.kind = ReadFile::kFailed;
      r.why = n < 0 ? errno_text() : "shorter than its size";
      return r;
    }
    done += static_cast<size_t>(n);
  }
  return r;
}

Result<void> write_file(const fs::path& path, std::span<const uint8_t> a,
                        std::span<const uint8_t> b) {
  // 0600: the rows are the user's prompts, in a form a model reads back.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Error{errno_text()};
  for (std::span<const uint8_t> part : {a, b}) {
    size_t done = 0;
    while (done < part.size()) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string e = errno_text();
        ::close(fd);
        return Error{e};
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0) return Error{errno_text()};
  return {};
}

uint64_t checksum(const Header& h, std::span<const uint8_t> payload) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &h, kChecksummedHeader);
  XXH3_64bits_update(state, payload.data(), payload.size());
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

// Whether a file's first bytes are quip's: they begin with the magic (or
// with its start, for a file cut shorter than it; an empty file too).
bool is_quips(std::span<const uint8_t> first) {
  return first.empty() ||
         std::memcmp(first.data(), kMagic, std::min(first.size(), sizeof kMagic)) == 0;
}

// A segment's file, checked against what the caller expects of it.
// The KV type in the header of the segment file at `path`, or 0 where it
// cannot be read.
uint32_t stored_kv_type(const fs::path& path) {
  auto fd = open_regular_file(path);
  if (!fd) return 0;
  Header h{};
  size_t got = 0;
  while (got < sizeof h) {
    const ssize_t n = ::read(fd->get(), reinterpret_cast<char*>(&h) + got, sizeof h - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    got += static_cast<size_t>(n);
  }
  return h.kv_type;
}

struct Segment {
  Header header;
  std::vector<uint8_t> bytes;  // the whole file
};

// The keys of the segment files in `dir` (none when it cannot be read).
std::unordered_set<uint64_t> segment_keys(const fs::path& dir) {
  std::unordered_set<uint64_t> keys;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    uint64_t key = 0;
    if (parse_key_name(it->path().filename().string(), key)) keys.insert(key);
  }
  return keys;
}

// The bytes of a segment of `h` before the logits it may keep: the header,
// the token ids, the rows, and the recurrent state where it has one.
size_t rows_size(const Header& h, size_t position_bytes, size_t state_bytes) {
  return sizeof(Header) + size_t{h.end - h.begin} * (sizeof(int32_t) + position_bytes) +
         (h.kv_type == kKvF16WithState ? state_bytes : 0);
}

// Why the header of the file named `key` cannot be the segment of `shape`
// that ends at `end` of the prefix with `keys`, or nullptr when it can.
// (Its format version is the caller's: restore() tells an older file apart.)
const char* header_mismatch(const Header& h, const KvShape& shape, uint64_t key, size_t end,
                            std::span<const uint64_t> keys) {
  if (std::string_view(h.fingerprint, sizeof h.fingerprint) != shape.fingerprint ||
      (h.kv_type != kv_type_of(shape) &&
       (shape.state_bytes == 0 || h.kv_type != kv_type_of(shape, true))) ||
      h.n_layer != shape.n_layer || h.row_width != shape.row_width) {
    return "made for another model or KV layout";
  }
  if (h.key != key || h.end != end || h.begin >= h.end || h.parent != keys[h.begin]) {
    return "its tokens are not the ones its name says";
  }
  return nullptr;
}

// Whether a prefix whose last segment is `last` may be restored where the
// model has recurrent layers (state_bytes > 0): their state is whole or
// nothing, so the segment must hold a snapshot, and where the prefix is the
// whole prompt, the logits after it (evaluating the last token again would
// run the state one token too far; a shorter prefix is evaluated instead).
bool state_allows(const Header& last, size_t state_bytes, bool whole_prompt, bool has_logits) {
  return state_bytes == 0 || (last.kv_type == kKvF16WithState && !(whole_prompt && !has_logits));
}

}  // namespace

PrefixCache::PrefixCache(fs::path dir, KvShape shape, uint64_t max_bytes)
    : dir_(std::move(dir)), shape_(std::move(shape)), max_bytes_(max_bytes) {}

fs::path PrefixCache::model_dir() const {
  return dir_ / shape_.fingerprint;
}

size_t PrefixCache::restore(std::span<const int32_t> tokens, engine::KvCache& cache,
                            std::vector<std::string>& warnings, std::vector<float>* logits) {
  CHECK(cache.size() == 0);
  if (logits != nullptr) logits->clear();
  if (tokens.empty()) return 0;
  const size_t logits_bytes = size_t{shape_.n_vocab} * sizeof(float);
  std::unordered_set<uint64_t> present = segment_keys(model_dir());
  if (present.empty()) return 0;
  const std::vector<uint64_t> keys = prefix_keys(shape_, tokens);
  const size_t position_bytes = cache.position_bytes();
  const size_t state_bytes = shape_.state_bytes;
  CHECK(state_bytes == cache.state_bytes());

  // An unusable file: one warning, and it goes.
  const auto discard = [&](uint64_t key, const std::string& why) {
    const fs::path path = model_dir() / key_name(key);
    warnings.push_back("prefix cache: ignoring " + path.string() + ": " + why);
    std::error_code rm;
    fs::remove(path, rm);
    present.erase(key);
  };
  // Something with a segment's name that quip did not write (a FIFO, a
  // file in another format): one warning, never used, and left for its
  // owner (quip removes only files it can tell are its own).
  const auto ignore = [&](uint64_t key, const std::string& why) {
    warnings.push_back("prefix cache: ignoring " + (model_dir() / key_name(key)).string() + ": " +
                       why);
    present.erase(key);
  };
  // Reads and checks the segment ending at `end`; nullopt (after discarding
  // it when it is broken) when it cannot be used.
  const auto load = [&](size_t end) -> std::optional<Segment> {
    const uint64_t key = keys[end];
    const uint64_t limit =
        sizeof(Header) + end * (sizeof(int32_t) + position_bytes) + state_bytes + logits_bytes;
    ReadFile file = read_file(model_dir() / key_name(key), limit);
    switch (file.kind) {
      case ReadFile::kOk: break;
      case ReadFile::kGone: present.erase(key); return std::nullopt;  // evicted meanwhile
      case ReadFile::kBadSize:
        if (is_quips(file.bytes)) {
          discard(key, "its size does not fit its place");
        } else {
          ignore(key, "not a quip cache file");
        }
        return std::nullopt;
      case ReadFile::kForeign:
      case ReadFile::kFailed: ignore(key, file.why); return std::nullopt;
    }
    std::vector<uint8_t>* bytes = &file.bytes;
    if (!is_quips(*bytes)) {
      ignore(key, "not a quip cache file");
      return std::nullopt;
    }
    Segment s;
    if (bytes->size() < sizeof(Header)) {
      discard(key, bytes->empty() ? "zero-length" : "truncated");
      return std::nullopt;
    }
    std::memcpy(&s.header, bytes->data(), sizeof(Header));
    const Header& h = s.header;
    if (h.version != kFormatVersion) {
      const std::span<const uint8_t> rest(bytes->data() + sizeof(Header),
                                          bytes->size() - sizeof(Header));
      if (h.version < kFormatVersion && checksum(h, rest) == h.checksum) {
        // An older quip's sound file: out of date, not broken. It goes
        // without a warning (the call computes and stores it anew), so an
        // upgrade does not fill stderr.
        std::error_code rm;
        fs::remove(model_dir() / key_name(key), rm);
        present.erase(key);
      } else {
        discard(key, "format version " + std::to_string(h.version) + ", expected " +
                         std::to_string(kFormatVersion));
      }
      return std::nullopt;
    }
    if (const char* why = header_mismatch(h, shape_, key, end, keys)) {
      discard(key, why);
      return std::nullopt;
    }
    const size_t n = h.end - h.begin;
    const size_t plain = rows_size(h, position_bytes, state_bytes);
    if (bytes->size() != plain && (logits_bytes == 0 || bytes->size() != plain + logits_bytes)) {
      discard(key, "truncated or padded");
      return std::nullopt;
    }
    if (std::memcmp(bytes->data() + sizeof(Header), tokens.data() + h.begin, n * sizeof(int32_t)) !=
        0) {
      discard(key, "its tokens are not the ones its name says");
      return std::nullopt;
    }
    const std::span<const uint8_t> payload(bytes->data() + sizeof(Header),
                                           bytes->size() - sizeof(Header));
    if (checksum(h, payload) != h.checksum) {
      discard(key, "checksum mismatch");
      return std::nullopt;
    }
    s.bytes = std::move(*bytes);
    return s;
  };

  // Longest first: follow each candidate's chain of parents down to 0.
  for (size_t end = tokens.size(); end > 0; --end) {
    if (!present.count(keys[end])) continue;
    std::vector<Segment> chain;
    size_t at = end;
    bool stateless = false;
    while (at > 0 && present.count(keys[at])) {
      std::optional<Segment> s = load(at);
      if (!s) break;
      at = s->header.begin;
      chain.push_back(std::move(*s));
      const Segment& first = chain.front();
      const bool has_logits =
          logits_bytes > 0 &&
          first.bytes.size() == rows_size(first.header, position_bytes, state_bytes) + logits_bytes;
      if (chain.size() == 1 && !state_allows(first.header, state_bytes, end == tokens.size(),
                                             logits != nullptr && has_logits)) {
        stateless = true;
        break;
      }
    }
    // A link is missing (or the state): try a shorter prefix.
    if (at != 0 || stateless) continue;
    cache.reserve(end);  // once, not once per segment
    // The logits after `end`, when its segment (the first of the chain) has
    // them; and the recurrent state there.
    const Segment& last = chain.front();
    const size_t last_n = last.header.end - last.header.begin;
    const size_t rows_end = sizeof(Header) + last_n * (sizeof(int32_t) + position_bytes);
    const size_t plain = rows_size(last.header, position_bytes, state_bytes);
    if (logits != nullptr && logits_bytes > 0 && last.bytes.size() == plain + logits_bytes) {
      logits->resize(shape_.n_vocab);
      std::memcpy(logits->data(), last.bytes.data() + plain, logits_bytes);
    }
    if (state_bytes != 0) {
      CHECK(cache.restore_state({last.bytes.data() + rows_end, state_bytes}).ok());
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Header& h = it->header;
      const size_t n = h.end - h.begin;
      const std::span<const uint8_t> rows(it->bytes.data() + sizeof(Header) + n * sizeof(int32_t),
                                          n * position_bytes);
      CHECK(cache.restore(rows, n).ok());
      // Recently used: the last to be evicted (mtime is the LRU clock).
      ::utimensat(AT_FDCWD, (model_dir() / key_name(h.key)).c_str(), nullptr, 0);
    }
    return end;
  }
  return 0;
}

PrefixCache::Found PrefixCache::find(std::span<const int32_t> tokens) const {
  Found found;
  if (tokens.empty()) return found;
  std::unordered_set<uint64_t> present = segment_keys(model_dir());
  if (present.empty()) return found;
  const std::vector<uint64_t> keys = prefix_keys(shape_, tokens);
  // KvCache::position_bytes() of the shape's rows (restore() asks the
  // cache; here there is none).
  const size_t position_bytes = size_t{shape_.n_layer} * shape_.row_width *
                                (shape_.values_in_keys ? 1 : 2) * sizeof(uint16_t);
  const size_t logits_bytes = size_t{shape_.n_vocab} * sizeof(float);
  const size_t state_bytes = shape_.state_bytes;

  // The header of the segment ending at `end` and whether it keeps the
  // logits, when restore() would use it; nullopt (and it is no candidate
  // any more) otherwise.
  struct Head {
    Header header;
    bool logits = false;
  };
  const auto head = [&](size_t end) -> std::optional<Head> {
    const uint64_t key = keys[end];
    const fs::path path = model_dir() / key_name(key);
    const auto refuse = [&]() -> std::optional<Head> {
      present.erase(key);
      return std::nullopt;
    };
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) return refuse();
    const auto size = static_cast<uint64_t>(st.st_size);
    auto fd = open_regular_file(path);
    if (!fd) return refuse();
    const auto read_at = [&](void* to, size_t n, off_t at) {
      for (size_t got = 0; got < n;) {
        const ssize_t r =
            ::pread(fd->get(), static_cast<char*>(to) + got, n - got, at + static_cast<off_t>(got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
      }
      return true;
    };
    Head out;
    Header& h = out.header;
    if (size < sizeof h || !read_at(&h, sizeof h, 0)) return refuse();
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kFormatVersion ||
        header_mismatch(h, shape_, key, end, keys) != nullptr) {
      return refuse();
    }
    const size_t n = h.end - h.begin;
    const size_t plain = rows_size(h, position_bytes, state_bytes);
    out.logits = logits_bytes > 0 && size == plain + logits_bytes;
    if (size != plain && !out.logits) return refuse();
    std::vector<int32_t> ids(n);
    if (!read_at(ids.data(), n * sizeof(int32_t), sizeof(Header)) ||
        std::memcmp(ids.data(), tokens.data() + h.begin, n * sizeof(int32_t)) != 0) {
      return refuse();
    }
    return out;
  };

  // As restore(): longest first, each candidate's chain of parents down to
  // 0, with its rules for the recurrent layers' state.
  for (size_t end = tokens.size(); end > 0; --end) {
    if (!present.count(keys[end])) continue;
    std::optional<Head> last;
    size_t at = end;
    bool stateless = false;
    while (at > 0 && present.count(keys[at])) {
      std::optional<Head> h = head(at);
      if (!h) break;
      at = h->header.begin;
      if (!last) {
        last = h;
        if (!state_allows(last->header, state_bytes, end == tokens.size(), last->logits)) {
          stateless = true;
          break;
        }
      }
    }
    if (at != 0 || stateless) continue;
    return Found{.length = end, .logits = last->logits};
  }
  return found;
}

Result<void> PrefixCache::save(std::span<const int32_t> tokens, const engine::KvCache& cache,
                               size_t from, std::span<const size_t> marks,
                               const EndLogits& end_logits, std::span<const EndState> states) {
  const size_t n = cache.size();
  CHECK(n <= tokens.size() && from <= n);
  CHECK(end_logits.logits.empty() || end_logits.logits.size() == shape_.n_vocab);
  CHECK(shape_.state_bytes == cache.state_bytes());
  if (from == n) return {};
  std::set<size_t> ends = {n};
  for (size_t b = (from / kBlock + 1) * kBlock; b < n; b += kBlock) ends.insert(b);
  for (size_t m : marks) {
    if (m > from && m < n) ends.insert(m);
  }
  // The recurrent state where it is known: the cache's own at n, and the
  // caller's snapshots.
  std::vector<uint8_t> own_state;
  std::map<size_t, std::span<const uint8_t>> state_at;
  if (cache.has_recurrent()) {
    cache.save_state(own_state);
    state_at[n] = own_state;
    for (const EndState& s : states) {
      CHECK(s.bytes.size() == shape_.state_bytes);
      if (s.end > from && s.end < n) state_at.emplace(s.end, s.bytes), ends.insert(s.end);
    }
  }
  const std::vector<uint64_t> keys = prefix_keys(shape_, tokens.first(n));
  std::error_code ec;
  // 0700, as is the cache folder above dir_ (kv's parent).
  if (auto made = make_private_dir(model_dir(), 2); !made) return made.error();

  static int counter = 0;
  size_t begin = from;
  std::vector<uint8_t> head, payload;
  for (size_t end : ends) {
    const fs::path path = model_dir() / key_name(keys[end]);
    const auto state = state_at.find(end);
    // Another call stored it; written again only to add the state that
    // this call has for it (a hybrid prefix can end only there).
    if (::access(path.c_str(), F_OK) == 0 &&
        (state == state_at.end() || stored_kv_type(path) == kKvF16WithState)) {
      begin = end;
      continue;
    }
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kFormatVersion;
    h.kv_type = kv_type_of(shape_, state != state_at.end());
    CHECK(shape_.fingerprint.size() == sizeof h.fingerprint);
    std::memcpy(h.fingerprint, shape_.fingerprint.data(), sizeof h.fingerprint);
    h.n_layer = shape_.n_layer;
    h.row_width = shape_.row_width;
    h.key = keys[end];
    h.parent = keys[begin];
    h.begin = static_cast<uint32_t>(begin);
    h.end = static_cast<uint32_t>(end);
    payload.clear();
    const auto* ids = reinterpret_cast<const uint8_t*>(tokens.data() + begin);
    payload.insert(payload.end(), ids, ids + (end - begin) * sizeof(int32_t));
    cache.save(begin, end, payload);
    if (state != state_at.end()) {
      payload.insert(payload.end(), state->second.begin(), state->second.end());
    }
    if (end == end_logits.end && !end_logits.logits.empty()) {
      const auto* f = reinterpret_cast<const uint8_t*>(end_logits.logits.data());
      payload.insert(payload.end(), f, f + end_logits.logits.size_bytes());
    }
    h.checksum = checksum(h, payload);
    head.assign(reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h + 1));

    const fs::path temp = model_dir() / (std::string(kTempPrefix) + std::to_string(getpid()) + "-" +
                                         std::to_string(counter++) + ".part");
    if (auto w = write_file(temp, head, payload); !w) {
      fs::remove(temp, ec);
      return Error{"cannot write " + temp.string() + ": " + w.error().message};
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      const std::string e = errno_text();
      fs::remove(temp, ec);
      return Error{"cannot rename " + temp.string() + ": " + e};
    }
    begin = end;
  }
  auto pruned = prune_cache(dir_, max_bytes_);
  if (!pruned) return pruned.error();
  return {};
}

namespace {

bool is_hex(std::string_view name) {
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A model folder: the 16 hex digits of gguf::fingerprint().
bool is_model_folder_name(std::string_view name) {
  return name.size() == 16 && is_hex(name);
}

bool is_temp_name(std::string_view name) {
  return name.starts_with(kTempPrefix) && name.ends_with(".part");
}

// What a segment file's first bytes and size say of it: empty when it looks
// like a whole segment; else why it is broken. `foreign` is set when it is
// not quip's at all (it does not begin with quip's magic). The checksum is
// not read: that needs the whole file, and restore() checks it anyway.
std::string segment_problem(const fs::path& path, uint64_t size, bool& foreign) {
  foreign = false;
  if (size == 0) return "zero-length";
  auto fd = open_regular_file(path);
  if (!fd) return fd.error().message;
  Header h{};
  size_t got = 0;
  while (got < sizeof h) {
    const ssize_t n = ::read(fd->get(), reinterpret_cast<char*>(&h) + got, sizeof h - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (!is_quips({reinterpret_cast<const uint8_t*>(&h), got})) {
    foreign = true;
    return "not a quip cache file";
  }
  if (got < sizeof h) return "truncated (" + std::to_string(size) + " bytes)";
  if (h.version != kFormatVersion) return "format version " + std::to_string(h.version);
  if (rows_of(h.kv_type) == 0) return "KV type " + std::to_string(h.kv_type);
  uint64_t position = 0, expected = 0;
  const bool fits = h.begin < h.end &&
                    checked_mul(uint64_t{h.n_layer} * rows_of(h.kv_type) * sizeof(uint16_t),
                                uint64_t{h.row_width}, &position) &&
                    checked_add(position, uint64_t{sizeof(int32_t)}, &position) &&
                    checked_mul(position, uint64_t{h.end - h.begin}, &expected) &&
                    checked_add(expected, uint64_t{sizeof(Header)}, &expected);
  if (!fits || size < expected) return "truncated (" + std::to_string(size) + " bytes)";
  // Past the rows, a segment may hold the logits after its end: floats
  // (their count, the vocabulary's, is not in the header; restore() checks it).
  if (size > expected && (size - expected) % sizeof(float) != 0) {
    return "longer than its rows (" + std::to_string(size) + " bytes)";
  }
  return "";
}

using Clock = std::chrono::system_clock;

struct CacheFile {
  fs::path path;
  uint64_t bytes;
  Clock::time_point time;  // last modified (restore() touches what it uses: the LRU clock)
};

// The folder's entries, sorted out. Modes of quip's own folders and files
// are repaired on the way (0700 and 0600).
struct Listing {
  std::vector<CacheFile> segments;      // named as segments (and, checked, look whole)
  std::vector<BrokenCacheFile> broken;  // quip's, unusable (only when checked)
  std::vector<CacheFile> temps;         // a writer's temporary files
  std::vector<fs::path> foreign;        // not quip's: never removed
  std::vector<fs::path> model_folders;
};

Result<Listing> list_files(const fs::path& dir, bool check) {
  Listing l;
  std::error_code ec;
  struct stat top {};
  if (::lstat(dir.c_str(), &top) != 0) {
    if (errno == ENOENT) return l;
    return Error{"cannot read " + dir.string() + ": " + errno_text()};
  }
  if (!S_ISDIR(top.st_mode)) {
    return Error{dir.string() + ": is " + std::string(file_kind_name(top.st_mode)) +
                 ", expected the cache folder"};
  }
  make_private(dir);
  for (fs::directory_iterator models(dir, ec), end; !ec && models != end; models.increment(ec)) {
    const fs::path folder = models->path();
    struct stat fst {};
    if (::lstat(folder.c_str(), &fst) != 0) continue;  // removed meanwhile
    if (!S_ISDIR(fst.st_mode) || !is_model_folder_name(folder.filename().string())) {
      l.foreign.push_back(folder);
      continue;
    }
    l.model_folders.push_back(folder);
    make_private(folder);
    std::error_code fe;
    for (fs::directory_iterator it(folder, fe); !fe && it != end; it.increment(fe)) {
      const fs::path path = it->path();
      const std::string name = path.filename().string();
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;  // removed meanwhile
      uint64_t key = 0;
      const bool segment_name = parse_key_name(name, key);
      if (!S_ISREG(st.st_mode) || (!segment_name && !is_temp_name(name))) {
        l.foreign.push_back(path);
        continue;
      }
      const auto since_epoch =
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
      const CacheFile file{
          path, static_cast<uint64_t>(st.st_size),
          Clock::time_point(std::chrono::duration_cast<Clock::duration>(since_epoch))};
      if (!segment_name) {
        l.temps.push_back(file);
        continue;
      }
      // Segments from before they were written 0600.
      if ((st.st_mode & 077) != 0 && !check) make_private(path);
      if (check) {
        bool foreign = false;
        std::string problem = segment_problem(path, file.bytes, foreign);
        if (foreign) {
          l.foreign.push_back(path);
          continue;
        }
        if ((st.st_mode & 077) != 0) make_private(path);
        if (!problem.empty()) {
          l.broken.push_back({path, file.bytes, std::move(problem)});
          continue;
        }
      }
      l.segments.push_back(file);
    }
  }
  if (ec) return Error{"cannot list " + dir.string() + ": " + ec.message()};
  return l;
}

// Removes a file of the cache; false when it could not (gone meanwhile
// counts as removed).
bool remove_file(const fs::path& path) {
  return ::unlink(path.c_str()) == 0 || errno == ENOENT;
}

// Temporary files a writer killed before its rename left behind.
void remove_stale_temps(const Listing& l) {
  const auto now = Clock::now();
  for (const CacheFile& t : l.temps) {
    if (now - t.time > kStaleTemp) remove_file(t.path);
  }
}

}  // namespace

Result<CacheStats> cache_stats(const fs::path& dir) {
  auto l = list_files(dir, /*check=*/true);
  if (!l) return l.error();
  CacheStats stats;
  stats.models = l->model_folders.size();
  stats.files = l->segments.size();
  for (const CacheFile& f : l->segments) stats.bytes += f.bytes;
  for (const BrokenCacheFile& b : l->broken) stats.bytes += b.bytes;
  stats.broken = std::move(l->broken);
  stats.foreign = l->foreign.size();
  return stats;
}

Result<uint64_t> prune_cache(const fs::path& dir, uint64_t max_bytes, bool remove_broken) {
  auto l = list_files(dir, /*check=*/remove_broken);
  if (!l) return l.error();
  remove_stale_temps(*l);
  uint64_t removed = 0;
  for (const BrokenCacheFile& b : l->broken) {
    if (remove_file(b.path)) removed += b.bytes;
  }
  std::vector<CacheFile>& files = l->segments;
  uint64_t total = 0;
  for (const CacheFile& f : files) total += f.bytes;
  if (total <= max_bytes) return removed;
  std::sort(files.begin(), files.end(),
            [](const CacheFile& a, const CacheFile& b) { return a.time < b.time; });
  for (const CacheFile& f : files) {
    if (total <= max_bytes) break;
    if (remove_file(f.path)) {  // removed, or another process did
      total -= f.bytes;
      removed += f.bytes;
    }
  }
  return removed;
}

Result<ClearReport> clear_cache(const fs::path& dir) {
  auto l = list_files(dir, /*check=*/true);
  if (!l) return l.error();
  ClearReport report;
  const auto remove = [&](const fs::path& path, uint64_t bytes) {
    if (remove_file(path)) {
      ++report.files;
      report.bytes += bytes;
    } else {
      report.failed.push_back(path);
    }
  };
  for (const CacheFile& f : l->segments) remove(f.path, f.bytes);
  for (const BrokenCacheFile& b : l->broken) remove(b.path, b.bytes);
  for (const CacheFile& t : l->temps) remove(t.path, t.bytes);
  // A model folder goes when it is empty now (rmdir fails otherwise).
  for (const fs::path& folder : l->model_folders) ::rmdir(folder.c_str());
  report.left = std::move(l->foreign);
  return report;
}

Result<uint64_t> parse_size(std::string_view text) {
  const auto bad = [&] {
    std::string m = "'";
    m.append(text);
    m.append("' is not a size (bytes, or a number with K, M, G or T: 512M, 4GiB, 10GB)");
    return Error{std::move(m)};
  };
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (!checked_mul(value, 10, &value) || !checked_add(value, uint64_t(text[i] - '0'), &value)) {
      return bad();
    }
    ++i;
  }
  if (i == 0) return bad();
  std::string_view unit = text.substr(i);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static const std::map<std::string_view, uint64_t> kUnits = {
      {"", 1},
      {"B", 1},
      {"K", uint64_t{1} << 10},
      {"KiB", uint64_t{1} << 10},
      {"KB", 1000},
      {"M", uint64_t{1} << 20},
      {"MiB", uint64_t{1} << 20},
      {"MB", 1000000},
      {"G", uint64_t{1} << 30},
      {"GiB", uint64_t{1} << 30},
      {"GB", 1000000000},
      {"T", uint64_t{1} << 40},
      {"TiB", uint64_t{1} << 40},
      {"TB", 1000000000000},
  };
  const auto it = kUnits.find(unit);
  if (it == kUnits.end()) return bad();
  if (!checked_mul(value, it->second, &value)) return bad();
  return value;
}

}  // namespace quip::store
