// Always-on invariant checks for conditions that only a bug can break.
// Input from outside (files, arguments) is never checked with CHECK: it gets a
// Result and a message instead (see result.h).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace quip::detail {
[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "quip: internal error: CHECK(%s) failed at %s:%d\n", expr, file, line);
  std::abort();
}
}  // namespace quip::detail

#define CHECK(cond)                                            \
  do {                                                         \
    if (!(cond)) [[unlikely]]                                  \
      ::quip::detail::check_failed(#cond, __FILE__, __LINE__); \
  } while (0)
