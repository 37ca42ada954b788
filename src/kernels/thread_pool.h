// One persistent pool of threads for the kernels' parallel loops.
//
// parallel_for(n, fn) splits [0, n) into one contiguous range per thread by
// a fixed rule (thread i of k gets [i*n/k, (i+1)*n/k)), so which thread
// computes which element depends only on n and k: each output element is
// computed by one thread with the same arithmetic, whatever the timing.
// The calling thread takes range 0, so a pool of 1 runs everything inline.
//
// Workers wait for the next job spinning for about a millisecond before
// they sleep: a forward pass runs hundreds of short parallel loops per
// token, and waking a sleeping thread for each costs more than the loop.
//
// Thread safety: one parallel_for at a time per pool (the engine owns one
// pool and calls it from one thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace quip::kernels {

// Physical cores of this machine (hyper-threads counted once), at least 1.
int physical_cores();

class ThreadPool {
 public:
  // A pool of `n_threads` in all, the caller included. PRECONDITIONS: n_threads >= 1.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) for each thread's range of [0, n) (empty ranges are
  // skipped) and returns when all calls have returned.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

 private:
  void work(int index);
  void run_range(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  const std::function<void(size_t, size_t)>* fn_ = nullptr;  // the job; valid while it runs
  size_t n_ = 0;
  std::atomic<uint64_t> generation_{0};  // bumped for each job (and to stop)
  std::atomic<int> pending_{0};          // workers still running the job
  std::atomic<int> sleeping_{0};         // workers waiting on start_
  std::atomic<bool> stop_{false};
};

}  // namespace quip::kernels
