// F32, F16 and BF16 dot products in llama.cpp's float orders, stated in
// scalar code: what the SIMD kernels (dot_x86.inc) compute, and what the
// reference kernels and the reference forward pass call.
//
// The product of two halves, or of two bfloat16 values, is exact in float
// (11 + 11 or 8 + 8 significant bits), so the order of the sums is the
// whole of the arithmetic (for F32, where and whether products round in an
// fma too): the same inputs give the same bits as ggml's
// CPU backend built for AVX-512 with AVX512_BF16 (the build llama.cpp's
// reference outputs came from). It multiplies such a weight in one of two
// ways (kernels::Order):
//
//   - one activation column at a time (decoding): ggml_vec_dot_f32, _f16
//     and _bf16;
//   - batches of two or more columns: llamafile's tinyBLAS (sgemm.cpp), one
//     16-lane accumulator per output, as long as the weight's row count is
//     a multiple of 4 and its row length of the chunk (16 values for F32
//     and F16, 32 for BF16).
//
// A BF16 row is an exact value in a sum only while the sum is exact too:
// the tiny reference models turn a one-ulp difference in a product of the
// last layer into a different bfloat16 rounding of the next activation,
// and that into a log-probability 0.07 away.
#pragma once

#include <cmath>
#include <cstddef>

namespace quip::kernels {

// v[l] += v[l + 8], then + 4, + 2, + 1: _mm512_reduce_add_ps as GCC
// expands it. Destroys v.
inline float reduce_add_16(float* v) {
  for (size_t w = 8; w >= 1; w /= 2) {
    for (size_t l = 0; l < w; ++l) v[l] = v[l] + v[l + w];
  }
  return v[0];
}

// ggml_vec_dot_f32 and _f16's vector part (GGML_F32_STEP and
// GGML_F16_STEP 64, EPR 16): the first np elements (a multiple of 64) in
// four accumulators of 16 float lanes, sum[j][l] = fma(x, y, sum[j][l])
// over steps of 64; then v = (sum0 + sum2) + (sum1 + sum3) and
// reduce_add_16. 0 when np is 0.
inline float vec_dot_by_64(const float* x, const float* y, size_t np) {
  if (np == 0) return 0;
  float sum[4][16] = {};
  for (size_t i = 0; i < np; i += 64) {
    for (size_t j = 0; j < 4; ++j) {
      for (size_t l = 0; l < 16; ++l) {
        const size_t e = i + j * 16 + l;
        sum[j][l] = std::fma(x[e], y[e], sum[j][l]);
      }
    }
  }
  float v[16];
  for (size_t l = 0; l < 16; ++l) v[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
  return reduce_add_16(v);
}

// ggml_vec_dot_f16: vec_dot_by_64 of the first n & ~63 elements, then the
// rest as float products summed in double. The attention scores (the query
// against the F16 cache) use it too.
inline float ggml_dot_f16(const float* x, const float* y, size_t n) {
  const size_t np = n & ~size_t{63};
  double sumf = vec_dot_by_64(x, y, np);
  for (size_t e = np; e < n; ++e) sumf += static_cast<double>(x[e] * y[e]);
  return static_cast<float>(sumf);
}

// x * y rounded to float, never fused into a following add (GCC contracts
// a * b + c into an fma wherever the target has one, -std=c++20 or not).
inline float unfused_product(float x, float y) {
  const volatile float p = x * y;
  return p;
}

// ggml_vec_dot_f32: the same vector part, then the rest in float, each
// product rounded before its sum (measured on libggml-cpu of build 9749:
// its leftover loop is not contracted).
inline float ggml_dot_f32(const float* x, const float* y, size_t n) {
  const size_t np = n & ~size_t{63};
  float sumf = vec_dot_by_64(x, y, np);
  for (size_t e = np; e < n; ++e) sumf += unfused_product(x[e], y[e]);
  return sumf;
}

// One step of _mm512_dpbf16_ps: lane l of acc takes the products of the
// pair of elements 2l, 2l + 1 of x and y, the odd one first, each sum
// rounded (measured on the instruction itself; it also flushes subnormal
// inputs and results to zero, which quip does not follow). The products
// come first: GCC 12's loop vectorizer at -O3 miscompiles two such steps
// in one loop (ggml_dot_bf16) when they read x and y directly.
inline void dpbf16_step(float* acc, const float* x, const float* y) {
  float p[32];
  for (size_t e = 0; e < 32; ++e) p[e] = x[e] * y[e];
  for (size_t l = 0; l < 16; ++l) acc[l] = (acc[l] + p[2 * l + 1]) + p[2 * l];
}

// ggml_vec_dot_bf16 with AVX512_BF16: in steps of 64 elements, the first
// 32 into accumulator c1 and the next 32 into c2 by dpbf16_step; then, in
// double, reduce_add_16(c1) + reduce_add_16(c2) + the rest's products.
inline float ggml_dot_bf16(const float* x, const float* y, size_t n) {
  float c1[16] = {}, c2[16] = {};
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    dpbf16_step(c1, x + i, y + i);
    dpbf16_step(c2, x + i + 32, y + i + 32);
  }
  double sumf = reduce_add_16(c1);
  sumf += reduce_add_16(c2);
  for (; i < n; ++i) sumf += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sumf);
}

// The elements tinyBLAS takes per step: one 16-lane vector of floats or
// halves, or a 32-value dpbf16 operand of bfloat16 pairs.
inline constexpr size_t kTinyBlasChunk = 16;
inline constexpr size_t kTinyBlasChunkBF16 = 32;

// tinyBLAS's dot for one output: a 16-lane accumulator over chunks of 16
// (F32 and F16: acc[l] = fma(x, y, acc[l])) or 32 elements (BF16:
// dpbf16_step), then reduce_add_16. A last partial chunk counts as
// zero-padded (tinyBLAS itself refuses such a row length; quip's kernels
// accept any).
inline float tinyblas_dot(const float* x, const float* y, size_t n) {
  float acc[16] = {};
  for (size_t i = 0; i < n; ++i) acc[i % 16] = std::fma(x[i], y[i], acc[i % 16]);
  return reduce_add_16(acc);
}

inline float tinyblas_dot_bf16(const float* x, const float* y, size_t n) {
  float acc[16] = {};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) dpbf16_step(acc, x + i, y + i);
  if (i < n) {
    float xs[32] = {}, ys[32] = {};
    for (size_t e = i; e < n; ++e) xs[e - i] = x[e], ys[e - i] = y[e];
    dpbf16_step(acc, xs, ys);
  }
  return reduce_add_16(acc);
}

}  // namespace quip::kernels
