#include "engine/forward.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "engine/ops.h"
#include "kernels/dequantize.h"
#include "kernels/half.h"

namespace quip::engine {

namespace {

using gguf::GgmlType;

// Expert e's row of the experts' `biases` (width wide; none where empty)
// added to each of the m rows of `rows`.
void add_expert_bias(const std::vector<float>& biases, size_t e, float* rows, size_t m,
                     size_t width) {
  if (biases.empty()) return;
  const float* b = biases.data() + e * width;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < width; ++j) rows[i * width + j] += b[j];
  }
}

// Row r of a weight as floats (an embedding lookup; a whole vector).
void dequantize(const Weight& w, uint64_t r, float* out) {
  const gguf::TensorInfo& t = *w.tensor;
  const size_t bytes = kernels::row_bytes(t.type.type, w.n_in);
  kernels::dequantize_row(t.type.type, t.data.data() + r * bytes, out, w.n_in);
}

// The cache of `hp`'s layers: rows of one width in most models, of each
// layer's own (or none) in gemma4's.
KvCache cache_for(const Hparams& hp) {
  if (!hp.layer_shapes.empty()) {
    std::vector<uint32_t> widths(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) widths[il] = hp.kv_width_of(il);
    return KvCache(std::move(widths));
  }
  return KvCache(hp.n_layer, hp.n_head_kv * hp.head_dim,
                 /*values_in_keys=*/hp.latent.has_value(), hp.recurrent,
                 hp.delta_net
                     ? RecurrentShape{hp.delta_net->conv_floats(), hp.delta_net->state_floats()}
                     : RecurrentShape{});
}

// The head size of the sliding layers (every layer's but in gemma4).
uint32_t sliding_head_dim(const Hparams& hp) {
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.slides(il)) return hp.head_dim_of(il);
  }
  return hp.head_dim;
}

// The rotated size of the sliding layers' heads (every layer's but in gemma4).
uint32_t sliding_n_rot(const Hparams& hp) {
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.slides(il)) return hp.n_rot_of(il);
  }
  return hp.n_rot;
}

}  // namespace

Forward::Forward(const Model& model, const ForwardOptions& options)
    : m_(model),
      hp_(model.hparams()),
      isa_(options.isa),
      attend_(kernels::attend_function(
          options.isa, kernels::HeadDims(model.hparams().head_dim, model.hparams().value_dim))),
      attend_sliding_(kernels::attend_function(
          options.isa, kernels::HeadDims(sliding_head_dim(model.hparams()),
                                         model.hparams().layer_shapes.empty()
                                             ? model.hparams().value_dim
                                             : sliding_head_dim(model.hparams())))),
      attend_tiles_(kernels::attend_tiles_function(options.isa)),
      swiglu_(kernels::swiglu_function(options.isa)),
      delta_rule_(kernels::delta_rule_function(options.isa)),
      causal_conv_(kernels::causal_conv_function(options.isa)),
      silu_row_(kernels::silu_row_function(options.isa)),
      max_batch_(std::max<size_t>(1, options.max_batch)),
      llama_cpp_orders_(options.llama_cpp_orders),
      pool_(std::make_unique<kernels::ThreadPool>(std::max(1, options.n_threads))),
      output_norm_(vector_of(model.output_norm())),
      output_bias_(vector_of(model.output_bias())),
      freq_factors_(vector_of(model.rope_factors(options.n_ctx))),
      ple_proj_norm_(vector_of(model.ple_proj_norm())),
      max_head_dim_(std::max(model.hparams().head_dim, sliding_head_dim(model.hparams()))),
      pairs_at_origin_(model.hparams().pairs_at_origin()),
      cache_(cache_for(model.hparams())),
      sliding_table_(
          hp_.window != 0 && (!(hp_.rope_sliding == hp_.rope) || model.arch().gemma4) ? 1 : 0) {
  for (const Layer& l : model.layers()) layers_.emplace_back(l);
}

std::span<const float> Forward::eval(std::span<const int32_t> tokens, bool all_logits) {
  CHECK(!tokens.empty());
  const size_t n_out = all_logits ? tokens.size() : 1;
  logits_.resize(n_out * hp_.n_vocab);
  cache_.reserve(cache_.size() + tokens.size());
  for (size_t begin = 0; begin < tokens.size(); begin += max_batch_) {
    const size_t n = std::min(max_batch_, tokens.size() - begin);
    const bool last = begin + n == tokens.size();
    float* out = all_logits ? logits_.data() + begin * hp_.n_vocab : logits_.data();
    eval_batch(tokens.subspan(begin, n), all_logits, all_logits || last ? out : nullptr);
  }
  return logits_;
}

std::span<const float> Forward::decode(std::span<const Row> rows) {
  CHECK(decodes_rows() && !rows.empty() && rows.size() <= max_batch_);
  decode_tokens_.resize(rows.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    CHECK(rows[t].cache->row_shape().row_width == cache_.row_shape().row_width);
    rows[t].cache->reserve(rows[t].cache->size() + 1);
    decode_tokens_[t] = rows[t].token;
  }
  logits_.resize(rows.size() * hp_.n_vocab);
  rows_ = rows;
  eval_batch(decode_tokens_, /*all_logits=*/true, logits_.data());
  rows_ = {};
  return logits_;
}

void Forward::eval_batch(std::span<const int32_t> tokens, bool all_logits, float* logits) {
  const size_t n = tokens.size(), pos0 = cache_.size();
  const size_t q_dim = size_t{hp_.n_head} * max_head_dim_;
  const size_t kv_dim = std::max<size_t>(cache_.row_width(), size_t{hp_.n_head_kv} * max_head_dim_);
  // Attention's output per head: its values, or with latent attention
  // first the latent, then the value heads made from it.
  const size_t a_dim =
      size_t{hp_.n_head} *
      std::max<size_t>({hp_.value_dim, max_head_dim_, hp_.latent ? hp_.latent->mla_value : 0});
  x_.resize(n * hp_.n_embd), h_.resize(n * hp_.n_embd);
  q_.resize(n * q_dim), attn_.resize(n * a_dim);
  k_.resize(n * kv_dim), v_.resize(n * kv_dim);
  gate_.resize(n * hp_.n_ff), up_.resize(n * hp_.n_ff);

  for (size_t t = 0; t < n; ++t) {
    CHECK(tokens[t] >= 0 && static_cast<uint32_t>(tokens[t]) < hp_.n_vocab);
    dequantize(m_.token_embd(), static_cast<uint64_t>(tokens[t]), x_.data() + t * hp_.n_embd);
  }
  if (hp_.embedding_scale != 0) {
    for (size_t i = 0; i < n * hp_.n_embd; ++i) x_[i] *= hp_.embedding_scale;
  }
  if (hp_.n_embd_per_layer != 0) per_layer_inputs(tokens);
  rope_tables(n, pos0);
  // The rows whose logits are asked for: llama.cpp keeps only those after
  // the last layer's attention (its inp_out_ids), so that layer's FFN and
  // the output see them alone (none at all without logits), and a lone
  // row is multiplied in a lone token's order. (gemma4's graph keeps
  // every row to the output norm.)
  kept_from_ = logits == nullptr ? n : all_logits ? 0 : n - 1;
  for (uint32_t il = 0; il < hp_.n_layer; ++il) layer(il, n, pos0);
  if (rows_.empty()) {
    cache_.grow_to(pos0 + n);
  } else {
    for (const Row& row : rows_) row.cache->grow_to(row.cache->size() + 1);
  }

  if (logits == nullptr) return;
  if (m_.arch().gemma4 && kept_from_ != 0) {
    std::copy(x_.begin() + static_cast<long>(kept_from_ * hp_.n_embd),
              x_.begin() + static_cast<long>(n * hp_.n_embd), x_.begin());
  }
  const size_t n_rows = n - kept_from_;  // x_'s first rows now
  for (size_t t = 0; t < n_rows; ++t) {
    ops::block_norm(hp_, x_.data() + t * hp_.n_embd, output_norm_.data(),
                    h_.data() + t * hp_.n_embd, hp_.n_embd);
  }
  multiply({{&m_.output(), logits}}, h_.data(), hp_.n_embd, n_rows);
  add_bias(output_bias_, logits, n_rows);
  if (hp_.logit_factor != 0) {
    for (size_t i = 0; i < n_rows * hp_.n_vocab; ++i) logits[i] *= hp_.logit_factor;
  }
  if (hp_.final_softcap != 0) {
    ops::softcap(logits, n_rows * hp_.n_vocab, hp_.final_softcap);
  }
}

