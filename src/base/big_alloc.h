// An allocator for large tables (vocabulary indexes, the views of a GGUF
// file's string arrays): blocks of 1 MiB or more are mapped with their pages
// populated in one call. Touching a fresh 4 MiB table page by page otherwise
// costs a thousand page faults, which in a one-shot process was a third of
// the time to load a 128k-token vocabulary. (Transparent huge pages were
// tried: fewer faults, but compaction stalls made the wall time worse.)
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace quip {

template <class T>
struct BigAllocator {
  using value_type = T;
  static constexpr size_t kThreshold = size_t{1} << 20;

  BigAllocator() = default;
  template <class U>
  BigAllocator(const BigAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kThreshold) return std::allocator<T>().allocate(n);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }

  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kThreshold) {
      std::allocator<T>().deallocate(p, n);
    } else {
      ::munmap(p, n * sizeof(T));
    }
  }

  template <class U>
  bool operator==(const BigAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using BigVector = std::vector<T, BigAllocator<T>>;

}  // namespace quip
