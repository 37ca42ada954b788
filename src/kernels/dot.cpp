#include "kernels/dot.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/dequantize.h"
#include "kernels/dot_float.h"
#include "kernels/dot_k.h"
#include "kernels/dot_x86.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

using gguf::GgmlType;

// Q8_0 and Q8_1 as ggml's x86 quantize_row_q8_0/q8_1 make them: d = amax /
// 127, q = round-half-even(x * 127 / amax); Q8_1 adds s = d * sum(q).
template <class Block>
void to_q8_32(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0 ? 127.0f / amax : 0.0f;
    Block b{};
    b.d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kBlock; ++j) {
      b.qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
      sum += b.qs[j];
    }
    if constexpr (std::is_same_v<Block, BlockQ8_1>) b.s = f32_to_f16(d * static_cast<float>(sum));
    store_block(dst, i, b);
  }
}

// Q8_K as ggml's quantize_row_q8_K_ref: the element of largest magnitude
// maps to -127, d = 1 / scale, and sums of each 16 quants for the K-quants'
// minimums.
void to_q8_k(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n / kSuper; ++i, x += kSuper) {
    float max = 0, amax = 0;
    for (int j = 0; j < kSuper; ++j) {
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    }
    BlockQ8_K b{};
    if (amax != 0) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < kSuper; ++j) {
        b.qs[j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * x[j])));
      }
      for (int g = 0; g < kSuper / 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += b.qs[16 * g + j];
        b.bsums[g] = static_cast<int16_t>(sum);
      }
      b.d = 1.0f / iscale;
    }
    store_block(dst, i, b);
  }
}

void to_bf16(const float* x, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = bits_from_f32(x[i]);
    // Round to nearest even, quieting NaNs, as ggml's GGML_FP32_TO_BF16.
    const auto h = (bits & 0x7FFFFFFF) > 0x7F800000
                       ? static_cast<uint16_t>((bits >> 16) | 64)
                       : static_cast<uint16_t>((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16);
    std::memcpy(static_cast<char*>(dst) + 2 * i, &h, 2);
  }
}

// An operand row as floats: what the reference dot multiplies.
void operand_to_floats(GgmlType operand, const void* a, float* y, size_t n) {
  switch (operand) {
    case GgmlType::Q8_1:
      for (size_t i = 0; i < n / kBlock; ++i) {
        const auto b = load_block<BlockQ8_1>(a, i);
        for (int j = 0; j < kBlock; ++j) y[i * kBlock + j] = f16_to_f32(b.d) * b.qs[j];
      }
      return;
    case GgmlType::Q8_K:
      for (size_t i = 0; i < n / kSuper; ++i) {
        const auto b = load_block<BlockQ8_K>(a, i);
        for (int j = 0; j < kSuper; ++j) y[i * kSuper + j] = b.d * b.qs[j];
      }
      return;
    default: dequantize_row(operand, a, y, n);
  }
}

