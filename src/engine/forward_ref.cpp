#include "engine/forward_ref.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "engine/ops.h"
#include "kernels/attention.h"
#include "kernels/delta_net.h"
#include "kernels/dequantize.h"
#include "kernels/dot_float.h"
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
      for (float& v : out) v = kernels::round_f16(v);
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
        const float dh = kernels::round_f16(d);
        for (size_t i = b; i < b + 32; ++i) out[i] = dh * std::nearbyint(out[i] * id);
      }
      break;
  }
  return out;
}

// Activations quantized to Q8_K as ggml's quantize_row_q8_K_ref does: per
// 256 values, iscale = -127 / (the value of largest magnitude), q =
// min(127, round-half-even(iscale * x)), d = 1 / iscale (a float, so d * q
// is not q / iscale), and bsums = the sums of q over each 16 values.
struct Q8K {
  std::vector<int8_t> q;
  std::vector<float> d;        // per 256
  std::vector<int32_t> bsums;  // per 16
};

Q8K quantize_q8_k(std::span<const float> x) {
  Q8K out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 256),
          std::vector<int32_t>(x.size() / 16)};
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* xb = x.data() + b * 256;
    float max = 0, amax = 0;
    for (size_t i = 0; i < 256; ++i) {
      if (std::fabs(xb[i]) > amax) amax = std::fabs(xb[i]), max = xb[i];
    }
    if (amax == 0) continue;
    const float iscale = -127.0f / max;
    for (size_t i = 0; i < 256; ++i) {
      out.q[b * 256 + i] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * xb[i])));
    }
    for (size_t g = 0; g < 16; ++g) {
      int32_t sum = 0;
      for (size_t i = 0; i < 16; ++i) sum += out.q[b * 256 + g * 16 + i];
      out.bsums[b * 16 + g] = sum;
    }
    out.d[b] = 1.0f / iscale;
  }
  return out;
}

// ggml's AVX2 K-quant dot products keep eight int32 lanes per 256-block
// and accumulate each lane in float, acc[k] = fma(d, lane[k], acc[k]),
// then add the lanes as hsum_float_8 does: ((a4+a0)+(a6+a2))+((a5+a1)+(a7+a3)).
// The models are sensitive enough that this rounding order matters.
float hsum_float_8(const float (&a)[8]) {
  return ((a[4] + a[0]) + (a[6] + a[2])) + ((a[5] + a[1]) + (a[7] + a[3]));
}

// One Q6_K row against Q8_K activations, as ggml_vec_dot_q6_K_q8_K (AVX2):
// within each 32 values, lane k takes values 4k..4k+3 times their scale,
// with the 6-bit quants unsigned (0..63); the -32 offset is subtracted per
// lane as 32 * (bsums[2k] * scale[2k] + bsums[2k+1] * scale[2k+1]).
float dot_q6_k(const uint8_t* row, const Q8K& y, size_t n) {
  float acc[8] = {};
  for (size_t b = 0; b < n / 256; ++b) {
    const uint8_t* blk = row + b * 210;
    const uint8_t* ql = blk;
    const uint8_t* qh = blk + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const float d = y.d[b] * kernels::f16_to_f32(static_cast<uint16_t>(blk[208] | blk[209] << 8));
    const int8_t* q8 = y.q.data() + b * 256;
    int32_t lane[8] = {};
    for (size_t e = 0; e < 256; ++e) {
      // Element e of the block: half h = e / 128, then l = e % 32 within
      // quarter e % 128 / 32 (ql low/high nibble, qh bit pair).
      const size_t h = e / 128, quarter = e % 128 / 32, l = e % 32;
      const uint8_t lo = ql[h * 64 + (quarter & 1) * 32 + l];
      const int nib = quarter < 2 ? lo & 0xF : lo >> 4;
      const int hi = (qh[h * 32 + l] >> (2 * quarter)) & 3;
      lane[e % 32 / 4] += sc[e / 16] * (nib | hi << 4) * q8[e];
    }
    for (size_t k = 0; k < 8; ++k) {
      lane[k] -=
          32 * (y.bsums[b * 16 + 2 * k] * sc[2 * k] + y.bsums[b * 16 + 2 * k + 1] * sc[2 * k + 1]);
      acc[k] = std::fma(d, static_cast<float>(lane[k]), acc[k]);
    }
  }
  return hsum_float_8(acc);
}

