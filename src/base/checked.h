// Checked arithmetic for sizes and offsets that come from outside input.
// Each returns false on overflow and leaves *out unspecified.
#pragma once

#include <cstdint>

namespace quip {

[[nodiscard]] inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

[[nodiscard]] inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Rounds `value` up to a multiple of `alignment`.
// PRECONDITIONS: alignment is a power of two.
[[nodiscard]] inline bool checked_align_up(uint64_t value, uint64_t alignment, uint64_t* out) {
  uint64_t bumped;
  if (!checked_add(value, alignment - 1, &bumped)) return false;
  *out = bumped & ~(alignment - 1);
  return true;
}

inline bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace quip
