// The SIMD instruction sets this CPU runs, for tests that hold each SIMD
// kernel to its scalar reference.
#pragma once

#include <vector>

#include "kernels/dot.h"

namespace quip::kernels::testing {

inline std::vector<Isa> simd_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) isas.push_back(isa);
  }
  return isas;
}

}  // namespace quip::kernels::testing