// The rotation angles of each position of the batch, shared by every head
// and layer: one table for the global layers, one for the sliding ones
// where they rotate otherwise.
void Forward::rope_tables(size_t n, size_t pos0) {
  for (size_t table = 0; table <= sliding_table_; ++table) {
    const RopeFrequencies& rope = table == 0 ? hp_.rope : hp_.rope_sliding;
    // gemma4's sliding layers rotate their own width, without the factors.
    const bool gemma4_sliding = table != 0 && m_.arch().gemma4;
    const uint32_t n_rot = gemma4_sliding ? sliding_n_rot(hp_) : hp_.n_rot;
    const uint32_t half = n_rot / 2;
    const bool factors = !freq_factors_.empty() && !gemma4_sliding;
    cos_[table].resize(n * half), sin_[table].resize(n * half);
    for (size_t t = 0; t < n; ++t) {
      ops::rope_angles(pos_of(t, pos0), rope, n_rot, factors ? freq_factors_.data() : nullptr,
                       cos_[table].data() + t * half, sin_[table].data() + t * half,
                       pairs_at_origin_.empty() ? nullptr : pairs_at_origin_.data());
    }
  }
}

void Forward::layer(uint32_t il, size_t n, size_t pos0) {
  const Layer& l = m_.layers()[il];
  const LayerVectors& lv = layers_[il];
  const size_t n_embd = hp_.n_embd;

  // attention_norm (none in olmo2)
  pre_norm(lv.attn_norm, n);
  if (hp_.is_recurrent(il)) {
    delta_net(il, n);
  } else {
    // A batch of 64 tokens or more attends as ggml's tiled kernel does,
    // with the queries in float (kernels::attends_in_tiles).
    const uint32_t vd = hp_.value_dim_of(il);
    // (Rows of several sequences attend as lone tokens.)
    const bool tiles = llama_cpp_orders_ && rows_.empty() && kernels::attends_in_tiles(n, vd);
    if (hp_.latent) {
      latent_queries_and_keys(il, n, pos0, tiles);
    } else {
      queries_and_keys(il, n, pos0, tiles);
    }
    attend(il, n, pos0, tiles);
    size_t attn_dim = size_t{hp_.n_head} * vd;
    if (hp_.latent) {
      // Each head's output, a mix of latents, to its value (attn_v_b).
      const size_t width = hp_.latent->mla_value;
      per_head(l.wv_b, attn_.data(), attn_dim, vd, attn_.data(), hp_.n_head * width, width, n);
      attn_dim = hp_.n_head * width;
    }
    if (m_.arch().query_gate) {
      for (size_t i = 0; i < n * attn_dim; ++i) attn_[i] *= ops::sigmoid(query_gate_[i]);
    }
    // output projection
    multiply({{&l.wo, h_.data()}}, attn_.data(), attn_dim, n);
    add_bias(lv.bo, h_.data(), n);
  }
  const bool gemma4 = m_.arch().gemma4;
  if (gemma4 && il + 1 == hp_.n_layer && kept_from_ == n) {
    return;  // no logits asked for: the last layer's FFN would be thrown away
  }
  if (il + 1 == hp_.n_layer && kept_from_ != 0 && !gemma4) {
    // The last layer goes on with the rows whose logits are asked for.
    const size_t from = kept_from_ * n_embd, rows = (n - kept_from_) * n_embd;
    std::copy(h_.begin() + static_cast<long>(from), h_.begin() + static_cast<long>(from + rows),
              h_.begin());
    std::copy(x_.begin() + static_cast<long>(from), x_.begin() + static_cast<long>(from + rows),
              x_.begin());
    n -= kept_from_;
    if (n == 0) return;
  }
  const bool parallel = m_.arch().parallel_block;
  if (parallel) {
    // cohere2: the FFN reads the attention's input, normed again from the
    // unchanged x; the attention's output waits for the join.
    branch_.assign(h_.begin(), h_.begin() + static_cast<long>(n * n_embd));
    pre_norm(lv.attn_norm, n);
  } else {
    add_residual(lv.post_attn_norm, n);
    // ffn_norm, then the FFN.
    pre_norm(lv.ffn_norm, n);
  }

  if (gemma4) {
    gemma4_ffn(l, lv, il, n);
    return;
  }
  if (l.router) {  // a mixture of experts (not in leading dense layers)
    moe_ffn(l, lv, n);
    add_residual(lv.post_ffn_norm, n);
    return;
  }
  dense_ffn(l, lv, hp_.n_ff_of(il), n);
  if (parallel) {
    for (size_t i = 0; i < n * n_embd; ++i) x_[i] = (h_[i] + x_[i]) + branch_[i];
  } else {
    add_residual(lv.post_ffn_norm, n);
  }
}

// Gated feed-forward (Shazeer 2020): down(act(gate) * up), act SiLU or
// GELU.
void Forward::dense_ffn(const Layer& l, const LayerVectors& lv, size_t n_ff, size_t n) {
  const size_t n_embd = hp_.n_embd;
  if (l.w_gate) {
    multiply({{&l.w_gate, gate_.data()}, {&l.w_up, up_.data()}}, h_.data(), n_embd, n);
    add_bias(lv.b_gate, gate_.data(), n);
    add_bias(lv.b_up, up_.data(), n);
  } else {
    // Fused: each token's row is the gate's n_ff, then the up's.
    fused_.resize(n * 2 * n_ff);
    multiply({{&l.w_up, fused_.data()}}, h_.data(), n_embd, n);
    for (size_t t = 0; t < n; ++t) {
      const float* from = fused_.data() + t * 2 * n_ff;
      std::copy(from, from + n_ff, gate_.data() + t * n_ff);
      std::copy(from + n_ff, from + 2 * n_ff, up_.data() + t * n_ff);
    }
  }
  const kernels::SwigluFn act = gated_activation(m_.arch().ffn);
  pool_->parallel_for(n * n_ff, [&](size_t begin, size_t end) {
    act(gate_.data() + begin, up_.data() + begin, gate_.data() + begin, end - begin);
  });
  multiply({{&l.w_down, h_.data()}}, gate_.data(), n_ff, n);
  add_bias(lv.b_down, h_.data(), n);
}

