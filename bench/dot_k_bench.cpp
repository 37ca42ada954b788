// The dot kernels on their own, as the forward calls them (the quantized
// types, and F32, F16 and BF16 weights with modest random values).
//
// Claim shown: each kernel's speed apart from memory: a 512 x 2048 weight
// (0.5 to 0.8 MiB, in the L2 cache after the first pass) multiplied by 1
// column (decoding a token) and by 64 columns (a prompt), in the forward's
// tiles of 16 rows by up to kernels::kMaxCols columns, on one thread.
//
// How to read the table:
//   BM_Dot/TYPE/ISA/COLS/ORDER   ISA 0 the scalar reference, 1 AVX2, 2 AVX-512;
//                                ORDER as kernels::Order (0 by rows, 1 and 2
//                                repacked). `weight_GBps` is weight bytes
//                                read per second (each pass over the columns
//                                reads the weight once): with one column, a
//                                kernel faster than the machine's stream
//                                bandwidth per core leaves decoding memory
//                                bound. `GMACps` is multiply-adds per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/types.h"
#include "kernels/dot.h"
#include "kernels/half.h"

namespace {

using quip::gguf::GgmlType;
namespace k = quip::kernels;

constexpr size_t kRows = 512, kIn = 2048, kTile = 16;

// Random blocks with modest half-precision scales where each type keeps them.
std::vector<uint8_t> random_weights(GgmlType type, std::mt19937& rng) {
  const size_t row = k::row_bytes(type, kIn);
  std::vector<uint8_t> w(kRows * row);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  const size_t block = quip::gguf::traits(type).block_bytes;
  std::vector<size_t> halves;
  switch (type) {
    case GgmlType::Q2_K: halves = {80, 82}; break;
    case GgmlType::Q3_K: halves = {108}; break;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: halves = {0, 2}; break;
    case GgmlType::Q6_K: halves = {208}; break;
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: {  // modest finite values instead of random bits
      std::vector<float> x(kIn);
      std::normal_distribution<float> value(0.0f, 0.02f);
      for (size_t r = 0; r < kRows; ++r) {
        for (float& v : x) v = value(rng);
        k::to_operand(type, x.data(), w.data() + r * row, kIn);
      }
      return w;
    }
    case GgmlType::MXFP4:  // an E8M0 exponent, no half
      for (size_t at = 0; at < w.size(); at += block) w[at] = 120;
      return w;
    default: halves = {0}; break;
  }
  const uint16_t h = k::f32_to_f16(0.01f);
  for (size_t at = 0; at < w.size(); at += block) {
    for (size_t off : halves) std::memcpy(w.data() + at + off, &h, 2);
  }
  return w;
}

void BM_Dot(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const auto isa = static_cast<k::Isa>(state.range(1));
  const auto cols = static_cast<size_t>(state.range(2));
  const auto order = static_cast<k::Order>(state.range(3));
  if (static_cast<int>(isa) > static_cast<int>(k::detected_isa())) {
    state.SkipWithError("this CPU lacks the instruction set");
    return;
  }
  std::mt19937 rng(1);
  const std::vector<uint8_t> w = random_weights(type, rng);
  const GgmlType op = k::operand_type(type);
  const size_t a_row = k::row_bytes(op, kIn);
  std::vector<uint8_t> a(cols * a_row);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::vector<float> x(kIn);
  for (size_t c = 0; c < cols; ++c) {
    for (float& v : x) v = value(rng);
    k::to_operand(op, x.data(), a.data() + c * a_row, kIn);
  }
  std::vector<float> out(cols * kRows);
  const k::DotFn dot = k::dot_function(type, isa, order);
  const size_t w_row = k::row_bytes(type, kIn);
  for (auto _ : state) {
    for (size_t r0 = 0; r0 < kRows; r0 += kTile) {
      for (size_t c0 = 0; c0 < cols; c0 += k::kMaxCols) {
        const int nc = static_cast<int>(std::min<size_t>(k::kMaxCols, cols - c0));
        dot(kIn, w.data() + r0 * w_row, w_row, kTile, a.data() + c0 * a_row, a_row, nc,
            out.data() + c0 * kRows + r0, kRows);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double passes = static_cast<double>(state.iterations());
  state.counters["weight_GBps"] =
      benchmark::Counter(passes * static_cast<double>(w.size()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMACps"] = benchmark::Counter(
      passes * static_cast<double>(kRows * kIn * cols) / 1e9, benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::IQ4_XS}) {
    for (int isa : {0, 1, 2}) {
      for (int cols : {1, 64}) {
        if (isa == 0 && cols > 1) continue;  // the reference is slow enough alone
        b->Args({static_cast<int>(t), isa, cols, 0});
        if (t == GgmlType::Q2_K || t == GgmlType::Q4_K) {
          b->Args({static_cast<int>(t), isa, cols, cols == 1 ? 1 : 2});
        }
      }
    }
  }
}
// The 32-element formats (Q4_0 and IQ4_NL in their repacked order, as the
// forward multiplies weights of rows in eights; Q4_1 for comparison).
void Args32(benchmark::internal::Benchmark* b) {
  for (GgmlType t :
       {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::Q4_1,
        GgmlType::MXFP4}) {
    const bool repacked =
        t == GgmlType::Q4_0 || t == GgmlType::IQ4_NL || t == GgmlType::MXFP4;
    for (int isa : {1, 2}) {
      for (int cols : {1, 64})
        b->Args({static_cast<int>(t), isa, cols, repacked ? (cols == 1 ? 1 : 2) : 0});
    }
  }
}
// The float formats: by rows for one column, tinyBLAS's order for a batch.
void ArgsFloat(benchmark::internal::Benchmark* b) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    for (int isa : {1, 2}) {
      for (int cols : {1, 64}) b->Args({static_cast<int>(t), isa, cols, cols == 1 ? 0 : 3});
    }
  }
}
BENCHMARK(BM_Dot)->Apply(Args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Dot)->Apply(Args32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Dot)->Apply(ArgsFloat)->Unit(benchmark::kMicrosecond);

}  // namespace
