#include "engine/forward_ref.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/dequantize.h"
#include "kernels/half.h"

namespace quip::engine {

namespace {

// Row r of a weight as floats.
std::vector<float> row(const Weight& w, uint64_t r) {
  std::vector<float> out(w.n_in);
  const gguf::TensorInfo& t = *w.tensor;
  const uint64_t row_bytes = w.n_in / t.type.block_size * t.type.block_bytes;
  kernels::dequantize_row(t.type.type, t.data.data() + r * row_bytes, out.data(), w.n_in);
  return out;
}

// A vector weight as floats, or empty when the model lacks it.
std::vector<float> vec(const Weight& w) {
  return w ? row(w, 0) : std::vector<float>();
}

float round_f16(float v) {
  return kernels::f16_to_f32(kernels::f32_to_f16(v));
}

// The activations as llama.cpp's dot products see them: ggml converts x to
// the weight type's "vec_dot_type" first (ggml-cpu type_traits): 8-bit blocks
// of 32 with a half-precision scale for the 32-element quants (Q8_0/Q8_1),
// 8-bit blocks of 256 with a float scale for the K-quants and IQ4_XS (Q8_K),
// half or bfloat16 for F16 and BF16 weights. Doing the same keeps this
// reference within the tolerances of ../shared/README.md.
std::vector<float> as_dot_operand(gguf::GgmlType type, std::span<const float> x) {
  using gguf::GgmlType;
  std::vector<float> out(x.begin(), x.end());
  switch (type) {
    case GgmlType::F32: break;
    case GgmlType::F16:
      for (float& v : out) v = round_f16(v);
      break;
    case GgmlType::BF16:
      for (float& v : out) {
        // Round to nearest even, as ggml's fp32 -> bf16.
        uint32_t b = kernels::bits_from_f32(v);
        b = (b + (0x7FFF + ((b >> 16) & 1))) & 0xFFFF0000u;
        v = kernels::f32_from_bits(b);
      }
      break;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
      for (size_t b = 0; b + 256 <= out.size(); b += 256) {
        float max = 0, amax = 0;
        for (size_t i = b; i < b + 256; ++i) {
          if (std::fabs(out[i]) > amax) amax = std::fabs(out[i]), max = out[i];
        }
        if (amax == 0) continue;
        const float iscale = -127.0f / max;
        for (size_t i = b; i < b + 256; ++i) {
          const float q = std::min(127.0f, std::nearbyint(iscale * out[i]));
          out[i] = q / iscale;
        }
      }
      break;
    default:  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL
      for (size_t b = 0; b + 32 <= out.size(); b += 32) {
        float amax = 0;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(out[i]));
        // As ggml's x86 quantize_row_q8_0: scale 127/amax, round half to even.
        const float d = amax / 127.0f;
        const float id = amax != 0 ? 127.0f / amax : 0.0f;
        const float dh = round_f16(d);
        for (size_t i = b; i < b + 32; ++i) out[i] = dh * std::nearbyint(out[i] * id);
      }
      break;
  }
  return out;
}

// y = W x: y[j] = dot(row j of W, x).
std::vector<float> matvec(const Weight& w, std::span<const float> x_in) {
  CHECK(x_in.size() == w.n_in);
  const std::vector<float> x = as_dot_operand(w.tensor->type.type, x_in);
  std::vector<float> y(w.n_out);
  for (uint64_t j = 0; j < w.n_out; ++j) {
    const std::vector<float> r = row(w, j);
    double acc = 0;
    for (uint64_t i = 0; i < w.n_in; ++i) acc += double{r[i]} * x[i];
    y[j] = static_cast<float>(acc);
  }
  return y;
}

void add(std::span<float> x, std::span<const float> y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight.
void rms_norm(std::span<float> x, std::span<const float> weight, float eps) {
  double ss = 0;
  for (float v : x) ss += double{v} * v;
  const auto scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps));
  for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * scale * weight[i];
}

// Rotary position embedding (Su et al. 2021, RoFormer) of one head at `pos`:
// pair i turns by pos * base^(-2i / n_rot) (divided by freq_factors[i] when
// the model has them, Llama 3.1's long-context scaling).
void rope(std::span<float> head, size_t pos, const Hparams& hp, RopeStyle style,
          std::span<const float> freq_factors) {
  const uint32_t half = hp.n_rot / 2;
  for (uint32_t i = 0; i < half; ++i) {
    double theta = static_cast<double>(pos) *
                   std::pow(double{hp.rope_base}, -2.0 * i / static_cast<double>(hp.n_rot));
    if (!freq_factors.empty()) theta /= freq_factors[i];
    const double c = std::cos(theta), s = std::sin(theta);
    const size_t a = style == RopeStyle::Adjacent ? 2 * i : i;
    const size_t b = style == RopeStyle::Adjacent ? 2 * i + 1 : i + half;
    const double x0 = head[a], x1 = head[b];
    head[a] = static_cast<float>(x0 * c - x1 * s);
    head[b] = static_cast<float>(x0 * s + x1 * c);
  }
}

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

}  // namespace

