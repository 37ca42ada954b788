// The machine's limits that `quip bench` sets its figures against:
// - read bandwidth: how fast a pool's threads stream memory, read-only,
//   from a buffer larger than the caches. A decoding step reads every
//   weight once, so this bounds generation.
// - int8 multiply-add peak: how many byte products per second the pool's
//   threads can sum with the instruction the quantized kernels use. A
//   prompt batch is compute bound, so this bounds prompt processing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/dot.h"
#include "kernels/thread_pool.h"

namespace quip::kernels {

// The sum of the words (wrapping): a read of every byte that no compiler
// can drop.
uint64_t sum_words(std::span<const uint64_t> words);

// A buffer size larger than this machine's caches: twice the last-level
// cache, at least 256 MiB.
size_t bandwidth_buffer_bytes();

// Bytes per second of the fastest of `sweeps` read-only passes over a
// buffer of `bytes` (filled once first), each thread summing its
// contiguous part. PRECONDITIONS: bytes >= 8 * pool.size(), sweeps >= 1.
double read_bandwidth(ThreadPool& pool, size_t bytes, int sweeps);

// Multiply-adds per second of the fastest of `tries` runs of a loop of
// independent 8-bit dot products (limits_x86.inc: vpdpbusd with AVX-512,
// else AVX2's three-instruction sequence) on every thread of the pool, about
// 20 ms each; 0 for Isa::Reference. PRECONDITIONS: tries >= 1.
double int8_peak(Isa isa, ThreadPool& pool, int tries);

}  // namespace quip::kernels