// Activations quantized to Q8_1 as ggml's x86 quantize_row_q8_1 does: per
// 32 values d = amax / 127, q = round-half-even(x * 127 / amax), and both d
// and s = d * sum(q) stored as half (s from the unrounded d).
struct Q8_1 {
  std::vector<int8_t> q;
  std::vector<float> d, s;  // per 32
};

Q8_1 quantize_q8_1(std::span<const float> x) {
  Q8_1 out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 32),
           std::vector<float>(x.size() / 32)};
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (size_t i = b * 32; i < b * 32 + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = amax != 0 ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (size_t i = b * 32; i < b * 32 + 32; ++i) {
      out.q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
      sum += out.q[i];
    }
    out.d[b] = kernels::round_f16(d);
    out.s[b] = kernels::round_f16(d * static_cast<float>(sum));
  }
  return out;
}

// One Q4_1 or Q5_1 row against Q8_1 activations, as ggml_vec_dot_q4_1_q8_1
// and ggml_vec_dot_q5_1_q8_1 (AVX2): lane k of each 32-block holds the
// integer dot of values 4k..4k+3 (unsigned quants), accumulated per lane as
// fma(d_w * d_y, lane, acc); the offsets add m * s per block to a separate
// float sum, and the result is hsum_float_8(acc) + that sum.
float dot_q4_1_q5_1(gguf::GgmlType type, const uint8_t* row, const Q8_1& y, size_t n) {
  const bool five = type == gguf::GgmlType::Q5_1;
  const size_t block_bytes = five ? 24 : 20;
  float acc[8] = {};
  float summs = 0;
  for (size_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = row + b * block_bytes;
    const float d = kernels::f16_to_f32(static_cast<uint16_t>(blk[0] | blk[1] << 8));
    const float m = kernels::f16_to_f32(static_cast<uint16_t>(blk[2] | blk[3] << 8));
    uint32_t qh = 0;
    if (five) qh = blk[4] | blk[5] << 8 | blk[6] << 16 | static_cast<uint32_t>(blk[7]) << 24;
    const uint8_t* qs = blk + (five ? 8 : 4);
    summs = std::fma(m, y.s[b], summs);
    int32_t lane[8] = {};
    for (size_t e = 0; e < 32; ++e) {
      int q = e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4;
      if (five) q |= static_cast<int>((qh >> e) & 1) << 4;
      lane[e / 4] += q * y.q[b * 32 + e];
    }
    const float dd = d * y.d[b];
    for (size_t k = 0; k < 8; ++k) acc[k] = std::fma(dd, static_cast<float>(lane[k]), acc[k]);
  }
  return hsum_float_8(acc) + summs;
}

// One Q8_0 or Q5_0 row against Q8_0 activations, as ggml_vec_dot_q8_0_q8_0
// and ggml_vec_dot_q5_0_q8_0 (AVX2, also taken on AVX-512): per 32-block,
// lane k holds the exact integer dot of values 4k..4k+3 (signed quants,
// Q5_0's already minus 16), accumulated per lane as
// acc[k] = fma(d_w * d_x, float(lane[k]), acc[k]) with d_w * d_x a float
// product of the two half scales; the result is hsum_float_8(acc).
// llamafile's tinyBLAS_Q0_AVX (prompt batches) computes the same numbers.
float dot_q8_0_q5_0(gguf::GgmlType type, const uint8_t* row, std::span<const float> x, size_t n) {
  const bool five = type == gguf::GgmlType::Q5_0;
  const size_t block_bytes = five ? 22 : 34;
  float acc[8] = {};
  for (size_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = row + b * block_bytes;
    const float dw = kernels::f16_to_f32(static_cast<uint16_t>(blk[0] | blk[1] << 8));
    // x holds d_x * q exactly (as_dot_operand): recover d_x and q.
    float amax = 0;
    for (size_t e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[b * 32 + e]));
    if (amax == 0) continue;
    int32_t lane[8] = {};
    float dx = 0;
    for (size_t e = 0; e < 32; ++e) {
      if (std::fabs(x[b * 32 + e]) == amax) dx = amax;  // |q| = 127 there
    }
    dx = dx / 127.0f;  // exact: amax = d_x * 127 with d_x a half
    for (size_t e = 0; e < 32; ++e) {
      const int qx = static_cast<int>(std::nearbyint(x[b * 32 + e] / dx));
      int qw;
      if (five) {
        const uint32_t qh =
            blk[2] | blk[3] << 8 | blk[4] << 16 | static_cast<uint32_t>(blk[5]) << 24;
        const uint8_t* qs = blk + 6;
        qw = (e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4) | static_cast<int>((qh >> e) & 1) << 4;
        qw -= 16;
      } else {
        qw = static_cast<int8_t>(blk[2 + e]);
      }
      lane[e / 4] += qw * qx;
    }
    const float d = dw * dx;
    for (size_t k = 0; k < 8; ++k) acc[k] = std::fma(d, static_cast<float>(lane[k]), acc[k]);
  }
  return hsum_float_8(acc);
}

