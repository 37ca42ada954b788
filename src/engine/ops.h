// The element-wise steps of a layer, in the float arithmetic of ggml's CPU
// backend: the tiny random test models amplify last-bit differences, so the
// order of operations and the exp approximation are part of matching
// llama.cpp. Shared by Forward and ReferenceForward. Pure functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model.h"
#include "kernels/activation.h"

namespace quip::engine::ops {

// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight, in
// the steps of ggml_compute_forward_rms_norm_f32: each square rounded to
// float and summed in double, the mean and 1 / sqrtf(mean + eps) in float,
// then (x * scale) * weight (the separate ggml_mul; none where weight is
// null). out may be x.
inline void rms_norm(const float* x, const float* weight, float* out, size_t n, float eps) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += static_cast<double>(x[i] * x[i]);
  const auto mean = static_cast<float>(ss / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (weight == nullptr) {  // a norm without a weight (gemma4's values)
    for (size_t i = 0; i < n; ++i) out[i] = x[i] * scale;
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
}

// The cos and sin of the rotary embedding (Su et al. 2021, RoFormer) at
// `pos`, n_rot / 2 of each: pair i turns by freq_scale * pos *
// base^(-2i / n_rot), divided by freq_factors[i] before the freq_scale when
// the model has them (Llama 3.1's long context scaling), cos and sin times
// mscale; with YaRN, as RopeFrequencies says. As ggml_rope_cache_init and
// rope_yarn, in float: theta starts at pos and is multiplied by theta_scale
// = powf(base, -2 / n_rot) once per pair (a double-precision angle differs
// by ~1e-5 at later positions, which the test models notice), and the mix
// a * (1 - r) + b * r fused as GCC builds ggml.
inline void rope_angles(size_t pos, const RopeFrequencies& rope, uint32_t n_rot,
                        const float* freq_factors, float* cos_out, float* sin_out,
                        const uint8_t* at_origin = nullptr) {
  const float theta_scale = std::pow(rope.base, -2.0f / static_cast<float>(n_rot));
  float mscale = rope.mscale;
  if (rope.ext_factor != 0.0f) {
    mscale *= std::fma(0.1f, std::log(1.0f / rope.freq_scale), 1.0f);
  }
  float theta = static_cast<float>(pos);
  for (uint32_t i = 0; i < n_rot / 2; ++i, theta *= theta_scale) {
    // A pair at the origin turns as position 0 would (ggml's multimodal
    // sections whose position a text token leaves at 0).
    const float turned = at_origin != nullptr && at_origin[i] ? 0.0f : theta;
    const float extrap = freq_factors != nullptr ? turned / freq_factors[i] : turned;
    const float interp = rope.freq_scale * extrap;
    float t = interp;
    if (rope.ext_factor != 0.0f) {
      // ggml's rope_yarn_ramp over the pair index.
      const float y = (static_cast<float>(i) - rope.corr_low) /
                      std::max(0.001f, rope.corr_high - rope.corr_low);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rope.ext_factor;
      t = std::fma(interp, 1.0f - ramp_mix, extrap * ramp_mix);
    }
    cos_out[i] = std::cos(t) * mscale;
    sin_out[i] = std::sin(t) * mscale;
  }
}

// The sum of 16 floats as GCC's _mm512_reduce_add_ps adds them: halves,
// then quarters, then the two pairs.
inline float reduce_add_16(const float* v) {
  float eighths[8], quarters[4];
  for (size_t j = 0; j < 8; ++j) eighths[j] = v[j + 8] + v[j];
  for (size_t j = 0; j < 4; ++j) quarters[j] = eighths[j + 4] + eighths[j];
  return (quarters[0] + quarters[2]) + (quarters[1] + quarters[3]);
}

// LayerNorm (Ba et al. 2016) without a bias: (x - mean) / sqrt(var +
// eps) * weight, in the steps of ggml_compute_forward_norm_f32 in
// llama.cpp's AVX-512 build: the mean from a double sum, rounded to float;
// the squares of x - mean in float, reduced 16 at a time in
// _mm512_reduce_add_ps's tree (GCC's: halves, quarters, then pairs) and
// each group's float added into a double, the last n % 16 one by one; the
// variance that sum / n in float; then (x - mean) * 1 / sqrtf(var + eps)
// and the separate ggml_mul by the weights. out may be x.
inline void layer_norm(const float* x, const float* weight, float* out, size_t n, float eps) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  double squares = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float sq[16];
    for (size_t j = 0; j < 16; ++j) {
      const float d = x[i + j] - mean;
      out[i + j] = d;
      sq[j] = d * d;
    }
    squares += static_cast<double>(reduce_add_16(sq));
  }
  for (; i < n; ++i) {
    const float d = x[i] - mean;
    out[i] = d;
    squares += static_cast<double>(d * d);
  }
  const auto variance = static_cast<float>(squares / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(variance + eps);
  for (size_t j = 0; j < n; ++j) out[j] = (out[j] * scale) * weight[j];
}

// softmax(x) into y, as ggml_compute_forward_soft_max_f32 (scale 1, no
// mask) in llama.cpp's AVX-512 build: the max; exp(x - max) 16 at a time
// by ggml_v_expf, each group's sum (reduce_add_16) added into a double,
// the last n % 16 by libm's expf one by one; then y times 1 / sum,
// rounded to float.
inline void softmax(const float* x, float* y, size_t n) {
  float max = -INFINITY;
  for (size_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t j = 0; j < 16; ++j) y[i + j] = kernels::ggml_expf(x[i + j] - max);
    sum += static_cast<double>(reduce_add_16(y + i));
  }
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - max);
    sum += static_cast<double>(y[i]);
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (size_t j = 0; j < n; ++j) y[j] *= inv;
}

