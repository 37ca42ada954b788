#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/activation.h"
#include "kernels/dot_x86.h"
#include "kernels/half.h"

namespace quip::kernels {

namespace {

void attend_one(HeadDims dims, size_t n, const float* q, const uint16_t* k, const uint16_t* v,
                size_t stride, Scores scores, float* out, float* partial) {
  thread_local std::vector<float> acc, key;  // acc: values of half precision
  acc.assign(dims.value, 0.0f);
  key.resize(dims.key);
  float max = -INFINITY, sum = 0;
  for (size_t p = 0; p < n; ++p) {
    const uint16_t* kp = k + p * stride;
    const uint16_t* vp = v + p * stride;
    for (size_t d = 0; d < dims.key; ++d) key[d] = f16_to_f32(kp[d]);
    const float s = scores(ggml_dot_f16(key.data(), q, dims.key));
    float old_scale = 1.0f, weight = 1.0f;
    if (s > max) {
      old_scale = std::exp(max - s);
      max = s;
      for (float& a : acc) a = round_f16(a * old_scale);
    } else {
      weight = std::exp(s - max);
    }
    for (size_t d = 0; d < dims.value; ++d) {
      acc[d] = round_f16(std::fma(f16_to_f32(vp[d]), weight, acc[d]));
    }
    sum = std::fma(sum, old_scale, weight);  // ggml's S*ms + vs, contracted
  }
  if (partial != nullptr) {  // the chunk's state, for merge_attention_chunks
    partial[0] = max, partial[1] = sum;
    std::copy(acc.begin(), acc.end(), out);
    return;
  }
  const float inv = 1.0f / sum;  // ggml scales by 1 / sum
  for (size_t d = 0; d < dims.value; ++d) out[d] = acc[d] * inv;
}

void attend_reference(HeadDims dims, size_t n_heads, size_t n, const float* q, const uint16_t* k,
                      const uint16_t* v, size_t stride, Scores scores, float* out, float* partial) {
  for (size_t h = 0; h < n_heads; ++h) {
    attend_one(dims, n, q + h * dims.key, k, v, stride, scores, out + h * dims.value,
               partial != nullptr ? partial + 2 * h : nullptr);
  }
}

// attends_in_tiles's arithmetic, one query at a time.
void attend_tiles_reference(HeadDims dims, size_t n_q, size_t pos0, const float* q, size_t q_stride,
                            const uint16_t* k, const uint16_t* v, size_t kv_stride, Scores scores,
                            size_t window, float* out, size_t out_stride, float* partial) {
  constexpr size_t kTile = kAttentionKeyTile;
  thread_local std::vector<float> acc;
  acc.resize(dims.value);
  for (size_t i = 0; i < n_q; ++i) {
    const float* qi = q + i * q_stride;
    const size_t seen = pos0 + i + 1, start = first_seen(pos0 + i, window);
    std::fill(acc.begin(), acc.end(), 0.0f);
    float max = -INFINITY, sum = 0;
    for (size_t tile = start / kTile * kTile; tile < seen; tile += kTile) {
      // The positions of the tile it sees: lo..m-1.
      const size_t m = std::min(kTile, seen - tile), lo = start > tile ? start - tile : 0;
      float s[kTile], tile_max = -INFINITY;
      for (size_t j = 0; j < kTile; ++j) {
        s[j] = -INFINITY;
        if (j < lo || j >= m) continue;
        const uint16_t* kj = k + (tile + j) * kv_stride;
        float dot = 0;
        for (size_t d = 0; d < dims.key; ++d) dot = std::fma(qi[d], f16_to_f32(kj[d]), dot);
        s[j] = scores(dot);
        tile_max = std::max(tile_max, s[j]);
      }
      const float new_max = std::max(max, tile_max);
      if (new_max > max) {
        const float rescale = std::exp(max - new_max);
        for (float& a : acc) a *= rescale;
        sum *= rescale;
      }
      max = new_max;
      float e[kTile];
      for (size_t j = 0; j < kTile; ++j) e[j] = ggml_expf(s[j] - max);
      double tile_sum = 0;
      for (size_t c = 0; c < kTile; c += 16) {
        float lanes[16];
        std::copy(e + c, e + c + 16, lanes);
        tile_sum += reduce_add_16(lanes);
      }
      sum = static_cast<float>(sum + tile_sum);
      for (size_t j = lo; j < m; ++j) {
        const uint16_t* vj = v + (tile + j) * kv_stride;
        for (size_t d = 0; d < dims.value; ++d) {
          acc[d] = std::fma(e[j], f16_to_f32(vj[d]), acc[d]);
        }
      }
    }
    if (partial != nullptr) {
      partial[2 * i] = max, partial[2 * i + 1] = sum;
      std::copy(acc.begin(), acc.end(), out + i * out_stride);
      continue;
    }
    const float inv = sum == 0 ? 0.0f : 1.0f / sum;
    for (size_t d = 0; d < dims.value; ++d) out[i * out_stride + d] = acc[d] * inv;
  }
}

void swiglu_reference(const float* gate, const float* up, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ggml_silu(gate[i]) * up[i];
}

}  // namespace

void geglu(const float* gate, const float* up, float* out, size_t n) {
  // ggml's table: the GELU of every half, rounded to half.
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (size_t h = 0; h < t.size(); ++h) {
      t[h] = f32_to_f16(ggml_gelu_tanh(f16_to_f32(static_cast<uint16_t>(h))));
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) {
    const float x = gate[i];
    if (x <= -10.0f) {
      out[i] = 0.0f;
    } else if (x >= 10.0f) {
      out[i] = x * up[i];
    } else {
      out[i] = f16_to_f32(table[f32_to_f16(x)]) * up[i];
    }
  }
}

void merge_attention_chunks(size_t value_dim, size_t n_chunks, const float* partials,
                            size_t partial_stride, const float* accs, size_t acc_stride,
                            float* out) {
  float max = -INFINITY, sum = 0;
  std::fill(out, out + value_dim, 0.0f);
  for (size_t c = 0; c < n_chunks; ++c) {
    const float* partial = partials + c * partial_stride;
    const float chunk_max = partial[0], chunk_sum = partial[1];
    if (chunk_sum == 0) continue;
    const float new_max = std::fmax(max, chunk_max);
    const float scale_old = std::exp(max - new_max), scale_new = std::exp(chunk_max - new_max);
    const float* acc = accs + c * acc_stride;
    // ggml's a * scale_old + b * scale_new, contracted by GCC as below.
    for (size_t d = 0; d < value_dim; ++d) {
      out[d] = std::fma(out[d], scale_old, acc[d] * scale_new);
    }
    sum = std::fma(sum, scale_old, chunk_sum * scale_new);
    max = new_max;
  }
  if (sum != 0) {
    const float inv = 1.0f / sum;
    for (size_t d = 0; d < value_dim; ++d) out[d] *= inv;
  }
}

namespace {

// The kernel of `isa`'s table (avx2's or avx512's getter), or the
// reference where it has none.
template <class Fn>
Fn chosen(Isa isa, Fn (*avx2)(), Fn (*avx512)(), Fn reference) {
  Fn fast = nullptr;
  if (isa == Isa::Avx2) fast = avx2();
  if (isa == Isa::Avx512) fast = avx512();
  return fast != nullptr ? fast : reference;
}

}  // namespace

SwigluFn swiglu_function(Isa isa) {
  return chosen(isa, avx2::swiglu_function, avx512::swiglu_function, swiglu_reference);
}

DeltaRuleFn delta_rule_function(Isa isa) {
  return chosen(isa, avx2::delta_rule_function, avx512::delta_rule_function, delta_rule_reference);
}

CausalConvFn causal_conv_function(Isa isa) {
  return chosen(isa, avx2::causal_conv_function, avx512::causal_conv_function,
                causal_conv_reference);
}

SiluRowFn silu_row_function(Isa isa) {
  return chosen(isa, avx2::silu_row_function, avx512::silu_row_function, silu_row_reference);
}

AttendTilesFn attend_tiles_function(Isa isa) {
  return chosen(isa, avx2::attend_tiles_function, avx512::attend_tiles_function,
                attend_tiles_reference);
}

AttendFn attend_function(Isa isa, HeadDims dims) {
  AttendFn fast = nullptr;
  if (isa == Isa::Avx2) fast = avx2::attend_function(dims);
  if (isa == Isa::Avx512) fast = avx512::attend_function(dims);
  return fast != nullptr ? fast : attend_reference;
}

}  // namespace quip::kernels
