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
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_range(int index) {
  const auto k = static_cast<size_t>(size());
  const auto i = static_cast<size_t>(index);
  const size_t begin = i * n_ / k, end = (i + 1) * n_ / k;
  if (begin < end) (*fn_)(begin, end);
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_range(index);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (workers_.empty() || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  run_range(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
}

}  // namespace quip::kernels