// A mixture of experts' choice for one token (llama.cpp's build_moe_ffn):
// the n_used experts of the largest scores (an argsort, descending; ties
// in expert order) and their weights, in that order. With Softmax gating
// the scores are the softmax of the router's logits (into probs) and the
// weights the chosen ones' probabilities; with Sigmoid, likewise each
// logit's sigmoid, 1 / (1 + expf(-x)); with SoftmaxChosen, the logits
// themselves, and the weights a softmax over the chosen logits alone. A
// selection bias (n_expert values, or nullptr) is added to the scores for
// the choice only. Normalized, the weights are then over their sum (a
// double sum rounded to float, at least 2^-14); then times the spec's
// scale, where it has one.
inline void choose_experts(const MoeSpec& spec, const float* logits, const float* selection_bias,
                           size_t n_expert, size_t n_used, float* probs, int32_t* chosen,
                           float* weights) {
  if (spec.gating == Gating::Softmax) {
    softmax(logits, probs, n_expert);
  } else if (spec.gating == Gating::Sigmoid) {
    for (size_t e = 0; e < n_expert; ++e) probs[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  } else {
    std::copy(logits, logits + n_expert, probs);
  }
  thread_local std::vector<float> selection;
  const float* scores = probs;
  if (selection_bias != nullptr) {
    selection.resize(n_expert);
    for (size_t e = 0; e < n_expert; ++e) selection[e] = probs[e] + selection_bias[e];
    scores = selection.data();
  }
  thread_local std::vector<int32_t> order;
  order.resize(n_expert);
  for (size_t e = 0; e < n_expert; ++e) order[e] = static_cast<int32_t>(e);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return scores[a] > scores[b]; });
  for (size_t k = 0; k < n_used; ++k) {
    chosen[k] = order[k];
    weights[k] = probs[order[k]];
  }
  if (spec.gating == Gating::SoftmaxChosen) softmax(weights, weights, n_used);
  if (spec.normalize) {
    double sum = 0;
    for (size_t k = 0; k < n_used; ++k) sum += static_cast<double>(weights[k]);
    const float total = std::max(static_cast<float>(sum), 6.103515625e-5f);
    for (size_t k = 0; k < n_used; ++k) weights[k] /= total;
  }
  if (spec.weights_scale != 0.0f && spec.weights_scale != 1.0f) {
    for (size_t k = 0; k < n_used; ++k) weights[k] *= spec.weights_scale;
  }
}

// A mixture of experts' output for one token: the n_used experts' outputs
// (n_embd each, in the order of choice) times their weights, added in that
// order, as llama.cpp's build_moe_ffn adds its views. out may not alias.
inline void join_experts(const float* experts, const float* weights, size_t n_used, size_t n_embd,
                         float* out) {
  for (size_t k = 0; k < n_used; ++k) {
    const float* expert = experts + k * n_embd;
    for (size_t i = 0; i < n_embd; ++i) {
      const float weighted = expert[i] * weights[k];
      out[i] = k == 0 ? weighted : out[i] + weighted;
    }
  }
}

// qwen2moe's shared-expert gate, sigmoid(x), as llama.cpp computes it:
// silu(x) / x, the SiLU ggml's scalar one for a row of one element,
// x / (1 + expf(-x)) with libm's expf.
inline float shared_expert_gate(float x) {
  return x / (1.0f + std::exp(-x)) / x;
}

// A block's or the output's norm: LayerNorm where the model has them
// (Hparams::layer_norm), else RMSNorm.
inline void block_norm(const Hparams& hp, const float* x, const float* weight, float* out,
                       size_t n) {
  if (hp.layer_norm) {
    layer_norm(x, weight, out, n, hp.norm_eps);
  } else {
    rms_norm(x, weight, out, n, hp.rms_eps);
  }
}

// Soft-capping (Gemma 2's final logits): x = cap * tanh(x / cap), as
// ggml's scale by 1 / cap, tanh, and scale by cap.
inline void softcap(float* x, size_t n, float cap) {
  const float inv = 1.0f / cap;
  for (size_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

// Rotates one head by the angles of rope_angles: pairs (2i, 2i+1) for
// llama (whose converter permuted the Q/K rows), (i, i + n_rot/2) for NeoX.
// As ggml's rotate_pairs built with fp-contract=fast: the first product of
// each output fused into an fma.
inline void rope(float* head, const float* c, const float* s, uint32_t n_rot, RopeStyle style) {
  const uint32_t half = n_rot / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const size_t a = style == RopeStyle::Adjacent ? 2 * i : i;
    const size_t b = style == RopeStyle::Adjacent ? 2 * i + 1 : i + half;
    const float x0 = head[a], x1 = head[b];
    head[a] = std::fma(x0, c[i], -(x1 * s[i]));
    head[b] = std::fma(x0, s[i], x1 * c[i]);
  }
}

// SiLU as ggml's (kernels/activation.h).
inline float silu(float x) {
  return kernels::ggml_silu(x);
}

// ggml_sigmoid, 1 / (1 + expf(-x)) with libm's expf.
inline float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

// ggml_softplus, ln(1 + e^x), x itself beyond 20.
inline float softplus(float x) {
  return x > 20.0f ? x : std::log(1.0f + std::exp(x));
}

// x / max(|x|, eps) in place, as ggml_compute_forward_l2_norm_f32: the
// squares rounded to float and summed in double, sqrtf of that sum
// rounded to float.
inline void l2_norm(float* x, size_t n, float eps) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(ss)), eps);
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace quip::engine::ops
