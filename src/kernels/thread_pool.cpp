#include "kernels/thread_pool.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "base/check.h"

namespace quip::kernels {

int physical_cores() {
  // Each logical CPU names its (package, core); hyper-threads share one.
  std::set<std::pair<int, int>> cores;
  for (int cpu = 0; cpu < 4096; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    int c = 0, p = 0;
    if (!(core >> c)) break;
    if (!(package >> p)) p = 0;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) {
  CHECK(n_threads >= 1);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  stop_ = true;
  {
    std::lock_guard lock(mutex_);
    ++generation_;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

namespace {

inline void pause() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

constexpr int kSpins = 1 << 14;  // about a millisecond of pause instructions

}  // namespace

void ThreadPool::run_range(int index) {
  const auto k = static_cast<size_t>(size());
  const auto i = static_cast<size_t>(index);
  const size_t begin = i * n_ / k, end = (i + 1) * n_ / k;
  if (begin < end) (*fn_)(begin, end);
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpins) {
      pause();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      // Sleep. sleeping_ is raised before generation_ is read again, and
      // parallel_for bumps generation_ before it reads sleeping_, so one of
      // the two sees the other (both sequentially consistent).
      std::unique_lock lock(mutex_);
      ++sleeping_;
      start_.wait(lock, [&] { return generation_.load() != seen; });
      --sleeping_;
    }
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    run_range(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (workers_.empty() || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  fn_ = &fn;
  n_ = n;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1);  // publishes fn_ and n_
  if (sleeping_.load() > 0) {
    std::lock_guard lock(mutex_);
    start_.notify_all();
  }
  run_range(0);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpins) {
      pause();
    } else {
      std::this_thread::yield();
    }
  }
  fn_ = nullptr;
}

}  // namespace quip::kernels
