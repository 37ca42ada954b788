// The x86 kernel tables (dot_x86.inc), one per instruction set. Each
// returns nullptr for a type it has no kernel for, and on other CPUs
// families, where the files compile to nothing but that.
#pragma once

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/dot.h"

namespace quip::kernels {
namespace avx2 {
DotFn dot_function(gguf::GgmlType weight, Order order);
AttendFn attend_function(size_t head_dim);
AttendTilesFn attend_tiles_function();
SwigluFn swiglu_function();
ToOperandFn to_operand_function(gguf::GgmlType operand);
}  // namespace avx2
namespace avx512 {
DotFn dot_function(gguf::GgmlType weight, Order order);
AttendFn attend_function(size_t head_dim);
AttendTilesFn attend_tiles_function();
SwigluFn swiglu_function();
ToOperandFn to_operand_function(gguf::GgmlType operand);
}  // namespace avx512
}  // namespace quip::kernels
