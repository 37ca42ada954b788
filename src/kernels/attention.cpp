#include "kernels/attention.h"

#include <cmath>
#include <vector>

#include "kernels/activation.h"
#include "kernels/dot_x86.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

void attend_one(size_t head_dim, size_t n, const float* q, const uint16_t* k, const uint16_t* v,
                size_t stride, float scale, float* out) {
  thread_local std::vector<float> acc, key;  // acc: values of half precision
  acc.assign(head_dim, 0.0f);
  key.resize(head_dim);
  float max = -INFINITY, sum = 0;
  for (size_t p = 0; p < n; ++p) {
    const uint16_t* kp = k + p * stride;
    const uint16_t* vp = v + p * stride;
    for (size_t d = 0; d < head_dim; ++d) key[d] = f16_to_f32(kp[d]);
    const float s = ggml_dot_f16(key.data(), q, head_dim) * scale;
    float old_scale = 1.0f, weight = 1.0f;
    if (s > max) {
      old_scale = std::exp(max - s);
      max = s;
      for (float& a : acc) a = round_f16(a * old_scale);
    } else {
      weight = std::exp(s - max);
    }
    for (size_t d = 0; d < head_dim; ++d) {
      acc[d] = round_f16(std::fma(f16_to_f32(vp[d]), weight, acc[d]));
    }
    sum = std::fma(sum, old_scale, weight);  // ggml's S*ms + vs, contracted
  }
  const float inv = 1.0f / sum;  // ggml scales by 1 / sum
  for (size_t d = 0; d < head_dim; ++d) out[d] = acc[d] * inv;
}

void attend_reference(size_t head_dim, size_t n_heads, size_t n, const float* q, const uint16_t* k,
                      const uint16_t* v, size_t stride, float scale, float* out) {
  for (size_t h = 0; h < n_heads; ++h) {
    attend_one(head_dim, n, q + h * head_dim, k, v, stride, scale, out + h * head_dim);
  }
}

void swiglu_reference(const float* gate, const float* up, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ggml_silu(gate[i]) * up[i];
}

}  // namespace

SwigluFn swiglu_function(Isa isa) {
  SwigluFn fast = nullptr;
  if (isa == Isa::Avx2) fast = avx2::swiglu_function();
  if (isa == Isa::Avx512) fast = avx512::swiglu_function();
  return fast != nullptr ? fast : swiglu_reference;
}

AttendFn attend_function(Isa isa, size_t head_dim) {
  AttendFn fast = nullptr;
  if (isa == Isa::Avx2) fast = avx2::attend_function(head_dim);
  if (isa == Isa::Avx512) fast = avx512::attend_function(head_dim);
  return fast != nullptr ? fast : attend_reference;
}

}  // namespace quip::kernels
