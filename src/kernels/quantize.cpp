#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

using gguf::GgmlType;

template <class Block>
void store(void* dst, size_t i, const Block& b) {
  std::memcpy(static_cast<char*>(dst) + i * sizeof(Block), &b, sizeof(Block));
}

void f32(const float* x, void* dst, size_t n) {
  std::memcpy(dst, x, n * sizeof(float));
}

void f16(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(static_cast<char*>(dst) + 2 * i, &h, 2);
  }
}

// d = amax / 127, q = round(x / d) (ggml's quantize_row_q8_0_ref).
void q8_0(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ8_0 b{};
    b.d = f32_to_f16(d);
    for (int j = 0; j < kBlock; ++j) b.qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
    store(dst, i, b);
  }
}

// The element of largest magnitude maps to -8: d = max / -8,
// q = min(15, trunc(x / d + 8.5)) (ggml's quantize_row_q4_0_ref).
void q4_0(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    }
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ4_0 b{};
    b.d = f32_to_f16(d);
    for (int j = 0; j < kBlock / 2; ++j) {
      const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j] * id + 8.5f)));
      const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j + 16] * id + 8.5f)));
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store(dst, i, b);
  }
}

using Fn = void (*)(const float*, void*, size_t);

Fn function_for(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return f32;
    case GgmlType::F16: return f16;
    case GgmlType::Q8_0: return q8_0;
    case GgmlType::Q4_0: return q4_0;
    default: return nullptr;
  }
}

}  // namespace

bool can_quantize(GgmlType type) {
  return function_for(type) != nullptr;
}

void quantize_row(GgmlType type, const float* src, void* dst, size_t n) {
  const Fn fn = function_for(type);
  CHECK(fn != nullptr);
  CHECK(n % gguf::traits(type).block_size == 0);
  fn(src, dst, n);
}

}  // namespace quip::kernels
