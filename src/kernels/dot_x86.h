// The x86 kernel tables (dot_x86.inc), one per instruction set. Each
// returns nullptr for a type it has no kernel for, and on other CPUs
// families, where the files compile to nothing but that.
#pragma once

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/delta_net.h"
#include "kernels/dot.h"

namespace quip::kernels {
namespace avx2 {
DotFn dot_function(gguf::GgmlType weight, Order order);
OperandFn operand_function(gguf::GgmlType operand);  // operand_x86.inc
// limits_x86.inc: `rounds` rounds of int8_madds_per_round() multiply-adds
// of bytes, 3 times -5 each, summed in 32-bit lanes; returns the sum of the
// lanes modulo 2^32 (so that none can be skipped).
uint64_t int8_madds_per_round();
uint64_t int8_madd_rounds(uint64_t rounds);
AttendFn attend_function(HeadDims dims);
AttendTilesFn attend_tiles_function();
SwigluFn swiglu_function();
DeltaRuleFn delta_rule_function();
CausalConvFn causal_conv_function();
SiluRowFn silu_row_function();
}  // namespace avx2
namespace avx512 {
DotFn dot_function(gguf::GgmlType weight, Order order);
OperandFn operand_function(gguf::GgmlType operand);  // operand_x86.inc
// limits_x86.inc: `rounds` rounds of int8_madds_per_round() multiply-adds
// of bytes, 3 times -5 each, summed in 32-bit lanes; returns the sum of the
// lanes modulo 2^32 (so that none can be skipped).
uint64_t int8_madds_per_round();
uint64_t int8_madd_rounds(uint64_t rounds);
AttendFn attend_function(HeadDims dims);
AttendTilesFn attend_tiles_function();
SwigluFn swiglu_function();
DeltaRuleFn delta_rule_function();
CausalConvFn causal_conv_function();
SiluRowFn silu_row_function();
}  // namespace avx512
}  // namespace quip::kernels