// gemma4 (llama.cpp's gemma4 graph), x_ holding the attention's residual:
// the dense FFN of x normed by ffn_norm; where the layer has experts, that
// normed by post_ffw_norm_1 plus the experts' output normed by
// post_ffw_norm_2 (their input x normed by pre_ffw_norm_2, the router's
// x RMS-normed, over sqrt(n_embd), times ffn_gate_inp.scale); normed by
// post_ffw_norm into the residual. Then the per-layer embedding: x plus
// post_norm(proj(gelu(inp_gate . x) * this layer's per-layer input)); and
// x times the layer's output scale.
void Forward::gemma4_ffn(const Layer& l, const LayerVectors& lv, uint32_t il, size_t n) {
  const size_t n_embd = hp_.n_embd;  // (h_ is x normed by ffn_norm already)
  dense_ffn(l, lv, hp_.n_ff_of(il), n);
  if (l.router) {
    norm_rows(lv.post_ffn_norm_1, n);
    branch_.assign(h_.begin(), h_.begin() + static_cast<long>(n * n_embd));
    const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(n_embd));
    router_in_.resize(n * n_embd);
    for (size_t t = 0; t < n; ++t) {
      float* row = router_in_.data() + t * n_embd;
      ops::rms_norm(x_.data() + t * n_embd, nullptr, row, n_embd, hp_.rms_eps);
      for (size_t i = 0; i < n_embd; ++i) row[i] = (row[i] * inv_sqrt) * lv.router_scale[i];
    }
    pre_norm(lv.pre_ffn_norm_2, n);
    moe_ffn(l, lv, n, router_in_.data());
    norm_rows(lv.post_ffn_norm_2, n);
    for (size_t i = 0; i < n * n_embd; ++i) h_[i] = branch_[i] + h_[i];
  }
  add_residual(lv.post_ffn_norm, n);
  if (l.ple_gate) {
    const size_t width = hp_.n_embd_per_layer, all = size_t{hp_.n_layer} * width;
    ple_gate_.resize(n * width);
    multiply({{&l.ple_gate, ple_gate_.data()}}, x_.data(), n_embd, n);
    for (size_t t = 0; t < n; ++t) {
      float* gate = ple_gate_.data() + t * width;
      kernels::geglu(gate, ple_in_.data() + t * all + il * width, gate, width);
    }
    multiply({{&l.ple_proj, h_.data()}}, ple_gate_.data(), width, n);
    norm_rows(lv.ple_norm, n);
    for (size_t i = 0; i < n * n_embd; ++i) x_[i] += h_[i];
  }
  if (!lv.out_scale.empty()) {
    for (size_t i = 0; i < n * n_embd; ++i) x_[i] *= lv.out_scale[0];
  }
}

// gemma4's per-layer inputs of the batch's tokens into ple_in_ (llama.cpp's
// project_per_layer_inputs): for each layer, the token's row of
// per_layer_token_embd times sqrt(n_embd_per_layer), plus the scaled
// embedding (x_) through per_layer_model_proj, over sqrt(n_embd), RMS-normed
// by per_layer_proj_norm per layer; the sum over sqrt(2).
void Forward::per_layer_inputs(std::span<const int32_t> tokens) {
  const size_t n = tokens.size(), width = hp_.n_embd_per_layer;
  const size_t all = size_t{hp_.n_layer} * width;
  ple_in_.resize(n * all);
  multiply({{&m_.ple_model_proj(), ple_in_.data()}}, x_.data(), hp_.n_embd, n);
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(hp_.n_embd));
  const float embd_scale = std::sqrt(static_cast<float>(width));
  const float input_scale = 1.0f / std::sqrt(2.0f);
  std::vector<float> embd(all);
  for (size_t t = 0; t < n; ++t) {
    dequantize(m_.ple_embd(), static_cast<uint64_t>(tokens[t]), embd.data());
    float* row = ple_in_.data() + t * all;
    for (size_t i = 0; i < all; ++i) row[i] *= proj_scale;
    for (size_t il = 0; il < hp_.n_layer; ++il) {
      ops::rms_norm(row + il * width, ple_proj_norm_.data(), row + il * width, width, hp_.rms_eps);
    }
    for (size_t i = 0; i < all; ++i) row[i] = (row[i] + embd[i] * embd_scale) * input_scale;
  }
}

void Forward::norm_rows(const std::vector<float>& norm, size_t n) {
  for (size_t t = 0; t < n; ++t) {
    float* row = h_.data() + t * hp_.n_embd;
    ops::block_norm(hp_, row, norm.data(), row, hp_.n_embd);
  }
}