// Q4_1 and Q5_1 keep their offset m out of the products, as ggml's
// ggml_vec_dot_q4_1_q8_1 and _q5_1_q8_1 (AVX2) do, in their float order:
// lane k of each block holds the integer dot of values 4k..4k+3,
// accumulated per lane as fma(d * d8, lane, acc); m * s8 goes to a
// separate float sum; the result is hsum_float_8(acc) + that sum.
template <GgmlType kType>
float dot_with_offset(size_t n, const void* w, const void* a) {
  float acc[8] = {}, summs = 0;
  for (size_t i = 0; i < n / kBlock; ++i) {
    const auto y = load_block<BlockQ8_1>(a, i);
    int q[kBlock];
    float d, m;
    if constexpr (kType == GgmlType::Q4_1) {
      const auto x = load_block<BlockQ4_1>(w, i);
      for (int j = 0; j < kBlock / 2; ++j) q[j] = x.qs[j] & 0x0F, q[j + 16] = x.qs[j] >> 4;
      d = f16_to_f32(x.d), m = f16_to_f32(x.m);
    } else {
      const auto x = load_block<BlockQ5_1>(w, i);
      uint32_t qh;
      std::memcpy(&qh, x.qh, 4);
      for (int j = 0; j < kBlock / 2; ++j) {
        q[j] = (x.qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
        q[j + 16] = (x.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
      }
      d = f16_to_f32(x.d), m = f16_to_f32(x.m);
    }
    summs = std::fma(m, f16_to_f32(y.s), summs);
    const float dd = d * f16_to_f32(y.d);
    for (int k = 0; k < 8; ++k) {
      int lane = 0;
      for (int e = 4 * k; e < 4 * k + 4; ++e) lane += q[e] * y.qs[e];
      acc[k] = std::fma(dd, static_cast<float>(lane), acc[k]);
    }
  }
  return hsum_float_8(acc) + summs;
}

// The 4-bit grid formats: a value per nibble from a table of 16 (nibbles
// as Q4_0's) and a scale per block: Q4_0 (the nibble - 8), IQ4_NL (a half
// scale) and MXFP4 (an E8M0 scale, halved as its table is doubled).
struct GridBlock {
  const int8_t* values;
  float d;
  const uint8_t* qs;  // 16 bytes
};
constexpr int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

template <GgmlType kType>
GridBlock grid_block(const void* w, size_t i) {
  const auto* b = static_cast<const uint8_t*>(w);
  if constexpr (kType == GgmlType::MXFP4) {
    b += i * sizeof(BlockMXFP4);
    return {kMXFP4Values, e8m0_half(b[0]), b + offsetof(BlockMXFP4, qs)};
  } else {
    static_assert(kType == GgmlType::Q4_0 || kType == GgmlType::IQ4_NL);
    static_assert(sizeof(BlockQ4_0) == sizeof(BlockIQ4_NL));
    b += i * sizeof(BlockIQ4_NL);
    uint16_t d;
    std::memcpy(&d, b, 2);
    return {kType == GgmlType::Q4_0 ? kQ4_0Values : kIQ4Values, f16_to_f32(d),
            b + offsetof(BlockIQ4_NL, qs)};
  }
}

// IQ4_NL and MXFP4 by rows as ggml_vec_dot_iq4_nl_q8_0 and
// ggml_vec_dot_mxfp4_q8_0 (AVX2) sum: lane k of a block holds the exact
// integer dot of elements 4k..4k+3; the blocks go in pairs, the first of
// each into one 8-lane accumulator and the second into another, acc =
// fma(d8 * d, lane, acc); the result is hsum_float_8 of their sum, then a
// last unpaired block as fma(d8 * d, its integer dot, result).
template <GgmlType kType>
float dot_grid_rows(size_t n, const void* w, const void* a) {
  const size_t nb = n / kBlock;
  const auto block = [&](size_t i, int* lanes) {
    const GridBlock x = grid_block<kType>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    for (int k = 0; k < 8; ++k) lanes[k] = 0;
    for (int j = 0; j < kBlock / 2; ++j) {
      lanes[j / 4] += x.values[x.qs[j] & 0x0F] * y.qs[j];
      lanes[4 + j / 4] += x.values[x.qs[j] >> 4] * y.qs[j + kBlock / 2];
    }
    return f16_to_f32(y.d) * x.d;
  };
  float acc[2][8] = {};
  size_t i = 0;
  for (; i + 1 < nb; i += 2) {
    for (int h = 0; h < 2; ++h) {
      int lanes[8];
      const float d = block(i + h, lanes);
      for (int k = 0; k < 8; ++k) acc[h][k] = std::fma(d, static_cast<float>(lanes[k]), acc[h][k]);
    }
  }
  float both[8];
  for (int k = 0; k < 8; ++k) both[k] = acc[0][k] + acc[1][k];
  float sum = hsum_float_8(both);
  for (; i < nb; ++i) {
    int lanes[8];
    const float d = block(i, lanes);
    int isum = 0;
    for (int k = 0; k < 8; ++k) isum += lanes[k];
    sum = std::fma(d, static_cast<float>(isum), sum);
  }
  return sum;
}

constexpr bool is_k_quant(GgmlType t) {
  return t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
         t == GgmlType::Q6_K || t == GgmlType::IQ4_XS;
}

template <GgmlType kType>
void dot_row(size_t n, const void* w, const void* a, size_t a_stride, float* out, int ncols) {
  const GgmlType operand = operand_type(kType);
  if constexpr (kType == GgmlType::Q4_1 || kType == GgmlType::Q5_1) {
    for (int c = 0; c < ncols; ++c) {
      out[c] = dot_with_offset<kType>(n, w, static_cast<const char*>(a) + c * a_stride);
    }
    return;
  }
  if constexpr (kType == GgmlType::IQ4_NL || kType == GgmlType::MXFP4) {
    for (int c = 0; c < ncols; ++c) {
      out[c] = dot_grid_rows<kType>(n, w, static_cast<const char*>(a) + c * a_stride);
    }
    return;
  }
  if constexpr (is_k_quant(kType)) {
    for (int c = 0; c < ncols; ++c) {
      out[c] = dot_k_by_rows(kType, n, w, static_cast<const char*>(a) + c * a_stride);
    }
    return;
  }
  thread_local std::vector<float> wf, af;
  wf.resize(n), af.resize(n);
  dequantize_row(kType, w, wf.data(), n);
  for (int c = 0; c < ncols; ++c) {
    operand_to_floats(operand, static_cast<const char*>(a) + c * a_stride, af.data(), n);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += double{wf[i]} * af[i];
    out[c] = static_cast<float>(sum);
  }
}

// The reference: both rows as floats, summed in double; the K-quants, Q4_1,
// Q5_1 and IQ4_NL in llama.cpp's order (dot_k.h and above), the float steps
// of which are few enough to state plainly.
template <GgmlType kType>
void dot_reference(size_t n, const void* w, size_t w_stride, size_t nrows, const void* a,
                   size_t a_stride, int ncols, float* out, size_t out_stride) {
  for (size_t r = 0; r < nrows; ++r) {
    float row[kMaxCols];
    dot_row<kType>(n, static_cast<const char*>(w) + r * w_stride, a, a_stride, row, ncols);
    for (int c = 0; c < ncols; ++c) out[c * out_stride + r] = row[c];
  }
}

// Repacked Q4_K and Q2_K: groups of one superblock for a column alone,
// of 64 (Q4_K) or 128 (Q2_K) elements for columns in fours.
template <GgmlType kType, Order kOrder>
void dot_reference_blocks(size_t n, const void* w, size_t w_stride, size_t nrows, const void* a,
                          size_t a_stride, int ncols, float* out, size_t out_stride) {
  constexpr int group = kOrder == Order::kBlocks ? kSuper : (kType == GgmlType::Q4_K ? 64 : 128);
  for (size_t r = 0; r < nrows; ++r) {
    for (int c = 0; c < ncols; ++c) {
      out[c * out_stride + r] =
          dot_k_in_blocks(kType, n, static_cast<const char*>(w) + r * w_stride,
                          static_cast<const char*>(a) + c * a_stride, group);
    }
  }
}

// Repacked Q4_0, IQ4_NL and MXFP4 (ggml's gemv and gemm_q4_b32_8x8_q8_0
// and their lookup-table twins, one order for a column alone and for
// columns in fours): per block the exact integer dot of the quants, then
// acc = fma(isum, d_w * d_a, acc).
template <GgmlType kType>
void dot_reference_repacked_32(size_t n, const void* w, size_t w_stride, size_t nrows,
                               const void* a, size_t a_stride, int ncols, float* out,
                               size_t out_stride) {
  for (size_t r = 0; r < nrows; ++r) {
    for (int c = 0; c < ncols; ++c) {
      float acc = 0;
      for (size_t b = 0; b < n / kBlock; ++b) {
        const GridBlock x = grid_block<kType>(static_cast<const char*>(w) + r * w_stride, b);
        const auto y = load_block<BlockQ8_0>(static_cast<const char*>(a) + c * a_stride, b);
        int isum = 0;
        for (int j = 0; j < kBlock / 2; ++j) {
          isum +=
              x.values[x.qs[j] & 0x0F] * y.qs[j] + x.values[x.qs[j] >> 4] * y.qs[j + kBlock / 2];
        }
        acc = std::fma(static_cast<float>(isum), x.d * f16_to_f32(y.d), acc);
      }
      out[c * out_stride + r] = acc;
    }
  }
}

// F32, F16 and BF16 in llama.cpp's orders (dot_float.h): vec_dot's for
// kRows, tinyBLAS's for kTinyBlas.
template <GgmlType kType, Order kOrder>
void dot_reference_float(size_t n, const void* w, size_t w_stride, size_t nrows, const void* a,
                         size_t a_stride, int ncols, float* out, size_t out_stride) {
  static_assert(kType == GgmlType::F32 || kType == GgmlType::F16 || kType == GgmlType::BF16);
  thread_local std::vector<float> wf, af;
  wf.resize(n), af.resize(n * static_cast<size_t>(ncols));
  for (int c = 0; c < ncols; ++c) {
    dequantize_row(kType, static_cast<const char*>(a) + c * a_stride, af.data() + c * n, n);
  }
  for (size_t r = 0; r < nrows; ++r) {
    dequantize_row(kType, static_cast<const char*>(w) + r * w_stride, wf.data(), n);
    for (int c = 0; c < ncols; ++c) {
      const float* x = wf.data();
      const float* y = af.data() + c * n;
      float& o = out[c * out_stride + r];
      if constexpr (kOrder == Order::kTinyBlas) {
        o = kType == GgmlType::BF16 ? tinyblas_dot_bf16(x, y, n) : tinyblas_dot(x, y, n);
      } else if constexpr (kType == GgmlType::F32) {
        o = ggml_dot_f32(x, y, n);
      } else {
        o = kType == GgmlType::BF16 ? ggml_dot_bf16(x, y, n) : ggml_dot_f16(x, y, n);
      }
    }
  }
}

struct TypeEntry {
  GgmlType weight, operand;
  DotFn reference;
};

constexpr TypeEntry kTypes[] = {
    {GgmlType::F32, GgmlType::F32, dot_reference_float<GgmlType::F32, Order::kRows>},
    {GgmlType::F16, GgmlType::F16, dot_reference_float<GgmlType::F16, Order::kRows>},
    {GgmlType::BF16, GgmlType::BF16, dot_reference_float<GgmlType::BF16, Order::kRows>},
    {GgmlType::Q8_0, GgmlType::Q8_0, dot_reference<GgmlType::Q8_0>},
    {GgmlType::Q4_0, GgmlType::Q8_0, dot_reference<GgmlType::Q4_0>},
    {GgmlType::Q4_1, GgmlType::Q8_1, dot_reference<GgmlType::Q4_1>},
    {GgmlType::Q5_0, GgmlType::Q8_0, dot_reference<GgmlType::Q5_0>},
    {GgmlType::Q5_1, GgmlType::Q8_1, dot_reference<GgmlType::Q5_1>},
    {GgmlType::IQ4_NL, GgmlType::Q8_0, dot_reference<GgmlType::IQ4_NL>},
    {GgmlType::MXFP4, GgmlType::Q8_0, dot_reference<GgmlType::MXFP4>},
    {GgmlType::Q2_K, GgmlType::Q8_K, dot_reference<GgmlType::Q2_K>},
    {GgmlType::Q3_K, GgmlType::Q8_K, dot_reference<GgmlType::Q3_K>},
    {GgmlType::Q4_K, GgmlType::Q8_K, dot_reference<GgmlType::Q4_K>},
    {GgmlType::Q5_K, GgmlType::Q8_K, dot_reference<GgmlType::Q5_K>},
    {GgmlType::Q6_K, GgmlType::Q8_K, dot_reference<GgmlType::Q6_K>},
    {GgmlType::IQ4_XS, GgmlType::Q8_K, dot_reference<GgmlType::IQ4_XS>},
};

const TypeEntry* find(GgmlType weight) {
  for (const TypeEntry& e : kTypes) {
    if (e.weight == weight) return &e;
  }
  return nullptr;
}

DotFn fast_dot(GgmlType weight, Isa isa, Order order) {
  switch (isa) {
    case Isa::Reference: return nullptr;
    case Isa::Avx2: return avx2::dot_function(weight, order);
    case Isa::Avx512: return avx512::dot_function(weight, order);
  }
  return nullptr;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Reference: return "ref";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa detected_isa() {
#if defined(__x86_64__)
  // The CPU must have the instructions (CPUID) and the OS must save their
  // registers on a context switch (XCR0, read by XGETBV): a CPU flag alone
  // is not enough, as some virtual machines list features they disabled.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return Isa::Reference;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), f16c = ecx & (1u << 29);
  if (!osxsave) return Isa::Reference;
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_avx = (xcr0_lo & 0x6) == 0x6;       // XMM and YMM state
  const bool os_avx512 = (xcr0_lo & 0xE6) == 0xE6;  // and opmask, ZMM state
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return Isa::Reference;
  const bool avx2 = ebx & (1u << 5);
  const bool avx512 = (ebx & (1u << 16)) && (ebx & (1u << 17)) && (ebx & (1u << 30)) &&
                      (ebx & (1u << 31)) && (ecx & (1u << 11));  // F, DQ, BW, VL, VNNI
  if (os_avx && avx2 && fma && f16c) {
    return os_avx512 && avx512 ? Isa::Avx512 : Isa::Avx2;
  }
#endif
  return Isa::Reference;
}

Result<Isa> chosen_isa() {
  const Isa best = detected_isa();
  const char* env = std::getenv("QUIP_KERNELS");
  if (env == nullptr || *env == '\0') return best;
  for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
    if (isa_name(isa) != env) continue;
    if (static_cast<int>(isa) > static_cast<int>(best)) {
      return Error{"QUIP_KERNELS=" + std::string(env) + ": this CPU supports at most " +
                   std::string(isa_name(best))};
    }
    return isa;
  }
  return Error{"QUIP_KERNELS='" + std::string(env) + "' is not one of ref, avx2, avx512"};
}

bool has_dot(GgmlType weight) {
  return find(weight) != nullptr;
}

GgmlType operand_type(GgmlType weight) {
  const TypeEntry* e = find(weight);
  CHECK(e != nullptr);
  return e->operand;
}

size_t row_bytes(GgmlType type, size_t n) {
  const gguf::TypeTraits t = gguf::traits(type);
  CHECK(n % t.block_size == 0);
  return n / t.block_size * t.block_bytes;
}

void to_operand(GgmlType operand, const float* x, void* dst, size_t n) {
  operand_function(operand, Isa::Reference)(x, dst, n);
}

OperandFn operand_function(GgmlType operand, Isa isa) {
  OperandFn fast = nullptr;
  if (isa == Isa::Avx2) fast = avx2::operand_function(operand);
  if (isa == Isa::Avx512) fast = avx512::operand_function(operand);
  if (fast != nullptr) return fast;
  switch (operand) {
    case GgmlType::F32:
      return [](const float* x, void* dst, size_t n) { std::memcpy(dst, x, n * sizeof(float)); };
    case GgmlType::F16:
      return [](const float* x, void* dst, size_t n) {
        for (size_t i = 0; i < n; ++i) {
          const uint16_t h = f32_to_f16(x[i]);
          std::memcpy(static_cast<char*>(dst) + 2 * i, &h, 2);
        }
      };
    case GgmlType::BF16: return to_bf16;
    case GgmlType::Q8_0: return to_q8_32<BlockQ8_0>;
    case GgmlType::Q8_1: return to_q8_32<BlockQ8_1>;
    case GgmlType::Q8_K: return to_q8_k;
    default: CHECK(false && "not an operand type");
  }
  return nullptr;
}

namespace {

// Whether weights of `weight` type have `order`.
bool has_order(GgmlType weight, Order order) {
  switch (order) {
    case Order::kRows: return true;
    case Order::kBlocks:
    case Order::kBlocksBy4:
      return weight == GgmlType::Q4_K || weight == GgmlType::Q2_K || weight == GgmlType::Q4_0 ||
             weight == GgmlType::IQ4_NL || weight == GgmlType::MXFP4;
    case Order::kTinyBlas:
      return weight == GgmlType::F32 || weight == GgmlType::F16 || weight == GgmlType::BF16;
  }
  return false;
}

}  // namespace

BatchOrder llama_cpp_order(GgmlType weight, uint64_t rows, size_t n_in, size_t n) {
  if (has_order(weight, Order::kBlocks) && rows % 8 == 0) {
    return {n > 3 ? n - n % 4 : 0, Order::kBlocksBy4, Order::kBlocks};
  }
  const size_t chunk = weight == GgmlType::BF16 ? kTinyBlasChunkBF16 : kTinyBlasChunk;
  if (has_order(weight, Order::kTinyBlas) && n >= 2 && rows % 4 == 0 && n_in % chunk == 0) {
    return {n, Order::kTinyBlas, Order::kRows};
  }
  return {0, Order::kRows, Order::kRows};
}

DotFn dot_function(GgmlType weight, Isa isa, Order order) {
  const TypeEntry* e = find(weight);
  CHECK(e != nullptr);
  if (!has_order(weight, order)) order = Order::kRows;
  if (const DotFn fast = fast_dot(weight, isa, order)) return fast;
  switch (order) {
    case Order::kRows: return e->reference;
    case Order::kBlocks:
    case Order::kBlocksBy4:
      if (weight == GgmlType::Q4_0) return dot_reference_repacked_32<GgmlType::Q4_0>;
      if (weight == GgmlType::IQ4_NL) return dot_reference_repacked_32<GgmlType::IQ4_NL>;
      if (weight == GgmlType::MXFP4) return dot_reference_repacked_32<GgmlType::MXFP4>;
      if (order == Order::kBlocks) {
        return weight == GgmlType::Q4_K ? dot_reference_blocks<GgmlType::Q4_K, Order::kBlocks>
                                        : dot_reference_blocks<GgmlType::Q2_K, Order::kBlocks>;
      }
      return weight == GgmlType::Q4_K ? dot_reference_blocks<GgmlType::Q4_K, Order::kBlocksBy4>
                                      : dot_reference_blocks<GgmlType::Q2_K, Order::kBlocksBy4>;
    case Order::kTinyBlas:
      switch (weight) {
        case GgmlType::F32: return dot_reference_float<GgmlType::F32, Order::kTinyBlas>;
        case GgmlType::F16: return dot_reference_float<GgmlType::F16, Order::kTinyBlas>;
        default: return dot_reference_float<GgmlType::BF16, Order::kTinyBlas>;
      }
  }
  return e->reference;
}

}  // namespace quip::kernels