std::vector<double> log_softmax(std::span<const float> logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(double{v} - max);
  const double log_sum = std::log(sum) + max;
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double{logits[i]} - log_sum;
  return out;
}

ReferenceForward::ReferenceForward(const Model& model)
    : m_(model),
      output_norm_(vec(model.output_norm())),
      freq_factors_(vec(model.rope_freqs())),
      k_cache_(model.hparams().n_layer),
      v_cache_(model.hparams().n_layer) {
  for (const Layer& l : model.layers()) {
    layers_.push_back(LayerVectors{vec(l.attn_norm), vec(l.bq), vec(l.bk), vec(l.bv), vec(l.q_norm),
                                   vec(l.k_norm), vec(l.ffn_norm)});
  }
}

std::span<const float> ReferenceForward::step(int32_t token) {
  const Hparams& hp = m_.hparams();
  CHECK(token >= 0 && static_cast<uint32_t>(token) < hp.n_vocab);
  const uint32_t hd = hp.head_dim, kv_dim = hp.n_head_kv * hd, group = hp.n_head / hp.n_head_kv;

  std::vector<float> x = row(m_.token_embd(), static_cast<uint64_t>(token));  // (n_embd)
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const Layer& l = m_.layers()[il];

    // Attention block.
    std::vector<float> h = x;
    const LayerVectors& lv = layers_[il];
    rms_norm(h, lv.attn_norm, hp.rms_eps);
    std::vector<float> q = matvec(l.wq, h);  // (n_head * head_dim)
    std::vector<float> k = matvec(l.wk, h);  // (n_head_kv * head_dim)
    std::vector<float> v = matvec(l.wv, h);
    if (!lv.bq.empty()) add(q, lv.bq);
    if (!lv.bk.empty()) add(k, lv.bk);
    if (!lv.bv.empty()) add(v, lv.bv);
    for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
      std::span<float> head(q.data() + hh * hd, hd);
      if (!lv.q_norm.empty()) rms_norm(head, lv.q_norm, hp.rms_eps);
      rope(head, pos_, hp, m_.arch().rope, freq_factors_);
    }
    for (uint32_t hh = 0; hh < hp.n_head_kv; ++hh) {
      std::span<float> head(k.data() + hh * hd, hd);
      if (!lv.k_norm.empty()) rms_norm(head, lv.k_norm, hp.rms_eps);
      rope(head, pos_, hp, m_.arch().rope, freq_factors_);
    }
    // The cache holds half precision, as llama.cpp's (F16) does.
    for (float& e : k) e = round_f16(e);
    for (float& e : v) e = round_f16(e);
    k_cache_[il].insert(k_cache_[il].end(), k.begin(), k.end());
    v_cache_[il].insert(v_cache_[il].end(), v.begin(), v.end());
    for (float& e : q) e = round_f16(e);  // Q meets the F16 cache as F16

    // Scaled dot-product attention (Vaswani et al. 2017), causal, with
    // grouped-query heads (Ainslie et al. 2023): head hh reads KV head
    // hh / group. Computed as ggml's CPU flash attention does with an F16
    // cache (llama.cpp's default, which the reference outputs were made
    // with): an online softmax (Milakov & Gimelshein 2018) whose running
    // sum of V rows is kept in half precision. The tiny random models are
    // sensitive enough that a float accumulator misses their tolerance.
    const size_t n_pos = pos_ + 1;
    std::vector<float> attn(size_t{hp.n_head} * hd, 0.0f);
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
      const uint32_t kvh = hh / group;
      float max = -INFINITY, sum = 0;
      std::vector<float> acc(hd, 0.0f);  // values of half precision
      for (size_t p = 0; p < n_pos; ++p) {
        const float* kp = k_cache_[il].data() + p * kv_dim + kvh * hd;
        const float* vp = v_cache_[il].data() + p * kv_dim + kvh * hd;
        double dot = 0;
        for (uint32_t d = 0; d < hd; ++d) dot += double{q[hh * hd + d]} * kp[d];
        const float s = static_cast<float>(dot) * scale;
        float old_scale = 1.0f, weight = 1.0f;
        if (s > max) {
          old_scale = std::exp(max - s);
          max = s;
          for (float& a : acc) a = round_f16(a * old_scale);
        } else {
          weight = std::exp(s - max);
        }
        for (uint32_t d = 0; d < hd; ++d) acc[d] = round_f16(acc[d] + vp[d] * weight);
        sum = sum * old_scale + weight;
      }
      for (uint32_t d = 0; d < hd; ++d) attn[hh * hd + d] = acc[d] / sum;
    }
    add(x, matvec(l.wo, attn));

    // Feed-forward block: SwiGLU (Shazeer 2020), down(silu(gate(h)) * up(h)).
    h = x;
    rms_norm(h, lv.ffn_norm, hp.rms_eps);
    std::vector<float> gate = matvec(l.w_gate, h);
    const std::vector<float> up = matvec(l.w_up, h);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
    add(x, matvec(l.w_down, gate));
  }
  rms_norm(x, output_norm_, hp.rms_eps);
  logits_ = matvec(m_.output(), x);
  ++pos_;
  return logits_;
}

}  // namespace quip::engine