// The queries of the n tokens of h_ into q_ (rounded to halves unless
// `tiles`), their keys and values into the cache: Q, K and V projected,
// biased, normed per head or whole, rotated, scaled.
void Forward::queries_and_keys(uint32_t il, size_t n, size_t pos0, bool tiles) {
  const Layer& l = m_.layers()[il];
  const LayerVectors& lv = layers_[il];
  const uint32_t hd = hp_.head_dim_of(il), n_rot = hp_.n_rot_of(il), half = n_rot / 2;
  const uint32_t n_head_kv = hp_.n_head_kv_of(il);
  const size_t q_dim = size_t{hp_.n_head} * hd, kv_dim = size_t{n_head_kv} * hd;
  const size_t n_embd = hp_.n_embd;
  // gemma4: a layer that reads an earlier layer's cache projects only its
  // queries; one without attn_v takes its keys' projection as its values,
  // which are RMS-normed without a weight.
  const bool own_kv = hp_.kv_layer_of(il) == il, gemma4 = m_.arch().gemma4;
  // qkv
  if (!own_kv) {
    multiply({{&l.wq, q_.data()}}, h_.data(), n_embd, n);
  } else if (gemma4 && !l.wv) {
    multiply({{&l.wq, q_.data()}, {&l.wk, k_.data()}}, h_.data(), n_embd, n);
    std::copy(k_.begin(), k_.begin() + static_cast<long>(n * kv_dim), v_.begin());
  } else if (l.wqkv) {
    // Fused: each token's row is Q, then K, then V.
    const size_t row = q_dim + 2 * kv_dim;
    fused_.resize(n * row);
    multiply({{&l.wqkv, fused_.data()}}, h_.data(), n_embd, n);
    for (size_t t = 0; t < n; ++t) {
      const float* from = fused_.data() + t * row;
      std::copy(from, from + q_dim, q_.data() + t * q_dim);
      std::copy(from + q_dim, from + q_dim + kv_dim, k_.data() + t * kv_dim);
      std::copy(from + q_dim + kv_dim, from + row, v_.data() + t * kv_dim);
    }
  } else if (m_.arch().query_gate) {
    // Each head's rows are its query's, then as many of its gate's.
    fused_.resize(n * 2 * q_dim), query_gate_.resize(n * q_dim);
    multiply({{&l.wq, fused_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}}, h_.data(), n_embd,
             n);
    for (size_t t = 0; t < n; ++t) {
      for (size_t h = 0; h < hp_.n_head; ++h) {
        const float* from = fused_.data() + (t * hp_.n_head + h) * 2 * hd;
        std::copy(from, from + hd, q_.data() + t * q_dim + h * hd);
        std::copy(from + hd, from + 2 * hd, query_gate_.data() + t * q_dim + h * hd);
      }
    }
  } else {
    multiply({{&l.wq, q_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}}, h_.data(), n_embd, n);
  }

  // biases, per-head norms, rope; the keys and values into the cache as
  // halves, the queries rounded to halves too (ggml converts Q to the
  // cache's type for the K dot products).
  const bool rotates = hp_.rotates(il, m_.arch());
  const size_t window = hp_.window_of(il);
  const std::vector<float>& cos = cos_[window != 0 ? sliding_table_ : 0];
  const std::vector<float>& sin = sin_[window != 0 ? sliding_table_ : 0];
  const auto rotate = [&](float* head, size_t t) {
    if (!rotates) return;
    ops::rope(head, cos.data() + t * half, sin.data() + t * half, n_rot, m_.arch().rope);
  };
  pool_->parallel_for(n, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      float* q = q_.data() + t * q_dim;
      float* k = k_.data() + t * kv_dim;
      float* v = v_.data() + t * kv_dim;
      for (size_t i = 0; i < lv.bq.size(); ++i) q[i] += lv.bq[i];
      for (size_t i = 0; i < lv.bk.size(); ++i) k[i] += lv.bk[i];
      for (size_t i = 0; i < lv.bv.size(); ++i) v[i] += lv.bv[i];
      const bool whole = m_.arch().qk_norm_whole;  // olmo2: Q and K normed whole
      if (whole) {
        ops::rms_norm(q, lv.q_norm.data(), q, q_dim, hp_.rms_eps);
        ops::rms_norm(k, lv.k_norm.data(), k, kv_dim, hp_.rms_eps);
      }
      for (uint32_t h = 0; h < hp_.n_head; ++h) {
        if (!lv.q_norm.empty() && !whole)
          ops::rms_norm(q + h * hd, lv.q_norm.data(), q + h * hd, hd, hp_.rms_eps);
        rotate(q + h * hd, t);
      }
      if (m_.arch().scale_queries) {
        for (size_t i = 0; i < q_dim; ++i) q[i] *= hp_.query_scale;
      }
      if (hp_.attn_temp_scale != 0) {
        const float temperature = hp_.query_temperature(pos_of(t, pos0));
        for (size_t i = 0; i < q_dim; ++i) q[i] *= temperature;
      }
      if (!tiles) {
        for (size_t i = 0; i < q_dim; ++i) q[i] = kernels::round_f16(q[i]);
      }
      if (!own_kv) continue;
      for (uint32_t h = 0; h < n_head_kv; ++h) {
        if (!lv.k_norm.empty() && !whole)
          ops::rms_norm(k + h * hd, lv.k_norm.data(), k + h * hd, hd, hp_.rms_eps);
        rotate(k + h * hd, t);
        if (gemma4) ops::rms_norm(v + h * hd, nullptr, v + h * hd, hd, hp_.rms_eps);
      }
      uint16_t* kc = cache_of(t).k(il) + pos_of(t, pos0) * kv_dim;
      uint16_t* vc = cache_of(t).v(il) + pos_of(t, pos0) * kv_dim;
      for (size_t i = 0; i < kv_dim; ++i) {
        kc[i] = kernels::f32_to_f16(k[i]);
        vc[i] = kernels::f32_to_f16(v[i]);
      }
    }
  });
}

// Latent attention's queries and keys (DeepSeek-V2), as llama.cpp's
// deepseek2 graph computes them in absorbed form: the queries through
// their low rank (normed) or attn_q; the latent and the keys' rotated part
// through attn_kv_a_mqa. The cache row is the latent, normed, then the
// rotated part; each query head is its unrotated part times its attn_k_b
// (so that it meets the latents directly), then its rotated part. The
// queries go to q_, rounded to halves unless `tiles`.
void Forward::latent_queries_and_keys(uint32_t il, size_t n, size_t pos0, bool tiles) {
  const Layer& l = m_.layers()[il];
  const LayerVectors& lv = layers_[il];
  const Hparams::Latent& mla = *hp_.latent;
  const size_t n_embd = hp_.n_embd, n_head = hp_.n_head, n_rot = hp_.n_rot, half = n_rot / 2;
  const size_t rank = mla.kv_lora_rank, projected = mla.mla_key;  // a projected query head
  const size_t hd = hp_.head_dim, q_dim = n_head * hd, kv_dim = cache_.row_width();
  latent_q_.resize(n * n_head * projected);
  if (l.wq_a) {
    const size_t q_rank = mla.q_lora_rank;
    low_rank_.resize(n * q_rank);
    multiply({{&l.wq_a, low_rank_.data()}, {&l.wkv_a, k_.data()}}, h_.data(), n_embd, n);
    for (size_t t = 0; t < n; ++t) {
      float* row = low_rank_.data() + t * q_rank;
      ops::rms_norm(row, lv.q_a_norm.data(), row, q_rank, hp_.rms_eps);
    }
    multiply({{&l.wq_b, latent_q_.data()}}, low_rank_.data(), q_rank, n);
  } else {
    multiply({{&l.wq, latent_q_.data()}, {&l.wkv_a, k_.data()}}, h_.data(), n_embd, n);
  }
  per_head(l.wk_b, latent_q_.data(), n_head * projected, projected, q_.data(), q_dim, hd, n);

  pool_->parallel_for(n, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const float* cos = cos_[0].data() + t * half;
      const float* sin = sin_[0].data() + t * half;
      float* kv = k_.data() + t * kv_dim;
      ops::rms_norm(kv, lv.kv_a_norm.data(), kv, rank, hp_.rms_eps);
      ops::rope(kv + rank, cos, sin, hp_.n_rot, m_.arch().rope);
      float* q = q_.data() + t * q_dim;
      for (size_t h = 0; h < n_head; ++h) {
        float* rotated = latent_q_.data() + (t * n_head + h) * projected + projected - n_rot;
        ops::rope(rotated, cos, sin, hp_.n_rot, m_.arch().rope);
        std::copy(rotated, rotated + n_rot, q + h * hd + rank);
      }
      if (hp_.attn_temp_scale != 0) {
        const float temperature = hp_.query_temperature(pos_of(t, pos0));
        for (size_t i = 0; i < q_dim; ++i) q[i] *= temperature;
      }
      if (!tiles) {
        for (size_t i = 0; i < q_dim; ++i) q[i] = kernels::round_f16(q[i]);
      }
      uint16_t* kc = cache_of(t).k(il) + pos_of(t, pos0) * kv_dim;
      for (size_t i = 0; i < kv_dim; ++i) kc[i] = kernels::f32_to_f16(kv[i]);
    }
  });
}

