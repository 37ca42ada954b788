#include "kernels/dot_k.h"

#include <cmath>

#include "base/check.h"
#include "kernels/blocks.h"
#include "kernels/dequantize.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

using gguf::GgmlType;

// The operand's sum over the 16 or 32 elements of sub-block j.
int sub_sum(const BlockQ8_K& y, int sub, int j) {
  return sub == 16 ? y.bsums[j] : y.bsums[2 * j] + y.bsums[2 * j + 1];
}

}  // namespace

float dot_k_by_rows(GgmlType type, size_t n, const void* w, const void* a) {
  float acc[8] = {}, acc_m4[4] = {}, summs = 0;
  KSuperblock s;
  for (size_t i = 0; i < n / kSuper; ++i) {
    decode_k(type, w, i, &s);
    const auto y = load_block<BlockQ8_K>(a, i);
    // Q6_K's lanes take q unsigned (0..63) and its offset apart, below.
    const int bias = type == GgmlType::Q6_K ? 32 : 0;
    int lanes[8] = {};
    for (int e = 0; e < kSuper; ++e) {
      lanes[(e % 32) / 4] += s.sc[e / s.sub] * (s.q[e] + bias) * y.qs[e];
    }
    const float d = y.d * s.d, dmin = -y.d * s.dmin;
    switch (type) {
      case GgmlType::Q2_K:  // mins into the lanes first, sub-blocks 2k and 2k+1 in lane k
        for (int k = 0; k < 8; ++k) {
          const int m = s.m[2 * k] * y.bsums[2 * k] + s.m[2 * k + 1] * y.bsums[2 * k + 1];
          acc[k] = std::fma(dmin, static_cast<float>(m), acc[k]);
        }
        break;
      case GgmlType::Q4_K:  // mins in four lanes, groups 2k and 2k+1 in lane k
        for (int k = 0; k < 4; ++k) {
          const int m =
              s.m[2 * k] * sub_sum(y, 32, 2 * k) + s.m[2 * k + 1] * sub_sum(y, 32, 2 * k + 1);
          acc_m4[k] = std::fma(dmin, static_cast<float>(m), acc_m4[k]);
        }
        break;
      case GgmlType::Q5_K: {  // mins in one float
        int m = 0;
        for (int j = 0; j < 8; ++j) m += s.m[j] * sub_sum(y, 32, j);
        summs = std::fma(dmin, static_cast<float>(m), summs);
        break;
      }
      case GgmlType::Q6_K:  // 32 times the sums of sub-blocks 2k and 2k+1 off lane k
        for (int k = 0; k < 8; ++k) {
          lanes[k] -= 32 * (s.sc[2 * k] * y.bsums[2 * k] + s.sc[2 * k + 1] * y.bsums[2 * k + 1]);
        }
        break;
      default: break;
    }
    for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, static_cast<float>(lanes[k]), acc[k]);
  }
  const float m4 = (acc_m4[0] + acc_m4[2]) + (acc_m4[1] + acc_m4[3]);
  return type == GgmlType::Q4_K ? hsum_float_8(acc) + m4 : hsum_float_8(acc) + summs;
}

float dot_k_in_blocks(GgmlType type, size_t n, const void* w, const void* a, int group) {
  CHECK(type == GgmlType::Q4_K || type == GgmlType::Q2_K);
  float acc = 0, acc_min = 0;
  KSuperblock s;
  for (size_t i = 0; i < n / kSuper; ++i) {
    decode_k(type, w, i, &s);
    const auto y = load_block<BlockQ8_K>(a, i);
    const float dd = s.d * y.d, dm = s.dmin * y.d;
    for (int g = 0; g < kSuper; g += group) {
      int sum = 0, mins = 0;
      for (int e = g; e < g + group; ++e) sum += s.sc[e / s.sub] * s.q[e] * y.qs[e];
      for (int j = g / s.sub; j < (g + group) / s.sub; ++j) mins += s.m[j] * sub_sum(y, s.sub, j);
      acc = std::fma(static_cast<float>(sum), dd, acc);
      acc_min = std::fma(static_cast<float>(mins), dm, acc_min);
    }
  }
  return acc - acc_min;
}

}  // namespace quip::kernels
