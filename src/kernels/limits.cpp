#include "kernels/limits.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "base/big_alloc.h"
#include "kernels/dot_x86.h"

namespace quip::kernels {

uint64_t sum_words(std::span<const uint64_t> words) {
  // Eight independent sums, so the loop is bound by loads, not by one
  // chain of additions.
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= words.size(); i += 8) {
    // Two kilobytes ahead, as the kernels prefetch their next rows: the
    // hardware prefetcher alone streams slower than they read.
    __builtin_prefetch(words.data() + i + 256);
    for (size_t j = 0; j < 8; ++j) s[j] += words[i + j];
  }
  for (; i < words.size(); ++i) s[0] += words[i];
  uint64_t total = 0;
  for (uint64_t v : s) total += v;
  return total;
}

size_t bandwidth_buffer_bytes() {
  const long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  const size_t last = static_cast<size_t>(std::max({l3, l2, 0L}));
  return std::max(size_t{256} << 20, 2 * last);
}

double read_bandwidth(ThreadPool& pool, size_t bytes, int sweeps) {
  std::vector<uint64_t, BigAllocator<uint64_t>> buffer(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = i;
  std::atomic<uint64_t> sink{0};
  double best = 0;
  for (int s = 0; s < sweeps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(buffer.size(), [&](size_t begin, size_t end) {
      sink.fetch_add(sum_words({buffer.data() + begin, end - begin}), std::memory_order_relaxed);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(buffer.size() * sizeof(uint64_t)) / seconds);
  }
  return best;
}

double int8_peak(Isa isa, ThreadPool& pool, int tries) {
  uint64_t (*rounds_fn)(uint64_t) = nullptr;
  uint64_t per_round = 0;
  if (isa == Isa::Avx512) {
    rounds_fn = avx512::int8_madd_rounds;
    per_round = avx512::int8_madds_per_round();
  } else if (isa == Isa::Avx2) {
    rounds_fn = avx2::int8_madd_rounds;
    per_round = avx2::int8_madds_per_round();
  }
  if (rounds_fn == nullptr || per_round == 0) return 0;
  // About 2^31 multiply-adds per thread: some 20 ms at this decade's rates.
  const uint64_t rounds = (uint64_t{1} << 31) / per_round;
  const auto threads = static_cast<size_t>(pool.size());
  std::atomic<uint64_t> sink{0};
  double best = 0;
  for (int t = 0; t < tries; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(threads, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        sink.fetch_add(rounds_fn(rounds), std::memory_order_relaxed);
      }
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(rounds * per_round * threads) / seconds);
  }
  return best;
}

}  // namespace quip::kernels