// y = W x: y[j] = dot(row j of W, x).
std::vector<float> matvec(const Weight& w, std::span<const float> x_in) {
  CHECK(x_in.size() == w.n_in);
  const gguf::TensorInfo& t = *w.tensor;
  const uint64_t row_bytes = w.n_in / t.type.block_size * t.type.block_bytes;
  if (t.type.type == gguf::GgmlType::Q6_K) {
    const Q8K xq = quantize_q8_k(x_in);
    std::vector<float> y(w.n_out);
    for (uint64_t j = 0; j < w.n_out; ++j)
      y[j] = dot_q6_k(reinterpret_cast<const uint8_t*>(t.data.data()) + j * row_bytes, xq, w.n_in);
    return y;
  }
  if (t.type.type == gguf::GgmlType::Q4_1 || t.type.type == gguf::GgmlType::Q5_1) {
    const Q8_1 xq = quantize_q8_1(x_in);
    std::vector<float> y(w.n_out);
    for (uint64_t j = 0; j < w.n_out; ++j) {
      y[j] = dot_q4_1_q5_1(
          t.type.type, reinterpret_cast<const uint8_t*>(t.data.data()) + j * row_bytes, xq, w.n_in);
    }
    return y;
  }
  const std::vector<float> x = as_dot_operand(w.tensor->type.type, x_in);
  std::vector<float> y(w.n_out);
  if (t.type.type == gguf::GgmlType::Q8_0 || t.type.type == gguf::GgmlType::Q5_0) {
    for (uint64_t j = 0; j < w.n_out; ++j) {
      y[j] = dot_q8_0_q5_0(
          t.type.type, reinterpret_cast<const uint8_t*>(t.data.data()) + j * row_bytes, x, w.n_in);
    }
    return y;
  }
  // x is F16 or BF16 too: ggml_vec_dot_f16 and _bf16 (kernels/dot_float.h).
  if (t.type.type == gguf::GgmlType::F16) {
    for (uint64_t j = 0; j < w.n_out; ++j) {
      y[j] = kernels::ggml_dot_f16(row(w, j).data(), x.data(), w.n_in);
    }
    return y;
  }
  if (t.type.type == gguf::GgmlType::BF16) {
    for (uint64_t j = 0; j < w.n_out; ++j) {
      y[j] = kernels::ggml_dot_bf16(row(w, j).data(), x.data(), w.n_in);
    }
    return y;
  }
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

// x plus `bias`, or x itself without one.
std::vector<float> biased(std::vector<float> x, const std::vector<float>& bias) {
  if (!bias.empty()) add(x, bias);
  return x;
}

// The steps of ops.h on whole vectors.
void rms_norm(std::span<float> x, std::span<const float> weight, float eps) {
  ops::rms_norm(x.data(), weight.data(), x.data(), x.size(), eps);
}

float silu(float x) {
  return ops::silu(x);
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

ReferenceForward::ReferenceForward(const Model& model, size_t n_ctx)
    : m_(model),
      output_norm_(vector_of(model.output_norm())),
      output_bias_(vector_of(model.output_bias())),
      freq_factors_(vector_of(model.rope_factors(n_ctx))),
      pairs_at_origin_(model.hparams().pairs_at_origin()),
      k_cache_(model.hparams().n_layer),
      v_cache_(model.hparams().n_layer),
      conv_(model.hparams().n_layer),
      state_(model.hparams().n_layer) {
  for (const Layer& l : model.layers()) layers_.emplace_back(l);
  const Hparams& hp = model.hparams();
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (!hp.is_recurrent(il)) continue;
    conv_[il].assign(hp.delta_net->conv_floats(), 0.0f);
    state_[il].assign(hp.delta_net->state_floats(), 0.0f);
  }
}

// A recurrent layer's output for one token (Gated DeltaNet, Yang et al.
// 2024), as llama.cpp's qwen35 graph: Q, K and V mixed through a causal
// depthwise convolution over the last conv_kernel inputs and SiLU; Q and K
// L2-normed per head; per value head, the state decayed by exp(g), g =
// softplus(alpha + dt_bias) * a, then corrected towards V along K by
// beta = sigmoid(b), then read along Q; each head's output RMS-normed and
// gated by SiLU(z); ssm_out.
std::vector<float> ReferenceForward::delta_net(uint32_t il, const Layer& l, const LayerVectors& lv,
                                               const std::vector<float>& h) {
  const Hparams& hp = m_.hparams();
  const Hparams::DeltaNet& dn = *hp.delta_net;
  const size_t d = dn.head_dim, channels = dn.conv_dim(), taps = dn.conv_kernel;
  const size_t key_dim = dn.key_dim(), n_v = dn.n_v_heads;
  const std::vector<float> mixed = matvec(l.ssm_qkv, h);
  std::vector<float> z = matvec(l.ssm_z, h);
  const std::vector<float> b = matvec(l.ssm_beta, h), alpha = matvec(l.ssm_alpha, h);
  // The channels' last taps - 1 inputs (the layer's), then this one.
  std::vector<float>& earlier = conv_[il];
  std::vector<float> inputs(earlier);
  inputs.insert(inputs.end(), mixed.begin(), mixed.end());
  std::vector<float> conv(channels);
  kernels::causal_conv_reference(inputs.data(), lv.ssm_conv.data(), taps, 1, channels, conv.data());
  std::copy(inputs.begin() + static_cast<long>(channels), inputs.end(), earlier.begin());
  kernels::silu_row_reference(conv.data(), conv.data(), channels);
  for (size_t i = 0; i < 2 * dn.n_k_heads; ++i) ops::l2_norm(conv.data() + i * d, d, hp.rms_eps);
  std::vector<float> out(dn.value_dim()), delta(d);
  for (size_t hh = 0; hh < n_v; ++hh) {
    const size_t kh = hh % dn.n_k_heads;  // the key head a value head reads
    const float decay = std::exp(ops::softplus(alpha[hh] + lv.ssm_dt[hh]) * lv.ssm_a[hh]);
    float* head = out.data() + hh * d;
    kernels::delta_rule_reference(
        state_[il].data() + hh * d * d, d, conv.data() + kh * d, conv.data() + key_dim + kh * d,
        conv.data() + 2 * key_dim + hh * d, decay, ops::sigmoid(b[hh]), head, delta.data());
    ops::rms_norm(head, lv.ssm_norm.data(), head, d, hp.rms_eps);
    kernels::silu_row_reference(z.data() + hh * d, z.data() + hh * d, d);
    for (size_t i = 0; i < d; ++i) head[i] *= z[hh * d + i];
  }
  return matvec(l.ssm_out, out);
}

// Latent attention's query and key for one token (DeepSeek-V2, in
// llama.cpp's absorbed form): the key is the latent (attn_kv_a_mqa's first
// kv_lora_rank values, RMS-normed) and then the rotated rest; each query
// head is its unrotated part times its attn_k_b, then its rotated part.
void ReferenceForward::latent_query_and_key(const Layer& l, const LayerVectors& lv,
                                            const std::vector<float>& h,
                                            const std::vector<float>& cos,
                                            const std::vector<float>& sin, std::vector<float>& q,
                                            std::vector<float>& k) const {
  const Hparams& hp = m_.hparams();
  const Hparams::Latent& mla = *hp.latent;
  const size_t rank = mla.kv_lora_rank, projected = mla.mla_key, n_rot = hp.n_rot;
  std::vector<float> queries;  // n_head heads of `projected`
  if (l.wq_a) {
    std::vector<float> low = matvec(l.wq_a, h);
    rms_norm(low, lv.q_a_norm, hp.rms_eps);
    queries = matvec(l.wq_b, low);
  } else {
    queries = matvec(l.wq, h);
  }
  k = matvec(l.wkv_a, h);
  rms_norm(std::span<float>(k.data(), rank), lv.kv_a_norm, hp.rms_eps);
  ops::rope(k.data() + rank, cos.data(), sin.data(), hp.n_rot, m_.arch().rope);
  q.assign(size_t{hp.n_head} * hp.head_dim, 0.0f);
  for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
    float* head = queries.data() + hh * projected;
    const std::vector<float> absorbed =
        matvec(l.wk_b[hh], std::span<const float>(head, projected - n_rot));
    float* out = q.data() + hh * hp.head_dim;
    std::copy(absorbed.begin(), absorbed.end(), out);
    ops::rope(head + projected - n_rot, cos.data(), sin.data(), hp.n_rot, m_.arch().rope);
    std::copy(head + projected - n_rot, head + projected, out + rank);
  }
  if (hp.attn_temp_scale != 0) {
    const float temperature = hp.query_temperature(pos_);
    for (float& e : q) e *= temperature;
  }
}

