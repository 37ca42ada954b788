// The forward pass: prompt tokens in batches (each weight matrix multiplied
// with all of a batch's activations at once), then one token at a time,
// appending to a KV cache. Weights are used in place in the memory map.
//
// One generic pass for every architecture (ArchSpec says what differs), as
// a list of named steps per layer: attention_norm, qkv, rope (or latent
// attention's queries and keys), attention (over a sliding window where the
// layer has one), output projection, post-attention norm, residual,
// ffn_norm, SwiGLU or GeGLU feed-forward or a mixture of experts, post-FFN
// norm, residual. A recurrent layer (Gated DeltaNet) takes attention's
// place where the model has them, its state carried in the KvCache. The last layer goes on after
// its attention with the rows whose logits are asked for, as llama.cpp's do. The arithmetic follows
// llama.cpp's CPU backend (activation formats of the dot products, F16
// cache, half-precision attention accumulator) so the next-token
// distributions match its outputs; ReferenceForward is the scalar
// one-token-at-a-time statement of the same computation.
//
// Deterministic: each output element is computed by one thread with the same
// operations whatever the thread count or batch size, so 1 or N threads,
// batched or token by token, give bit-identical logits.
// Thread safety: one caller at a time; the pool is internal.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/delta_net.h"
#include "kernels/dot.h"
#include "kernels/thread_pool.h"

namespace quip::engine {

struct ForwardOptions {
  int n_threads = 1;
  kernels::Isa isa = kernels::Isa::Reference;
  // Tokens evaluated together; bounds the scratch memory. llama.cpp's
  // default n_ubatch, so that a long prompt splits where llama.cpp splits
  // it (a batch's float orders depend on its size: kernels::llama_cpp_order,
  // kernels::attends_in_tiles).
  size_t max_batch = 512;
  // llama.cpp's float orders depend on the batch and the cache: it
  // multiplies some weights of a batch in another order than a token alone
  // (kernels::llama_cpp_order), attends in tiles in a batch of 64 tokens or
  // more (kernels::attends_in_tiles), and splits a lone token's attention
  // over a long cache (kernels::split_attention_chunk). So a batch and the
  // same tokens one by one differ in the last bits. false: every token in
  // one order, a token's alone over a short cache (for tests of batching
  // itself).
  bool llama_cpp_orders = true;
  // The context the caller allows (0: the model's training context), which
  // chooses LongRoPE's factors (Model::rope_factors).
  size_t n_ctx = 0;
};

class Forward {
 public:
  // PRECONDITIONS: `model` outlives this; every weight type has_dot().
  Forward(const Model& model, const ForwardOptions& options);

  // Evaluates `tokens` at the positions after the cache's and appends their
  // keys and values. Returns the logits (n_vocab floats) after the last
  // token, or with all_logits those after each token, token by token.
  // PRECONDITIONS: tokens is not empty; each id < n_vocab.
  std::span<const float> eval(std::span<const int32_t> tokens, bool all_logits = false);

  // One decoding step of several sequences at once (a server's callers):
  // each row's token at the position after its own cache's, its keys and
  // values appended to that cache. Returns the logits after each row's
  // token, row by row (n_vocab floats each). Each weight is read once for
  // all the rows, yet each row's logits are bit-identical to those of its
  // token evaluated alone on a Forward holding its cache: every product in
  // a lone token's float order, each row attending over its own cache as a
  // lone token does. This Forward's own cache is not used.
  // PRECONDITIONS: decodes_rows(); 1 <= rows.size() <= max_batch(); the
  // caches are distinct, of this model's shape (another Forward's on the
  // same model), and each holds fewer than its context's positions.
  struct Row {
    KvCache* cache;
    int32_t token;
  };
  std::span<const float> decode(std::span<const Row> rows);
  // Whether decode() takes this model: not with recurrent layers, whose
  // state a step of several sequences would have to carry row by row.
  bool decodes_rows() const { return !cache_.has_recurrent(); }

  // About the bytes of scratch a batch of n_tokens needs (the buffers
  // below, sized as eval_batch sizes them; operands counted at 4 bytes a
  // value, an upper bound), for estimates made without evaluating.
  uint64_t scratch_bytes(size_t n_tokens) const;

  size_t position() const { return cache_.size(); }
  size_t max_batch() const { return max_batch_; }  // tokens one eval_batch takes at most
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  const Model& model() const { return m_; }

 private:
  // out (n_tokens, w.n_out) = in (n_tokens, w.n_in) times w's rows; `in`
  // of its own, or the call's.
  struct Product {
    const Weight* w;
    float* out;
    const float* in = nullptr;
  };
  static constexpr size_t kMaxProducts = 32;

