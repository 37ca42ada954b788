// Dot products of weight rows with activations: the inner loop of every
// matrix multiplication in the forward pass.
//
// As in ggml, activations are first converted to the weight type's
// "operand" format (ggml's vec_dot_type): 8-bit blocks (Q8_0, Q8_1, Q8_K)
// for the quantized types, half or bfloat16 for F16 and BF16 weights, floats
// for F32. The integer parts of a quantized dot product are then exact, and
// the results stay within llama.cpp's rounding of the same computation.
//
// Each instruction set has a table of dot functions, one per weight type:
// the scalar reference (always compiled, written for clarity, used for
// every type a faster table lacks) and the AVX2 and AVX-512 variants
// (dot_x86.inc, compiled once per instruction set with per-file flags). The
// table is chosen once at run time from the CPU's features; QUIP_KERNELS=ref
// (or avx2, avx512) forces one. Kernels are pure: pointers and sizes in, no
// allocation (beyond a per-thread scratch row in the reference), no threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/result.h"
#include "gguf/types.h"

namespace quip::kernels {

enum class Isa { Reference, Avx2, Avx512 };

std::string_view isa_name(Isa isa);

// The best instruction set this CPU and OS support.
Isa detected_isa();

// detected_isa(), unless QUIP_KERNELS names another ("ref", "avx2",
// "avx512"). Errors name the value and the choices, or the instruction set
// the CPU lacks.
Result<Isa> chosen_isa();

// The operand format of weights of `type` (see above).
// PRECONDITIONS: has_dot(type).
gguf::GgmlType operand_type(gguf::GgmlType weight);

// Whether quip can multiply weights of `type`.
bool has_dot(gguf::GgmlType weight);

// Bytes of n values of `type` (a tensor or operand type).
// PRECONDITIONS: n is a multiple of the type's block size.
size_t row_bytes(gguf::GgmlType type, size_t n);

// Converts n floats to operand format `operand` (Q8_0, Q8_1 or Q8_K with the
// rounding of ggml's x86 quantizers; F16 and BF16 rounding to nearest even;
// F32 copied).
// PRECONDITIONS: n a multiple of the operand's block size; dst has
// row_bytes(operand, n) bytes.
void to_operand(gguf::GgmlType operand, const float* x, void* dst, size_t n);

// to_operand for one operand format, as chosen for `isa`: F16 and BF16
// rows converted 8 values at a time with AVX2 or AVX-512 (the same bits as
// to_operand's, NaNs included), the rest to_operand itself.
using ToOperandFn = void (*)(const float* x, void* dst, size_t n);
ToOperandFn to_operand_function(gguf::GgmlType operand, Isa isa);

// out[c * out_stride + r] = dot(w + r * w_stride, a + c * a_stride) for
// r in [0, nrows), c in [0, ncols): a tile of weight rows of n values
// against ncols operand rows. Tiles let a kernel decode each weight block
// once for all columns and prepare each column's scales once for all rows.
// PRECONDITIONS: 1 <= ncols <= kMaxCols; nrows >= 1; n a multiple of the
// block size.
using DotFn = void (*)(size_t n, const void* w, size_t w_stride, size_t nrows, const void* a,
                       size_t a_stride, int ncols, float* out, size_t out_stride);
inline constexpr int kMaxCols = 8;

// The float order of a product. llama.cpp's CPU backend multiplies a
// weight row by row (ggml's vec_dot), or repacks it into interleaved blocks
// of 8 rows (its CPU_REPACK buffer), whose kernels sum in another order,
// and in another again for activation columns taken four at a time; F16
// and BF16 batches go through llamafile's tinyBLAS instead. The tiny
// reference models turn such last-bit differences into visible ones, so
// quip follows the same choices (dot_k.h and dot_float.h state the orders).
enum class Order {
  kRows,       // vec_dot
  kBlocks,     // repacked Q4_K, Q2_K, Q4_0, IQ4_NL: a column alone (ggml's gemv)
  kBlocksBy4,  // the same, columns in fours (ggml's gemm; for Q4_0 and IQ4_NL
               // the same order as kBlocks)
  kTinyBlas,   // F32, F16, BF16: a batch of columns (tinyBLAS)
};

// How llama.cpp (x86, AVX-512) multiplies a weight of `rows` rows of n_in
// values by a batch of n activation columns: columns [0, lead) in
// lead_order and [lead, n) in rest_order.
//   - Q4_K, Q2_K, Q4_0 and IQ4_NL with rows a multiple of 8 are repacked:
//     the columns of whole fours (when n > 3) in kBlocksBy4, the last n % 4
//     in kBlocks.
//   - F32, F16 and BF16 batches (n >= 2) with rows a multiple of 4 and n_in
//     of tinyBLAS's chunk (dot_float.h) are kTinyBlas throughout.
//   - Everything else is kRows.
struct BatchOrder {
  size_t lead;
  Order lead_order, rest_order;
};
BatchOrder llama_cpp_order(gguf::GgmlType weight, uint64_t rows, size_t n_in, size_t n);

// Weight rows per call that suit the dot function of `weight` in `order`:
// 64 for F16 and BF16 in kTinyBlas (the AVX-512 kernels widen each call's
// columns to floats once for all its rows), 16 otherwise. Any count gives
// the same results.
size_t tile_rows(gguf::GgmlType weight, Order order);

// The dot function for weights of `type` on `isa` (the reference when that
// instruction set has no faster one), in `order` (kRows for a type that has
// no such order).
// PRECONDITIONS: has_dot(type).
DotFn dot_function(gguf::GgmlType weight, Isa isa, Order order = Order::kRows);

}  // namespace quip::kernels
