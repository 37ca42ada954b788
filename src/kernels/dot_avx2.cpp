// The AVX2 (+FMA, F16C) kernels; CMake compiles this file alone with those
// instruction sets enabled.
#define QUIP_X86_NAMESPACE avx2
#include "kernels/dot_x86.inc"
#include "kernels/limits_x86.inc"
#include "kernels/operand_x86.inc"