// A recurrent layer (Gated DeltaNet) over the n tokens of h_, its output
// into h_, as llama.cpp's qwen35 graph computes it with the fused
// ggml_gated_delta_net (the CPU's choice): Q, K and V mixed, the output's
// gate z, each value head's beta = sigmoid(ssm_beta . x) and decay exp(g),
// g = softplus(ssm_alpha . x + dt_bias) * a; the mix through the causal
// convolution (its earlier inputs from the cache), SiLU; Q and K
// L2-normed per head; the delta rule per value head, token by token, on
// the head's state in the cache; each head's output RMS-normed by
// ssm_norm and times SiLU(z); ssm_out.
void Forward::delta_net(uint32_t il, size_t n) {
  const Layer& l = m_.layers()[il];
  const LayerVectors& lv = layers_[il];
  CHECK(rows_.empty());  // decodes_rows() is false
  const Hparams::DeltaNet& dn = *hp_.delta_net;
  const size_t n_embd = hp_.n_embd, d = dn.head_dim, channels = dn.conv_dim();
  const size_t key_dim = dn.key_dim(), value_dim = dn.value_dim(), n_v = dn.n_v_heads;
  const size_t taps = dn.conv_kernel, kept = taps - 1;
  dn_mixed_.resize(n * channels), dn_conv_.resize(n * channels), dn_z_.resize(n * value_dim);
  dn_out_.resize(n * value_dim), dn_beta_.resize(n * n_v), dn_decay_.resize(n * n_v);
  multiply({{&l.ssm_qkv, dn_mixed_.data()},
            {&l.ssm_z, dn_z_.data()},
            {&l.ssm_beta, dn_beta_.data()},
            {&l.ssm_alpha, dn_decay_.data()}},
           h_.data(), n_embd, n);
  for (size_t t = 0; t < n; ++t) {
    for (size_t h = 0; h < n_v; ++h) {
      float& beta = dn_beta_[t * n_v + h];
      beta = ops::sigmoid(beta);
      float& decay = dn_decay_[t * n_v + h];
      decay = std::exp(ops::softplus(decay + lv.ssm_dt[h]) * lv.ssm_a[h]);
    }
  }

  // The convolution: the kept inputs (the cache's), then the batch's; the
  // last kept of those stay for the next. Then SiLU, and Q's and K's heads
  // L2-normed.
  float* conv_state = cache_.conv(il);
  dn_inputs_.resize((kept + n) * channels);
  std::copy(conv_state, conv_state + kept * channels, dn_inputs_.begin());
  std::copy(dn_mixed_.begin(), dn_mixed_.begin() + static_cast<long>(n * channels),
            dn_inputs_.begin() + static_cast<long>(kept * channels));
  std::copy(dn_inputs_.begin() + static_cast<long>(n * channels), dn_inputs_.end(), conv_state);
  pool_->parallel_for(n, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      float* row = dn_conv_.data() + t * channels;
      causal_conv_(dn_inputs_.data() + t * channels, lv.ssm_conv.data(), taps, 1, channels, row);
      silu_row_(row, row, channels);
      for (size_t h = 0; h < 2 * dn.n_k_heads; ++h) ops::l2_norm(row + h * d, d, hp_.rms_eps);
    }
  });

  // The delta rule: each value head's tokens in order, on its state.
  float* states = cache_.state(il);
  pool_->parallel_for(n_v, [&](size_t begin, size_t end) {
    std::vector<float> delta(d);
    for (size_t h = begin; h < end; ++h) {
      const size_t kh = h % dn.n_k_heads;
      for (size_t t = 0; t < n; ++t) {
        const float* row = dn_conv_.data() + t * channels;
        delta_rule_(states + h * d * d, d, row + kh * d, row + key_dim + kh * d,
                    row + 2 * key_dim + h * d, dn_decay_[t * n_v + h], dn_beta_[t * n_v + h],
                    dn_out_.data() + t * value_dim + h * d, delta.data());
      }
    }
  });

  // Each head's output normed, times SiLU(z), then ssm_out.
  pool_->parallel_for(n * n_v, [&](size_t begin, size_t end) {
    for (size_t item = begin; item < end; ++item) {
      float* out = dn_out_.data() + item * d;
      float* z = dn_z_.data() + item * d;
      ops::rms_norm(out, lv.ssm_norm.data(), out, d, hp_.rms_eps);
      silu_row_(z, z, d);
      for (size_t i = 0; i < d; ++i) out[i] *= z[i];
    }
  });
  multiply({{&l.ssm_out, h_.data()}}, dn_out_.data(), value_dim, n);
}

// For each head h of the n tokens: its in_width values at in + t * in_row +
// h * in_width times w[h], into out + t * out_row + h * out_width (w[h]'s
// n_out values). Each head's product is one weight's over its n rows; out
// may be `in` (the inputs are gathered first). ggml reads these inputs
// through a permuted view, which it multiplies with F32 weights column by
// column (its batched path wants a contiguous input or a converted one).
void Forward::per_head(const std::vector<Weight>& w, const float* in, size_t in_row,
                       size_t in_width, float* out, size_t out_row, size_t out_width, size_t n) {
  const size_t n_head = w.size(), n_in = w[0].n_in, n_out = w[0].n_out;
  head_in_.resize(n_head * n * n_in), head_out_.resize(n_head * n * n_out);
  for (size_t h = 0; h < n_head; ++h) {
    for (size_t t = 0; t < n; ++t) {
      const float* from = in + t * in_row + h * in_width;
      std::copy(from, from + n_in, head_in_.data() + (h * n + t) * n_in);
    }
  }
  const bool alone = kernels::operand_type(w[0].tensor->type.type) == GgmlType::F32;
  Product products[kMaxProducts];
  for (size_t h0 = 0; h0 < n_head; h0 += kMaxProducts) {
    const size_t count = std::min(kMaxProducts, n_head - h0);
    for (size_t i = 0; i < count; ++i) {
      const size_t h = h0 + i;
      products[i] = {&w[h], head_out_.data() + h * n * n_out, head_in_.data() + h * n * n_in};
    }
    multiply(std::span<const Product>(products, count), n_in, n, alone);
  }
  for (size_t h = 0; h < n_head; ++h) {
    for (size_t t = 0; t < n; ++t) {
      const float* from = head_out_.data() + (h * n + t) * n_out;
      std::copy(from, from + n_out, out + t * out_row + h * out_width);
    }
  }
}

