// libFuzzer target: a prefix cache whose segment files hold any bytes
// never crashes and never restores a row (or a recurrent state) that
// differs from what was saved.
//
// Each run saves a known 100-position sequence (two segments: [0, 64) and
// [64, 100)), then overwrites one of its files with a variant chosen by the
// input, and restores. The sequence is of a plain model, or of a hybrid
// one (recurrent layers beside one with rows), whose second segment then
// carries the state after 100 positions and whose first none, so that
// only all 100 positions may be restored. The first input byte picks the
// model, the file and the mode:
// the rest of the input is either the whole new file, or edits to the real
// file (XOR a byte at an offset, then an optional truncation), which reach
// past the header checks into the tokens, rows and checksum.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "edits.h"
#include "engine/kv_cache.h"
#include "store/prefix_cache.h"

namespace fs = std::filesystem;
using quip::engine::KvCache;
using quip::store::PrefixCache;

namespace {

constexpr uint32_t kLayers = 2, kRowWidth = 8;
constexpr size_t kPositions = 100;
// The hybrid model: layers 0 and 2 recurrent, layer 1 with rows.
constexpr quip::engine::RecurrentShape kRecurrent{.conv_floats = 6, .state_floats = 10};

KvCache empty_cache(bool hybrid) {
  return hybrid ? KvCache(3, kRowWidth, false, {1, 0, 1}, kRecurrent) : KvCache(kLayers, kRowWidth);
}

struct Fixture {
  bool hybrid;
  fs::path dir;
  quip::store::KvShape shape{"0123456789abcdef", kLayers, kRowWidth, 0, ""};
  std::vector<int32_t> tokens;
  std::vector<uint8_t> rows;                // what save() wrote, positions [0, kPositions)
  std::vector<uint8_t> state;               // the hybrid's state after them
  std::vector<fs::path> files;              // sorted, so the choice is stable
  std::vector<std::vector<uint8_t>> bytes;  // their contents

  explicit Fixture(bool is_hybrid) : hybrid(is_hybrid) {
    dir = fs::temp_directory_path() /
          ("quip-fuzz-kv-" + std::to_string(getpid()) + (hybrid ? "-hybrid" : ""));
    fs::remove_all(dir);
    KvCache kv = empty_cache(hybrid);
    kv.reserve(kPositions);
    kv.grow_to(kPositions);
    for (uint32_t l = 0; l < kv.n_layer(); ++l) {
      if (hybrid && l != 1) {
        for (size_t i = 0; i < kRecurrent.conv_floats; ++i) kv.conv(l)[i] = float(i) + l;
        for (size_t i = 0; i < kRecurrent.state_floats; ++i) kv.state(l)[i] = float(i) - l;
        continue;
      }
      for (size_t i = 0; i < kPositions * kRowWidth; ++i) {
        kv.k(l)[i] = static_cast<uint16_t>(i * 7 + l);
        kv.v(l)[i] = static_cast<uint16_t>(i * 13 + l);
      }
    }
    if (hybrid) {
      shape.n_layer = kv.row_layers();
      shape.state_bytes = kv.state_bytes();
      kv.save_state(state);
    }
    for (size_t i = 0; i < kPositions; ++i) tokens.push_back(static_cast<int32_t>(i * 31 % 997));
    kv.save(0, kPositions, rows);
    PrefixCache cache(dir, shape, quip::store::kDefaultCacheBytes);
    const size_t mark = kPositions;
    if (!cache.save(tokens, kv, 0, {&mark, 1}).ok()) std::abort();
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    if (files.size() != 2) std::abort();
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      bytes.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  ~Fixture() { fs::remove_all(dir); }
};

void write(const fs::path& path, std::span<const uint8_t> bytes) {
  fs::create_directories(path.parent_path());
  quip::fuzz::write_file(path, bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture plain(false), hybrid(true);
  if (size == 0) return 0;
  Fixture& fx = (data[0] & 4) != 0 ? hybrid : plain;
  const size_t which = data[0] & 1;
  const bool whole = (data[0] & 2) != 0;
  for (size_t i = 0; i < fx.files.size(); ++i) {
    write(fx.files[i], fx.bytes[i]);  // restore() may have removed it
  }
  const std::span<const uint8_t> rest(data + 1, size - 1);
  write(fx.files[which], whole ? std::vector<uint8_t>(rest.begin(), rest.end())
                               : quip::fuzz::edited(fx.bytes[which], rest));

  PrefixCache cache(fx.dir, fx.shape, quip::store::kDefaultCacheBytes);
  KvCache kv = empty_cache(fx.hybrid);
  std::vector<std::string> warnings;
  // A follow-up's tokens: the hybrid's state after all 100 may be used.
  std::vector<int32_t> tokens = fx.tokens;
  tokens.push_back(5);
  const size_t n = cache.restore(tokens, kv, warnings);
  if (n > kPositions || kv.size() != n) std::abort();
  if (fx.hybrid) {
    // Only where a state was kept, and then that state.
    if (n != 0 && n != kPositions) std::abort();
    std::vector<uint8_t> state;
    kv.save_state(state);
    if (n == kPositions && state != fx.state) std::abort();
  }
  for (const std::string& w : warnings) {
    if (w.empty() || w.find('\n') != std::string::npos) std::abort();
  }
  // Whatever was restored is exactly what was saved.
  std::vector<uint8_t> got;
  kv.save(0, n, got);
  const uint32_t parts = 2 * kv.row_layers();
  for (uint32_t part = 0; part < parts; ++part) {  // k then v rows, per layer
    const size_t row_bytes = kRowWidth * sizeof(uint16_t);
    for (size_t p = 0; p < n; ++p) {
      const uint8_t* a = got.data() + (part * n + p) * row_bytes;
      const uint8_t* b = fx.rows.data() + (part * kPositions + p) * row_bytes;
      if (std::memcmp(a, b, row_bytes) != 0) std::abort();
    }
  }
  return 0;
}
