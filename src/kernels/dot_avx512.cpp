// The AVX-512 kernels: the AVX2 code with VNNI's one-instruction 8-bit dot
// products (vpdpbusd) and two columns per 512-bit register in the Q8_0-operand
// tiles; CMake compiles this file alone with AVX-512 F, BW, VL, DQ and VNNI.
#define QUIP_X86_NAMESPACE avx512
#include "kernels/dot_x86.inc"
#include "kernels/limits_x86.inc"
#include "kernels/operand_x86.inc"