// attn_ = the attention of the queries in q_ over the cache of layer il.
void Forward::attend(uint32_t il, size_t n, size_t pos0, bool tiles) {
  const LayerVectors& lv = layers_[il];
  const uint32_t hd = hp_.head_dim_of(il), vd = hp_.value_dim_of(il);
  const uint32_t n_head_kv = hp_.n_head_kv_of(il), kv_layer = hp_.kv_layer_of(il);
  const kernels::HeadDims dims(hd, vd);
  const size_t q_dim = size_t{hp_.n_head} * hd, a_dim = size_t{hp_.n_head} * vd;
  const size_t kv_dim = cache_.row_width(kv_layer);
  const size_t window = hp_.window_of(il);
  const kernels::AttendFn attend_fn = hp_.slides(il) ? attend_sliding_ : attend_;
  // attention: causal, query t sees positions first_seen(pos0 + t,
  // window)..pos0 + t; grouped-query heads (Ainslie et al. 2023) share KV
  // head h / group.
  const uint32_t group = hp_.n_head / n_head_kv;
  const kernels::Scores scores(m_.arch().scale_queries ? 1.0f : hp_.attention_scale_or_default(),
                               hp_.attn_softcap);
  if (tiles) {
    // One item: one head's queries of one tile of kAttentionQueryTile tokens.
    constexpr size_t kRows = kernels::kAttentionQueryTile;
    const size_t row_tiles = (n + kRows - 1) / kRows;
    pool_->parallel_for(hp_.n_head * row_tiles, [&](size_t begin, size_t end) {
      for (size_t item = begin; item < end; ++item) {
        const size_t h = item / row_tiles, t0 = item % row_tiles * kRows;
        const size_t kv_head = h / group, rows = std::min(kRows, n - t0);
        float* out = attn_.data() + t0 * a_dim + h * vd;
        float states[2 * kRows];  // with a sink: each query's maximum and sum
        attend_tiles_(dims, rows, pos0 + t0, q_.data() + t0 * q_dim + h * hd, q_dim,
                      cache_.k(kv_layer) + kv_head * hd, cache_.v(kv_layer) + kv_head * vd, kv_dim,
                      scores, window, out, a_dim, lv.sinks.empty() ? nullptr : states);
        for (size_t i = 0; i < rows && !lv.sinks.empty(); ++i) {
          kernels::finish_head_with_sink(vd, lv.sinks[h], states + 2 * i, out + i * a_dim);
        }
      }
    });
  } else {
    // One item is up to kHeadsPerItem heads of one group for one token: the
    // kernel reads each key and value row once for all of them.
    constexpr uint32_t kHeadsPerItem = 4;
    const uint32_t chunks = (group + kHeadsPerItem - 1) / kHeadsPerItem;  // per group
    // A token decoded alone over a long cache (each row of decode()'s
    // among them): in ggml's chunks, merged.
    const bool alone = llama_cpp_orders_ && (n == 1 || !rows_.empty());
    pool_->parallel_for(n * n_head_kv * chunks, [&](size_t begin, size_t end) {
      for (size_t item = begin; item < end; ++item) {
        const size_t t = item / (n_head_kv * chunks), rest = item % (n_head_kv * chunks);
        const size_t kv_head = rest / chunks, first = rest % chunks * kHeadsPerItem;
        const size_t h = kv_head * group + first;
        const size_t heads = std::min<size_t>(kHeadsPerItem, group - first);
        const size_t pos = pos_of(t, pos0);
        const size_t split = alone ? kernels::split_attention_chunk(pos + 1) : 0;
        const float* q = q_.data() + t * q_dim + h * hd;
        const uint16_t* k = cache_of(t).k(kv_layer) + kv_head * hd;
        const uint16_t* v = cache_of(t).v(kv_layer) + kv_head * vd;
        float* out = attn_.data() + t * a_dim + h * vd;
        const size_t start = kernels::first_seen(pos, window);
        const float* sinks = lv.sinks.empty() ? nullptr : lv.sinks.data() + h;
        if (split == 0) {
          float states[2 * kHeadsPerItem];  // with sinks: each head's maximum and sum
          attend_fn(dims, heads, pos + 1 - start, q, k + start * kv_dim, v + start * kv_dim, kv_dim,
                    scores, out, sinks != nullptr ? states : nullptr);
          for (size_t g = 0; g < heads && sinks != nullptr; ++g) {
            kernels::finish_head_with_sink(vd, sinks[g], states + 2 * g, out + g * vd);
          }
          continue;
        }
        // Chunk c of head g: its state at partials[(c * heads + g) * 2], its
        // accumulator at accs[(c * heads + g) * vd]; a chunk wholly before
        // the window stays empty, as ggml skips masked positions (but the
        // first takes the sinks even so).
        constexpr size_t kChunks = kernels::kSplitAttentionChunks;
        thread_local std::vector<float> accs, partials;
        accs.assign(kChunks * heads * vd, 0.0f), partials.assign(kChunks * heads * 2, 0.0f);
        for (size_t g = 0; g < heads; ++g) partials[2 * g] = -INFINITY;
        for (size_t c = 0; c < kChunks && c * split < pos + 1; ++c) {
          const size_t from = std::max(c * split, start), to = std::min((c + 1) * split, pos + 1);
          if (from >= to) continue;
          attend_fn(dims, heads, to - from, q, k + from * kv_dim, v + from * kv_dim, kv_dim, scores,
                    accs.data() + c * heads * vd, partials.data() + c * heads * 2);
        }
        for (size_t g = 0; g < heads && sinks != nullptr; ++g) {
          kernels::add_sink(vd, sinks[g], partials.data() + 2 * g, accs.data() + g * vd);
        }
        for (size_t g = 0; g < heads; ++g) {
          kernels::merge_attention_chunks(vd, kChunks, partials.data() + g * 2, heads * 2,
                                          accs.data() + g * vd, heads * vd, out + g * vd);
        }
      }
    });
  }
}

// Each of the n rows of `rows` (bias.size() wide) plus `bias`; nothing
// without one.
void Forward::add_bias(const std::vector<float>& bias, float* rows, size_t n) {
  for (size_t t = 0; t < n && !bias.empty(); ++t) {
    float* row = rows + t * bias.size();
    for (size_t i = 0; i < bias.size(); ++i) row[i] += bias[i];
  }
}

// h = a mixture of experts' output for each of the n tokens of h (Shazeer
// et al. 2017): the chosen experts' gated FFNs, each times its weight,
// added in the order of choice. Each expert multiplies all the tokens that
// chose it at once (its rows are read once per batch), each token in the
// float order of a token alone, as llama.cpp's mul_mat_id multiplies each
// token's row.
void Forward::moe_ffn(const Layer& l, const LayerVectors& lv, size_t n, const float* router_in) {
  const MoeSpec& spec = *m_.moe();
  const size_t n_embd = hp_.n_embd, n_expert = hp_.n_expert, n_used = hp_.n_expert_used;
  router_.resize(n * n_expert);
  multiply({{&l.router, router_.data()}}, router_in != nullptr ? router_in : h_.data(), n_embd, n);
  add_bias(lv.router_bias, router_.data(), n);
  // The choices: token t's k-th expert and weight at [t * n_used + k].
  std::vector<int32_t> chosen(n * n_used);
  std::vector<float> weights(n * n_used), probs(n_expert);
  for (size_t t = 0; t < n; ++t) {
    ops::choose_experts(spec, router_.data() + t * n_expert,
                        lv.exp_probs_b.empty() ? nullptr : lv.exp_probs_b.data(), n_expert, n_used,
                        probs.data(), chosen.data() + t * n_used, weights.data() + t * n_used);
  }
  const bool shared = spec.shared_expert != SharedExpert::None;
  if (shared) shared_expert(l, n);  // before h_ is overwritten
  // Each (token, choice)'s expert output into expert_out_.
  expert_out_.resize(n * n_used * n_embd);
  if (n == 1 && n_used * 2 <= kMaxProducts) {
    // One token (decoding): every chosen expert's products at once, so
    // that the threads meet three times per layer, not three per expert.
    moe_ffn_one_token(l, lv, chosen.data());
  } else {
    moe_ffn_batch(l, lv, n, chosen.data());
  }
  // gemma4: each expert's output times its scale (ffn_down_exps.scale).
  for (size_t c = 0; c < n * n_used && !lv.down_exps_scale.empty(); ++c) {
    const float scale = lv.down_exps_scale[static_cast<size_t>(chosen[c])];
    float* row = expert_out_.data() + c * n_embd;
    for (size_t i = 0; i < n_embd; ++i) row[i] *= scale;
  }
  for (size_t t = 0; t < n; ++t) {
    ops::join_experts(expert_out_.data() + t * n_used * n_embd, weights.data() + t * n_used, n_used,
                      n_embd, h_.data() + t * n_embd);
  }
  if (shared) {
    for (size_t i = 0; i < n * n_embd; ++i) h_[i] += shared_[i];
  }
}