  void eval_batch(std::span<const int32_t> tokens, bool all_logits, float* logits);
  // Batch row t's cache and position: the batch's own (this cache, pos0 +
  // t), or in decode() row t's sequence's.
  KvCache& cache_of(size_t t) { return rows_.empty() ? cache_ : *rows_[t].cache; }
  size_t pos_of(size_t t, size_t pos0) const {
    return rows_.empty() ? pos0 + t : rows_[t].cache->size();
  }
  void pre_norm(const std::vector<float>& norm, size_t n);
  static void add_bias(const std::vector<float>& bias, float* rows, size_t n);
  void add_residual(const std::vector<float>& post_norm, size_t n);
  void layer(uint32_t il, size_t n, size_t pos0);
  void queries_and_keys(uint32_t il, size_t n, size_t pos0, bool tiles);
  void latent_queries_and_keys(uint32_t il, size_t n, size_t pos0, bool tiles);
  void attend(uint32_t il, size_t n, size_t pos0, bool tiles);
  void delta_net(uint32_t il, size_t n);
  void per_head(const std::vector<Weight>& w, const float* in, size_t in_row, size_t in_width,
                float* out, size_t out_row, size_t out_width, size_t n);
  // h = the dense gated FFN of the n rows of h, n_ff wide.
  void dense_ffn(const Layer& l, const LayerVectors& lv, size_t n_ff, size_t n);
  // gemma4's FFN step after the attention's residual: the dense FFN and,
  // where the layer has them, the experts beside it; then its per-layer
  // embedding and its output scale.
  void gemma4_ffn(const Layer& l, const LayerVectors& lv, uint32_t il, size_t n);
  void per_layer_inputs(std::span<const int32_t> tokens);
  // The n rows of h_, each RMS-normed by `norm`, in place.
  void norm_rows(const std::vector<float>& norm, size_t n);
  // h = the mixture's output; its router reads `router_in` (h itself where null).
  void moe_ffn(const Layer& l, const LayerVectors& lv, size_t n, const float* router_in = nullptr);
  void moe_ffn_one_token(const Layer& l, const LayerVectors& lv, const int32_t* chosen);
  void moe_ffn_batch(const Layer& l, const LayerVectors& lv, size_t n, const int32_t* chosen);
  void activate_experts(size_t n);
  kernels::SwigluFn gated_activation(Activation a) const;
  void shared_expert(const Layer& l, size_t n);
  // The products of several weights with one input, in one parallel loop;
  // with `alone`, each of the n columns in the float order of a token
  // multiplied alone (as llama.cpp's mul_mat_id multiplies each token).
  void multiply(std::initializer_list<Product> products, const float* in, size_t n_in, size_t n,
                bool alone = false);
  // The same, each product with its own input (at most kMaxProducts).
  void multiply(std::span<const Product> products, size_t n_in, size_t n, bool alone);
  void rope_tables(size_t n, size_t pos0);

  const Model& m_;
  const Hparams& hp_;
  kernels::Isa isa_;
  kernels::AttendFn attend_, attend_sliding_;  // the latter for gemma4's sliding head size
  kernels::AttendTilesFn attend_tiles_;
  kernels::SwigluFn swiglu_;
  kernels::DeltaRuleFn delta_rule_;
  kernels::CausalConvFn causal_conv_;
  kernels::SiluRowFn silu_row_;
  size_t max_batch_;
  bool llama_cpp_orders_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::vector<LayerVectors> layers_;
  std::vector<float> output_norm_, output_bias_, freq_factors_;
  std::vector<float> ple_proj_norm_;      // gemma4's per_layer_proj_norm, or empty
  size_t max_head_dim_;                   // the widest layer's heads
  std::vector<uint8_t> pairs_at_origin_;  // Hparams::pair_at_origin, or empty
  KvCache cache_;
  std::span<const Row> rows_;           // during decode(): the sequence of each batch row
  std::vector<int32_t> decode_tokens_;  // decode()'s rows' tokens

  // Scratch, sized for max_batch tokens.
  std::vector<float> x_;          // (batch, n_embd) the residual stream
  std::vector<float> h_;          // (batch, n_embd) normed input of a block
  std::vector<float> q_, k_, v_;  // (batch, n_head * head_dim), (batch, n_head_kv * head_dim)
  std::vector<float> attn_;       // (batch, n_head * head_dim)
  std::vector<float> gate_, up_;  // (batch, n_ff)
  std::vector<float> fused_;      // a fused product's rows before the split
  std::vector<float> branch_;     // (batch, n_embd) the attention's output (parallel blocks)
  // Mixture of experts: router logits (batch, n_expert); for one expert
  // at a time, the inputs of its tokens (n_embd each), their gate and up
  // (n_ff_exp each); every (token, choice)'s output (n_embd each).
  std::vector<float> router_, expert_in_, expert_gate_, expert_up_, expert_out_;
  std::vector<float> shared_;  // (batch, n_embd) a shared expert's gated output
  // Latent attention: the projected queries (batch, n_head * mla_key), their
  // low rank (batch, q_lora_rank); per_head's inputs and outputs, head by head.
  std::vector<float> latent_q_, low_rank_, head_in_, head_out_;
  // A query gate (ArchSpec::query_gate): (batch, n_head * head_dim).
  std::vector<float> query_gate_;
  // gemma4: each token's per-layer inputs (batch, n_layer * n_embd_per_layer),
  // a layer's gate of them (batch, n_embd_per_layer), the router's input
  // (batch, n_embd).
  std::vector<float> ple_in_, ple_gate_, router_in_;
  // Gated DeltaNet: Q, K and V mixed (batch, conv_dim), after the
  // convolution's kept inputs (kept + batch, conv_dim), convolved; the
  // output's gate z and the heads' outputs (batch, value_dim); each value
  // head's beta and decay (batch, n_v_heads).
  std::vector<float> dn_mixed_, dn_inputs_, dn_conv_, dn_z_, dn_out_, dn_beta_, dn_decay_;
  // (batch, n_rot / 2) per rotation: [0] the global layers', [sliding_table_]
  // the sliding layers' (1 where they rotate otherwise, else 0).
  std::vector<float> cos_[2], sin_[2];
  const size_t sliding_table_;
  std::vector<uint8_t> operand_;  // (batch, operand row bytes)
  size_t kept_from_ = 0;          // the batch's first row the last layer's FFN computes
  std::vector<float> logits_;     // (n, n_vocab)
};

}  // namespace quip::engine
