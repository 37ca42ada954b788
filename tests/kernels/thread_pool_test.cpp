#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <vector>

namespace quip::kernels {
namespace {

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t begin, size_t end) {
        EXPECT_LT(begin, end);
        for (size_t i = begin; i < end; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPool, RangesDependOnlyOnSizeAndCount) {
  ThreadPool pool(4);
  for (int run = 0; run < 50; ++run) {
    std::mutex m;
    std::vector<std::pair<size_t, size_t>> ranges;
    pool.parallel_for(10, [&](size_t begin, size_t end) {
      std::lock_guard lock(m);
      ranges.emplace_back(begin, end);
    });
    std::sort(ranges.begin(), ranges.end());
    // Thread i of 4 gets [i*10/4, (i+1)*10/4).
    const std::vector<std::pair<size_t, size_t>> expected = {{0, 2}, {2, 5}, {5, 7}, {7, 10}};
    EXPECT_EQ(ranges, expected);
  }
}

TEST(ThreadPool, ManyJobsInARowGiveTheSerialResult) {
  ThreadPool pool(3);
  std::vector<double> x(10007);
  std::iota(x.begin(), x.end(), 1.0);
  for (int job = 0; job < 2000; ++job) {
    std::vector<double> y(x.size());
    pool.parallel_for(x.size(), [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) y[i] = x[i] * job;
    });
    ASSERT_EQ(y[10006], 10007.0 * job);
    ASSERT_EQ(y[0], 1.0 * job);
  }
}

TEST(ThreadPool, PhysicalCoresIsPositive) {
  EXPECT_GE(physical_cores(), 1);
}

}  // namespace
}  // namespace quip::kernels