// The kernel of a gated activation: act(gate) * up.
kernels::SwigluFn Forward::gated_activation(Activation a) const {
  switch (a) {
    case Activation::SwiGLU: return swiglu_;
    case Activation::GeGLU: return kernels::geglu;
    case Activation::SwiGLUClamped: return kernels::swiglu_clamped;
  }
  return swiglu_;
}

// The experts' activation over n values of expert_gate_ and expert_up_,
// into expert_gate_.
void Forward::activate_experts(size_t n) {
  const kernels::SwigluFn act = gated_activation(m_.moe()->activation);
  pool_->parallel_for(n, [&](size_t begin, size_t end) {
    act(expert_gate_.data() + begin, expert_up_.data() + begin, expert_gate_.data() + begin,
        end - begin);
  });
}

// The shared experts' output for the n tokens of h_, into shared_: their
// SwiGLU FFN, and where they are gated (qwen2moe), times
// ops::shared_expert_gate(shexp_gate . x).
void Forward::shared_expert(const Layer& l, size_t n) {
  const size_t n_embd = hp_.n_embd, n_ff = hp_.n_ff_shexp;
  const bool gated = static_cast<bool>(l.shexp_gate);
  gate_.resize(n * n_ff), up_.resize(n * n_ff), shared_.resize(n * n_embd);
  std::vector<float> gate_logit(n);
  const Product products[] = {{&l.gate_shexp, gate_.data(), h_.data()},
                              {&l.up_shexp, up_.data(), h_.data()},
                              {&l.shexp_gate, gate_logit.data(), h_.data()}};
  multiply(std::span<const Product>(products, gated ? 3 : 2), n_embd, n, /*alone=*/false);
  pool_->parallel_for(n * n_ff, [&](size_t begin, size_t end) {
    swiglu_(gate_.data() + begin, up_.data() + begin, gate_.data() + begin, end - begin);
  });
  multiply({{&l.down_shexp, shared_.data()}}, gate_.data(), n_ff, n);
  for (size_t t = 0; t < n && gated; ++t) {
    const float gate = m_.moe()->plain_sigmoid_gate ? ops::sigmoid(gate_logit[t])
                                                    : ops::shared_expert_gate(gate_logit[t]);
    float* row = shared_.data() + t * n_embd;
    for (size_t i = 0; i < n_embd; ++i) row[i] *= gate;
  }
}

// moe_ffn for a batch: each chosen expert over all its tokens at once.
void Forward::moe_ffn_batch(const Layer& l, const LayerVectors& lv, size_t n,
                            const int32_t* chosen) {
  const size_t n_embd = hp_.n_embd, n_expert = hp_.n_expert, n_used = hp_.n_expert_used;
  const size_t n_ff = hp_.n_ff_exp;
  std::vector<size_t> choices;  // of one expert: indices t * n_used + k
  for (size_t e = 0; e < n_expert; ++e) {
    choices.clear();
    for (size_t c = 0; c < n * n_used; ++c) {
      if (static_cast<size_t>(chosen[c]) == e) choices.push_back(c);
    }
    if (choices.empty()) continue;
    const size_t m = choices.size();
    expert_in_.resize(m * n_embd), expert_gate_.resize(m * n_ff), expert_up_.resize(m * n_ff);
    for (size_t i = 0; i < m; ++i) {
      const float* row = h_.data() + choices[i] / n_used * n_embd;
      std::copy(row, row + n_embd, expert_in_.data() + i * n_embd);
    }
    multiply({{&l.gate_exps[e], expert_gate_.data()}, {&l.up_exps[e], expert_up_.data()}},
             expert_in_.data(), n_embd, m, /*alone=*/true);
    add_expert_bias(lv.up_exps_bias, e, expert_up_.data(), m, n_ff);
    add_expert_bias(lv.gate_exps_bias, e, expert_gate_.data(), m, n_ff);
    activate_experts(m * n_ff);
    // The outputs into expert_in_, then each to its (token, choice).
    expert_in_.resize(m * n_embd);
    multiply({{&l.down_exps[e], expert_in_.data()}}, expert_gate_.data(), n_ff, m,
             /*alone=*/true);
    add_expert_bias(lv.down_exps_bias, e, expert_in_.data(), m, n_embd);
    for (size_t i = 0; i < m; ++i) {
      std::copy(expert_in_.data() + i * n_embd, expert_in_.data() + (i + 1) * n_embd,
                expert_out_.data() + choices[i] * n_embd);
    }
  }
}

// moe_ffn for one token, of experts `chosen`: the gate and up products of
// every chosen expert in one multiply, their activations in one loop,
// their down products in one more, each expert's arithmetic that of
// moe_ffn_batch.
void Forward::moe_ffn_one_token(const Layer& l, const LayerVectors& lv, const int32_t* chosen) {
  const size_t n_embd = hp_.n_embd, n_used = hp_.n_expert_used, n_ff = hp_.n_ff_exp;
  expert_gate_.resize(n_used * n_ff), expert_up_.resize(n_used * n_ff);
  Product products[kMaxProducts];
  for (size_t k = 0; k < n_used; ++k) {
    const auto e = static_cast<size_t>(chosen[k]);
    products[2 * k] = {&l.gate_exps[e], expert_gate_.data() + k * n_ff, h_.data()};
    products[2 * k + 1] = {&l.up_exps[e], expert_up_.data() + k * n_ff, h_.data()};
  }
  multiply(std::span<const Product>(products, 2 * n_used), n_embd, 1, /*alone=*/true);
  for (size_t k = 0; k < n_used; ++k) {
    const auto e = static_cast<size_t>(chosen[k]);
    add_expert_bias(lv.up_exps_bias, e, expert_up_.data() + k * n_ff, 1, n_ff);
    add_expert_bias(lv.gate_exps_bias, e, expert_gate_.data() + k * n_ff, 1, n_ff);
  }
  activate_experts(n_used * n_ff);
  for (size_t k = 0; k < n_used; ++k) {
    const auto e = static_cast<size_t>(chosen[k]);
    products[k] = {&l.down_exps[e], expert_out_.data() + k * n_embd,
                   expert_gate_.data() + k * n_ff};
  }
  multiply(std::span<const Product>(products, n_used), n_ff, 1, /*alone=*/true);
  for (size_t k = 0; k < n_used; ++k) {
    add_expert_bias(lv.down_exps_bias, static_cast<size_t>(chosen[k]),
                    expert_out_.data() + k * n_embd, 1, n_embd);
  }
}

// h = the branch's input: x RMS-normed by `norm`, or x itself without one.
void Forward::pre_norm(const std::vector<float>& norm, size_t n) {
  const size_t n_embd = hp_.n_embd;
  if (norm.empty()) {
    std::copy(x_.begin(), x_.begin() + static_cast<long>(n * n_embd), h_.begin());
    return;
  }
  for (size_t t = 0; t < n; ++t) {
    ops::block_norm(hp_, x_.data() + t * n_embd, norm.data(), h_.data() + t * n_embd, n_embd);
  }
}