// Feed-forward block: SwiGLU or GeGLU (Shazeer 2020), down(act(gate(h)) * up(h)).
std::vector<float> ReferenceForward::dense_ffn(const Layer& l, const LayerVectors& lv,
                                               const std::vector<float>& h) const {
  std::vector<float> gate, up;
  if (l.w_gate) {
    gate = biased(matvec(l.w_gate, h), lv.b_gate);
    up = biased(matvec(l.w_up, h), lv.b_up);
  } else {
    const std::vector<float> both = matvec(l.w_up, h);  // the gate's, then the up's
    const auto half = static_cast<long>(both.size() / 2);
    gate.assign(both.begin(), both.begin() + half);
    up.assign(both.begin() + half, both.end());
  }
  if (m_.arch().ffn == Activation::GeGLU) {
    kernels::geglu(gate.data(), up.data(), gate.data(), gate.size());
  } else {
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
  }
  return biased(matvec(l.w_down, gate), lv.b_down);
}

std::span<const float> ReferenceForward::step(int32_t token) {
  const Hparams& hp = m_.hparams();
  CHECK(token >= 0 && static_cast<uint32_t>(token) < hp.n_vocab);
  std::vector<float> x = row(m_.token_embd(), static_cast<uint64_t>(token));  // (n_embd)
  if (hp.embedding_scale != 0) {
    for (float& e : x) e *= hp.embedding_scale;
  }
  // gemma4's per-layer inputs (n_layer rows of n_embd_per_layer): the
  // token's row of per_layer_token_embd times sqrt(width), plus the scaled
  // embedding projected, over sqrt(n_embd), normed per layer; over sqrt(2).
  std::vector<float> per_layer;
  if (hp.n_embd_per_layer != 0) {
    const size_t width = hp.n_embd_per_layer;
    per_layer = matvec(m_.ple_model_proj(), x);
    const std::vector<float> embd = row(m_.ple_embd(), static_cast<uint64_t>(token));
    const std::vector<float> norm = vector_of(m_.ple_proj_norm());
    const float proj_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd));
    const float embd_scale = std::sqrt(static_cast<float>(width)), half = 1.0f / std::sqrt(2.0f);
    for (float& e : per_layer) e *= proj_scale;
    for (size_t il = 0; il < hp.n_layer; ++il) {
      std::span<float> part(per_layer.data() + il * width, width);
      rms_norm(part, norm, hp.rms_eps);
    }
    for (size_t i = 0; i < per_layer.size(); ++i) {
      per_layer[i] = (per_layer[i] + embd[i] * embd_scale) * half;
    }
  }
  // A branch's output into the residual stream, scaled first where the
  // model says so.
  const auto add_branch = [&](std::vector<float> branch, const std::vector<float>& post_norm) {
    if (!post_norm.empty())
      ops::block_norm(hp, branch.data(), post_norm.data(), branch.data(), branch.size());
    if (hp.residual_scale != 0) {
      for (float& e : branch) e *= hp.residual_scale;
    }
    add(x, branch);
  };
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const Layer& l = m_.layers()[il];
    const bool rotates = hp.rotates(il, m_.arch());
    // The layer's shape (gemma4's differ), and the layer whose keys and
    // values it reads (an earlier one in gemma4's last layers).
    const uint32_t hd = hp.head_dim_of(il), n_head_kv = hp.n_head_kv_of(il);
    const uint32_t kv_dim = n_head_kv * hd, group = hp.n_head / n_head_kv, n_rot = hp.n_rot_of(il);
    const uint32_t kv_layer = hp.kv_layer_of(il);
    const bool gemma4 = m_.arch().gemma4;
    // A sliding layer's rotation may have its own base, scale and width.
    const bool factors = !freq_factors_.empty() && m_.rope_factors_apply(il);
    std::vector<float> cos(n_rot / 2), sin(n_rot / 2);
    ops::rope_angles(pos_, hp.rope_of(il), n_rot, factors ? freq_factors_.data() : nullptr,
                     cos.data(), sin.data(),
                     pairs_at_origin_.empty() ? nullptr : pairs_at_origin_.data());

    // Attention block.
    std::vector<float> h = x;
    const LayerVectors& lv = layers_[il];
    if (!lv.attn_norm.empty())
      ops::block_norm(hp, h.data(), lv.attn_norm.data(), h.data(), h.size());
    std::vector<float> attn_out;
    if (hp.is_recurrent(il)) {
      attn_out = delta_net(il, l, lv, h);
    } else {
      std::vector<float> q, k, v;  // (n_head * head_dim), (n_head_kv * head_dim) twice
      std::vector<float> gate;     // a query gate's (n_head * head_dim)
      if (hp.latent) {
        latent_query_and_key(l, lv, h, cos, sin, q, k);
      } else {
        if (l.wqkv) {
          const std::vector<float> qkv = matvec(l.wqkv, h);  // Q, then K, then V
          const size_t q_dim = size_t{hp.n_head} * hd;
          q.assign(qkv.begin(), qkv.begin() + static_cast<long>(q_dim));
          k.assign(qkv.begin() + static_cast<long>(q_dim),
                   qkv.begin() + static_cast<long>(q_dim + kv_dim));
          v.assign(qkv.begin() + static_cast<long>(q_dim + kv_dim), qkv.end());
        } else if (kv_layer != il) {
          q = matvec(l.wq, h);  // gemma4: the keys and values are an earlier layer's
        } else {
          q = matvec(l.wq, h);
          k = matvec(l.wk, h);
          v = l.wv || !gemma4 ? matvec(l.wv, h) : k;  // gemma4 without attn_v: the keys'
        }
        if (m_.arch().query_gate) {
          // Each head's query, then as many values of its gate.
          std::vector<float> queries;
          for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
            const auto head = q.begin() + static_cast<long>(2 * hh * hd);
            queries.insert(queries.end(), head, head + hd);
            gate.insert(gate.end(), head + hd, head + 2 * hd);
          }
          q = std::move(queries);
        }
        if (!lv.bq.empty()) add(q, lv.bq);
        if (!lv.bk.empty()) add(k, lv.bk);
        if (!lv.bv.empty()) add(v, lv.bv);
        const bool whole = m_.arch().qk_norm_whole;  // olmo2: Q and K normed whole
        if (whole) {
          rms_norm(q, lv.q_norm, hp.rms_eps);
          rms_norm(k, lv.k_norm, hp.rms_eps);
        }
        for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
          std::span<float> head(q.data() + hh * hd, hd);
          if (!lv.q_norm.empty() && !whole) rms_norm(head, lv.q_norm, hp.rms_eps);
          if (rotates) ops::rope(head.data(), cos.data(), sin.data(), n_rot, m_.arch().rope);
        }
        for (uint32_t hh = 0; hh < n_head_kv && !k.empty(); ++hh) {
          std::span<float> head(k.data() + hh * hd, hd);
          if (!lv.k_norm.empty() && !whole) rms_norm(head, lv.k_norm, hp.rms_eps);
          if (rotates) ops::rope(head.data(), cos.data(), sin.data(), n_rot, m_.arch().rope);
          // gemma4's values: RMS-normed without a weight.
          if (gemma4)
            ops::rms_norm(v.data() + hh * hd, nullptr, v.data() + hh * hd, hd, hp.rms_eps);
        }
        if (m_.arch().scale_queries) {
          for (float& e : q) e *= hp.query_scale;
        }
        if (hp.attn_temp_scale != 0) {
          const float temperature = hp.query_temperature(pos_);
          for (float& e : q) e *= temperature;
        }
      }
      // The cache holds half precision, as llama.cpp's (F16) does.
      // (Latent attention's values are the first part of its keys.)
      for (float e : k) k_cache_[il].push_back(kernels::f32_to_f16(e));
      for (float e : v) v_cache_[il].push_back(kernels::f32_to_f16(e));
      const std::vector<uint16_t>& k_cache = k_cache_[kv_layer];
      const std::vector<uint16_t>& v_cache = hp.latent ? k_cache_[il] : v_cache_[kv_layer];
      for (float& e : q) e = kernels::round_f16(e);  // Q meets the F16 cache as F16

      // Scaled dot-product attention (Vaswani et al. 2017), causal, with
      // grouped-query heads (Ainslie et al. 2023): head hh reads KV head
      // hh / group. Computed as ggml's CPU flash attention does with an F16
      // cache (llama.cpp's default, which the reference outputs were made
      // with): an online softmax (Milakov & Gimelshein 2018) whose running
      // sum of V rows is kept in half precision. The tiny random models are
      // sensitive enough that a float accumulator misses their tolerance.
      // A sliding layer's query sees the last `window` positions (Beltagy et
      // al. 2020), and Gemma 2 soft-caps the scores.
      const size_t start = kernels::first_seen(pos_, hp.window_of(il)), n_pos = pos_ + 1 - start;
      const uint32_t vd = hp.value_dim_of(il);
      std::vector<float> attn(size_t{hp.n_head} * vd, 0.0f);
      const kernels::Scores scores(m_.arch().scale_queries ? 1.0f : hp.attention_scale_or_default(),
                                   hp.attn_softcap);
      // The arithmetic is kernels/attention.h's reference: ggml's flash
      // attention, step by step.
      const kernels::HeadDims dims(hd, vd);
      const kernels::AttendFn attend = kernels::attend_function(kernels::Isa::Reference, dims);
      for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
        const size_t kv_head = hh / group;
        float* out = attn.data() + hh * vd;
        float state[2];  // with a sink (gpt-oss): the maximum and sum before it joins
        attend(dims, 1, n_pos, q.data() + hh * hd, k_cache.data() + start * kv_dim + kv_head * hd,
               v_cache.data() + start * kv_dim + kv_head * vd, kv_dim, scores, out,
               lv.sinks.empty() ? nullptr : state);
        if (!lv.sinks.empty()) kernels::finish_head_with_sink(vd, lv.sinks[hh], state, out);
      }
      if (hp.latent) {
        // Each head's mix of latents times its attn_v_b: its value.
        std::vector<float> values;
        for (uint32_t hh = 0; hh < hp.n_head; ++hh) {
          const std::vector<float> value =
              matvec(l.wv_b[hh], std::span<const float>(attn.data() + hh * vd, vd));
          values.insert(values.end(), value.begin(), value.end());
        }
        attn = std::move(values);
      }
      // The query gate (qwen35): the output times its sigmoid.
      for (size_t i = 0; i < gate.size(); ++i) attn[i] *= ops::sigmoid(gate[i]);
      attn_out = biased(matvec(l.wo, attn), lv.bo);
    }
    const bool parallel = m_.arch().parallel_block;  // cohere2: the FFN reads h too
    if (!parallel) {
      add_branch(std::move(attn_out), lv.post_attn_norm);
      h = x;
      if (!lv.ffn_norm.empty())
        ops::block_norm(hp, h.data(), lv.ffn_norm.data(), h.data(), h.size());
    }

    // gemma4: the dense FFN, then (with experts) that normed plus the
    // experts' output normed, their input x normed by pre_ffw_norm_2 and
    // the router's x RMS-normed, over sqrt(n_embd), times its scale.
    std::vector<float> dense_out;
    std::vector<float> router_in = h;
    if (gemma4) {
      dense_out = dense_ffn(l, lv, h);
      if (l.router) {
        ops::rms_norm(dense_out.data(), lv.post_ffn_norm_1.data(), dense_out.data(),
                      dense_out.size(), hp.rms_eps);
        ops::rms_norm(x.data(), nullptr, router_in.data(), x.size(), hp.rms_eps);
        const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hp.n_embd));
        for (size_t i = 0; i < router_in.size(); ++i) {
          router_in[i] = (router_in[i] * inv_sqrt) * lv.router_scale[i];
        }
        ops::rms_norm(x.data(), lv.pre_ffn_norm_2.data(), h.data(), x.size(), hp.rms_eps);
      }
    }
    if (l.router) {
      // A mixture of experts (Shazeer et al. 2017): the chosen experts'
      // gated FFNs, each times its weight, added in the order of choice.
      const MoeSpec& spec = *m_.moe();
      const std::vector<float> logits = biased(matvec(l.router, router_in), lv.router_bias);
      std::vector<float> probs(hp.n_expert), weights(hp.n_expert_used), out(hp.n_embd);
      std::vector<int32_t> chosen(hp.n_expert_used);
      ops::choose_experts(spec, logits.data(),
                          lv.exp_probs_b.empty() ? nullptr : lv.exp_probs_b.data(), hp.n_expert,
                          hp.n_expert_used, probs.data(), chosen.data(), weights.data());
      // Expert e's row of a bias of the experts, or none.
      const auto row_of = [](const std::vector<float>& biases, size_t e, size_t width) {
        return biases.empty()
                   ? std::vector<float>()
                   : std::vector<float>(biases.begin() + static_cast<long>(e * width),
                                        biases.begin() + static_cast<long>((e + 1) * width));
      };
      const size_t n_ff = hp.n_ff_exp;
      std::vector<float> outputs(size_t{hp.n_expert_used} * hp.n_embd);  // in the order of choice
      for (size_t slot = 0; slot < hp.n_expert_used; ++slot) {
        const auto e = static_cast<size_t>(chosen[slot]);
        std::vector<float> gate =
            biased(matvec(l.gate_exps[e], h), row_of(lv.gate_exps_bias, e, n_ff));
        const std::vector<float> up =
            biased(matvec(l.up_exps[e], h), row_of(lv.up_exps_bias, e, n_ff));
        if (spec.activation == Activation::SwiGLUClamped) {
          kernels::swiglu_clamped(gate.data(), up.data(), gate.data(), gate.size());
        } else if (spec.activation == Activation::GeGLU) {
          kernels::geglu(gate.data(), up.data(), gate.data(), gate.size());
        } else {
          for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
        }
        std::vector<float> expert =
            biased(matvec(l.down_exps[e], gate), row_of(lv.down_exps_bias, e, hp.n_embd));
        if (!lv.down_exps_scale.empty()) {  // gemma4's scale of each expert
          for (float& v : expert) v *= lv.down_exps_scale[e];
        }
        std::copy(expert.begin(), expert.end(),
                  outputs.begin() + static_cast<long>(slot * hp.n_embd));
      }
      ops::join_experts(outputs.data(), weights.data(), hp.n_expert_used, hp.n_embd, out.data());
      if (spec.shared_expert != SharedExpert::None) {
        // Plus the shared experts, times their gate where they have one
        // (qwen2moe).
        std::vector<float> gate = matvec(l.gate_shexp, h);
        const std::vector<float> up = matvec(l.up_shexp, h);
        for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
        const std::vector<float> shared = matvec(l.down_shexp, gate);
        const float logit = l.shexp_gate ? matvec(l.shexp_gate, h)[0] : 0.0f;
        const float factor = !l.shexp_gate             ? 1.0f
                             : spec.plain_sigmoid_gate ? ops::sigmoid(logit)
                                                       : ops::shared_expert_gate(logit);
        for (size_t i = 0; i < out.size(); ++i) out[i] += shared[i] * factor;
      }
      if (gemma4) {
        ops::rms_norm(out.data(), lv.post_ffn_norm_2.data(), out.data(), out.size(), hp.rms_eps);
        for (size_t i = 0; i < out.size(); ++i) dense_out[i] += out[i];
      } else {
        add_branch(std::move(out), lv.post_ffn_norm);
        continue;
      }
    }
    if (gemma4) {
      add_branch(std::move(dense_out), lv.post_ffn_norm);
      if (l.ple_gate) {
        // The per-layer embedding: post_norm(proj(gelu(inp_gate . x) * this
        // layer's input)) into the residual.
        std::vector<float> gate = matvec(l.ple_gate, x);
        kernels::geglu(gate.data(), per_layer.data() + il * gate.size(), gate.data(), gate.size());
        std::vector<float> out = matvec(l.ple_proj, gate);
        ops::rms_norm(out.data(), lv.ple_norm.data(), out.data(), out.size(), hp.rms_eps);
        add(x, out);
      }
      if (!lv.out_scale.empty()) {
        for (float& e : x) e *= lv.out_scale[0];
      }
      continue;
    }

    std::vector<float> ffn_out = dense_ffn(l, lv, h);
    if (parallel) {
      for (size_t i = 0; i < x.size(); ++i) x[i] = (ffn_out[i] + x[i]) + attn_out[i];
    } else {
      add_branch(std::move(ffn_out), lv.post_ffn_norm);
    }
  }
  ops::block_norm(hp, x.data(), output_norm_.data(), x.data(), x.size());
  logits_ = biased(matvec(m_.output(), x), output_bias_);
  if (hp.logit_factor != 0) {
    for (float& e : logits_) e *= hp.logit_factor;
  }
  if (hp.final_softcap != 0) ops::softcap(logits_.data(), logits_.size(), hp.final_softcap);
  ++pos_;
  return logits_;
}

}  // namespace quip::engine