// x += h, the branch's output normed by `post_norm` (where there is one)
// and scaled (where the model says so) first.
void Forward::add_residual(const std::vector<float>& post_norm, size_t n) {
  const size_t n_embd = hp_.n_embd;
  if (!post_norm.empty()) norm_rows(post_norm, n);
  if (hp_.residual_scale != 0) {
    for (size_t i = 0; i < n * n_embd; ++i) h_[i] *= hp_.residual_scale;
  }
  for (size_t i = 0; i < n * n_embd; ++i) x_[i] += h_[i];
}

void Forward::multiply(std::initializer_list<Product> products, const float* in, size_t n_in,
                       size_t n, bool alone) {
  Product with_input[kMaxProducts];
  size_t count = 0;
  CHECK(products.size() <= kMaxProducts);
  for (Product p : products) {
    if (p.in == nullptr) p.in = in;
    with_input[count++] = p;
  }
  multiply(std::span<const Product>(with_input, count), n_in, n, alone);
}

void Forward::multiply(std::span<const Product> products, size_t n_in, size_t n, bool alone) {
  // Each distinct operand (format and input) once: the products of a
  // layer's Q, K and V usually share one.
  struct Operand {
    GgmlType type;
    kernels::OperandFn convert;
    const float* in;
    size_t offset, row_bytes;
  };
  Operand operands[kMaxProducts];
  size_t n_operands = 0, bytes = 0;
  const auto operand_of = [&](GgmlType weight, const float* in) -> const Operand& {
    const GgmlType type = kernels::operand_type(weight);
    for (size_t i = 0; i < n_operands; ++i) {
      if (operands[i].type == type && operands[i].in == in) return operands[i];
    }
    const size_t rb = kernels::row_bytes(type, n_in);
    operands[n_operands] = Operand{type, kernels::operand_function(type, isa_), in, bytes, rb};
    bytes += n * rb;
    return operands[n_operands++];
  };
  const Operand* operand_for[kMaxProducts];
  size_t index = 0;
  CHECK(products.size() <= kMaxProducts);
  for (const Product& p : products) {
    CHECK(p.w->n_in == n_in && p.in != nullptr);
    operand_for[index++] = &operand_of(p.w->tensor->type.type, p.in);
  }
  if (operand_.size() < bytes) operand_.resize(bytes);
  // The conversions, each operand's rows over the threads (one row: each
  // operand on a thread of its own).
  const size_t items = n == 1 ? n_operands : n_operands * n;
  pool_->parallel_for(items, [&](size_t begin, size_t end) {
    for (size_t item = begin; item < end; ++item) {
      const Operand& op = operands[n == 1 ? item : item / n];
      const size_t t = n == 1 ? 0 : item % n;
      op.convert(op.in + t * n_in, operand_.data() + op.offset + t * op.row_bytes, n_in);
    }
  });

  // Rows in tiles of kTile: a tile's weights stay in the L2 cache while
  // every column group of the batch passes over them, and each call's
  // preparation of its columns (the kernels' scales and sums) serves 64
  // rows. (16-row tiles, which fit the L1 cache, took 6-35% more CPU time
  // over a 128-token batch on each of nine types measured.)
  constexpr size_t kTile = 64;
  size_t n_tiles = 0;
  for (const Product& p : products) n_tiles += (p.w->n_out + kTile - 1) / kTile;
  pool_->parallel_for(n_tiles, [&](size_t begin, size_t end) {
    size_t tile = 0, product = 0;
    for (const Product& p : products) {
      const Operand& op = *operand_for[product++];
      const size_t tiles = (p.w->n_out + kTile - 1) / kTile;
      const size_t lo = std::max(begin, tile), hi = std::min(end, tile + tiles);
      if (lo < hi) {
        const GgmlType type = p.w->tensor->type.type;
        // llama.cpp's float orders for this weight and batch (a tied output
        // is repacked too: llama.cpp loads it a second time, as a weight of
        // the output layer); without them, every column as a token alone.
        const bool lone = alone || !rows_.empty();  // decode()'s rows: each a lone token
        const kernels::BatchOrder order =
            kernels::llama_cpp_order(type, p.w->n_out, n_in, llama_cpp_orders_ && !lone ? n : 1);
        const kernels::DotFn lead_dot = kernels::dot_function(type, isa_, order.lead_order);
        const kernels::DotFn rest_dot = kernels::dot_function(type, isa_, order.rest_order);
        const size_t lead = order.lead;
        const size_t w_bytes = kernels::row_bytes(type, n_in);
        const auto* w = reinterpret_cast<const uint8_t*>(p.w->tensor->data.data());
        const size_t r_end = std::min<size_t>(p.w->n_out, (hi - tile) * kTile);
        for (size_t r0 = (lo - tile) * kTile; r0 < r_end; r0 += kTile) {
          const size_t r1 = std::min(r0 + kTile, r_end);
          for (size_t c0 = 0; c0 < n;) {
            const size_t limit = c0 < lead ? lead : n;
            const int ncols = static_cast<int>(std::min<size_t>(kernels::kMaxCols, limit - c0));
            (c0 < lead ? lead_dot : rest_dot)(n_in, w + r0 * w_bytes, w_bytes, r1 - r0,
                                              operand_.data() + op.offset + c0 * op.row_bytes,
                                              op.row_bytes, ncols, p.out + c0 * p.w->n_out + r0,
                                              p.w->n_out);
            c0 += static_cast<size_t>(ncols);
          }
        }
      }
      tile += tiles;
    }
  });
}

uint64_t Forward::scratch_bytes(size_t n_tokens) const {
  const uint64_t n = std::max<size_t>(n_tokens, 1);
  const uint64_t q_dim = uint64_t{hp_.n_head} * max_head_dim_;
  const uint64_t kv_dim =
      std::max<uint64_t>(cache_.row_width(), uint64_t{hp_.n_head_kv} * max_head_dim_);
  const uint64_t a_dim =
      uint64_t{hp_.n_head} *
      std::max<uint64_t>({hp_.value_dim, max_head_dim_, hp_.latent ? hp_.latent->mla_value : 0});
  const uint64_t n_ff = std::max({hp_.n_ff, hp_.n_ff_exp, hp_.n_ff_shexp});
  // x_, h_, branch_; q_, attn_, query_gate_; k_, v_; gate_, up_, fused_.
  uint64_t floats = n * (3 * uint64_t{hp_.n_embd} + 2 * q_dim + a_dim + 2 * kv_dim + 4 * n_ff);
  if (hp_.n_expert != 0) {
    // router_, expert_out_, and one expert's inputs, gate and up at most n rows.
    floats += n * (hp_.n_expert + uint64_t{hp_.n_expert_used} * hp_.n_embd + hp_.n_embd +
                   2 * uint64_t{hp_.n_ff_exp});
  }
  floats += hp_.n_vocab;  // logits_: the last token's
  const uint64_t operand = n * std::max<uint64_t>(hp_.n_embd, n_ff) * sizeof(float);
  return floats * sizeof(float) + operand;
}

}  // namespace quip::engine
