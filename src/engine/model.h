// A model bound from a GGUF file: hyper-parameters and weights, used in
// place in the memory map. Architectures are data (ArchSpec), not classes:
// one forward pass reads the spec and asks only whether optional tensors are
// there.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"

namespace quip::engine {

enum class RopeStyle {
  Adjacent,  // pairs (2i, 2i+1): llama (whose Q/K rows the converter permuted)
  NeoX,      // pairs (i, i + n_rot/2): qwen2, qwen3
};

// The feed-forward's gated activation.
enum class Activation {
  SwiGLU,  // silu(gate) * up (Shazeer 2020)
  GeGLU,   // gelu_tanh(gate) * up: Gemma
  // gpt-oss's clamped SwiGLU (ggml's swiglu_oai): with g = min(gate, 7),
  // g * sigmoid(1.702 g) * (clamp(up, -7, 7) + 1).
  SwiGLUClamped,
};

// How a mixture of experts weighs the experts it chooses for a token
// (llama.cpp's gating functions).
enum class Gating {
  Softmax,        // a softmax over every expert's logit, then the top k (qwen3moe)
  SoftmaxChosen,  // the top k logits, then a softmax over those alone (gpt-oss)
  Sigmoid,        // each logit's sigmoid, then the top k (deepseek2)
};

// A mixture's shared experts, which every token uses beside its chosen ones.
enum class SharedExpert {
  None,
  // qwen2moe: one FFN (ffn_{gate,up,down}_shexp, its width
  // expert_shared_feed_forward_length), its output times
  // sigmoid(ffn_gate_inp_shexp . x).
  Gated,
  // deepseek2: expert_shared_count experts as one FFN of that many times
  // the experts' width, ungated.
  Counted,
};

// A mixture of experts in place of the FFN (llama.cpp's build_moe_ffn): the
// router's logits (ffn_gate_inp), the top expert_used_count experts, each
// expert's gated FFN, weighted and added in the order of choice.
struct MoeSpec {
  Gating gating = Gating::Softmax;
  // The chosen weights over their sum (at least 2^-14).
  bool normalize = true;
  // The chosen weights times this (0: not scaled).
  float weights_scale = 0;
  // deepseek2: the gating, the normalization and the scale are the file's
  // (expert_gating_func, expert_weights_norm, expert_weights_scale), and
  // a layer's exp_probs_b, where it has one, biases the choice (not the
  // weights); its first leading_dense_block_count layers are dense.
  bool from_file = false;
  // gpt-oss: a bias of the router (ffn_gate_inp.bias) and of each
  // expert's three matrices (ffn_{gate,up,down}_exps.bias, a row each).
  bool biases = false;
  Activation activation = Activation::SwiGLU;
  // llama: experts only in a file with expert_count (Mixtral), each
  // feed_forward_length wide; dense otherwise.
  bool where_counted = false;
  SharedExpert shared_expert = SharedExpert::None;
  // A gated shared expert's sigmoid as ggml_sigmoid computes it (qwen35moe),
  // rather than qwen2moe's silu(x) / x (ops::shared_expert_gate).
  bool plain_sigmoid_gate = false;
  // deepseek2: each expert's gate and up may be one matrix, its gate's rows
  // then its up's (ffn_gate_up_exps, which its llama.cpp loader reads
  // instead of the two where the file has it).
  bool reads_fused_gate_up = false;
};

// Sliding-window attention as a family's llama.cpp loader sets it up.
struct SlidingWindow {
  // The window, where the file has no attention.sliding_window key; 0: the
  // family has none without the key.
  uint32_t default_window = 0;
  // The layer pattern without attention.sliding_window_pattern: in each
  // group of `pattern` layers, all but the last slide (llama.cpp's
  // set_swa_pattern); 0: no family default, every layer slides.
  uint32_t default_pattern = 0;
  // Sliding layers rotate by rope.freq_base_swa, whose default is the
  // global base (gemma2, olmo2) or 10000 (gemma3), and scale by the global
  // RoPE scaling (gemma2) or not at all (gemma3, olmo2).
  bool inherits_base = false, inherits_scale = false;
  // exaone4: windows only in the model of this many blocks (its 32B);
  // other sizes attend globally whatever the file says. 0: any size.
  uint32_t only_with_blocks = 0;
  // exaone4, cohere2: the global layers do not rotate (NoPE) where
  // windows are on.
  bool global_layers_unrotated = false;
  // cohere2: a file without attention.sliding_window is refused.
  bool required = false;
};

// What a family computes differently, as data the one forward pass reads.
// Written with designated initializers: each family names only what it sets.
struct ArchSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope = RopeStyle::Adjacent;
  bool qk_norm = false;  // RMS norms of Q and K (qwen3, olmo2, gemma3)
  // olmo2: Q and K normed over the whole projection, before the split into
  // heads; otherwise per head.
  bool qk_norm_whole = false;
  // Granite's scales (Hparams: embedding, residual, attention, logit) are
  // read from the file.
  bool scales = false;
  // Every step-th layer (layer il with (il + 1) % step == 0) has no
  // rotation (smollm3's NoPE layers; llama.cpp's fixed 4, no key); 0: none.
  uint32_t no_rope_step = 0;
  // phi3: one ffn_up of 2 n_ff rows (the gate's, then the up's) and no
  // ffn_gate. (Any family's layer may have one attn_qkv, rows Q, then K,
  // then V, instead of separate tensors, and biases for Q, K and V, as
  // llama.cpp's loaders all read them.)
  bool fused_gate_up = false;
  // Biases of the attention output and the FFN's three matrices, where the
  // file has them (llama, granite), and of the output (qwen2).
  bool projection_biases = false;
  bool output_bias = false;
  // phi3: LongRoPE's frequency factors (rope_factors_long and
  // rope_factors_short), which the family's loader reads where present.
  bool long_rope = false;
  // The queries times Hparams::query_scale after the rotation (ggml rounds
  // the scaled queries) and the attention scores unscaled: phi3 (1 /
  // sqrt(head_dim)), gemma.
  bool scale_queries = false;
  // RMS norms before each branch (attn_norm, ffn_norm), and of each
  // branch's output before its residual add (post_attention_norm,
  // post_ffw_norm): olmo2 has only the latter, gemma both.
  bool pre_norms = true;
  bool post_norms = false;
  Activation ffn = Activation::SwiGLU;
  // gemma: embeddings times sqrt(n_embd).
  bool embed_scale_sqrt = false;
  // Soft caps the family's loader reads, each with its default where the
  // file lacks the key (0: none): gemma2 reads attn_logit_softcapping
  // (50) and final_logit_softcapping (30); gemma3 only the latter (0).
  std::optional<float> attn_softcap = {}, final_softcap = {};
  // The layer count of the family's 27B model, whose queries llama.cpp
  // scales by 1 / sqrt(n_embd / n_head) instead of the head size; 0: none.
  uint32_t wide_query_scale_layers = 0;
  // Sliding windows, where the family's loader reads
  // attention.sliding_window at all.
  std::optional<SlidingWindow> sliding = {};
  // mistral3: YaRN's rope.scaling.yarn_beta_fast/slow and
  // yarn_log_multiplier, and attention.temperature_scale (Hparams).
  bool yarn_keys = false;
  bool attn_temperature = false;
  // cohere2: LayerNorms (attention.layer_norm_epsilon) in place of the
  // RMS norms of the blocks and the output; one normed input for both
  // branches, whose outputs join the residual as (x + FFN) + attention;
  // the output always the embedding table; logits times logit_scale.
  bool layer_norm = false;
  bool parallel_block = false;
  bool always_tied = false;
  bool logit_scale_multiplies = false;
  // qwen3moe, qwen2moe, gpt-oss (and llama where the file has experts):
  // a mixture of experts in place of the FFN.
  std::optional<MoeSpec> moe = {};
  // gpt-oss: attention sinks (attn_sinks, a logit per head that joins each
  // softmax's denominator and adds no value).
  bool sinks = false;
  // deepseek2: multi-head latent attention (DeepSeek-V2, 2024) in
  // llama.cpp's absorbed form (Hparams::latent). YaRN reads only
  // rope.scaling.yarn_log_multiplier, stored as 0.1 times DeepSeek's
  // mscale_all_dim.
  bool latent_attention = false;
  // The FFN's pre-norm tensor: gpt-oss names it post_attention_norm.
  const char* ffn_norm = "ffn_norm.weight";
  // glm4: nextn_predict_layers blocks (multi-token prediction) at the end,
  // counted in block_count but never run, as llama.cpp skips them.
  bool nextn = false;
  // rope.dimension_sections, the position of each part of a multimodal
  // rotation: glm4 reads them and turns to multimodal rotation where they
  // are set (refused until quip computes it); qwen3vl requires them, and
  // since a text token's position is the same in every section, its
  // rotation is then NeoX's (quip reads text only).
  enum class Sections { Unread, RefusedWhereSet, Required };
  Sections rope_sections = Sections::Unread;
  // qwen35, qwen35moe: Gated DeltaNet layers (Yang et al. 2024) between the
  // full-attention ones (Hparams::delta_net, Layer's ssm_ weights), and
  // an output gate in each attention layer's queries: attn_q gives per head
  // its query, then as many gate values; the attention's output times
  // their sigmoid.
  bool delta_net = false;
  bool query_gate = false;
  // gemma4: shapes per layer (Hparams::layer_shapes: head counts, head and
  // rotation sizes, FFN widths), the later layers reading an earlier one's
  // keys and values (attention.shared_kv_layers), per-layer embeddings,
  // values RMS-normed without a weight (and the keys' projection standing
  // in for a missing attn_v), attention scores unscaled, a mixture of
  // experts beside the dense FFN with norms of its own, and each layer's
  // output times its layer_output_scale.
  bool gemma4 = false;
};

// The spec of `arch`, or nullptr for an architecture quip does not run.
const ArchSpec* find_arch(std::string_view arch);

// A weight matrix of shape [n_in, n_out] (ggml order: rows of n_in values,
// one row per output), or a vector when n_out == 1.
struct Weight {
  const gguf::TensorInfo* tensor = nullptr;
  uint64_t n_in = 0, n_out = 0;
  explicit operator bool() const { return tensor != nullptr; }
};

struct Layer {
  Weight attn_norm, wq, wk, wv, wqkv, wo, q_norm, k_norm;  // wqkv: fused, no wq, wk, wv
  Weight bq, bk, bv, bqkv, bo;                             // biases, where the file has them
  Weight ffn_norm, w_gate, w_up, w_down;  // fused_gate_up: w_up holds the gate, no w_gate
  Weight b_gate, b_up, b_down;
  Weight post_attn_norm, post_ffn_norm;  // the norms of the branch outputs (olmo2, gemma)
  // Mixture of experts (ArchSpec::moe), in place of w_gate, w_up, w_down:
  // the router (ffn_gate_inp, n_embd -> n_expert) and each expert's
  // matrices, slices of the 3-D ffn_{gate,up,down}_exps tensors.
  Weight router;
  std::vector<Weight> gate_exps, up_exps, down_exps;
  // MoeSpec::biases: the router's, and the experts' (a row per expert).
  Weight router_bias, gate_exps_bias, up_exps_bias, down_exps_bias;
  // MoeSpec::shared_expert: its FFN and its gate (one row).
  Weight gate_shexp, up_shexp, down_shexp, shexp_gate;
  Weight sinks;  // ArchSpec::sinks: n_head logits
  // MoeSpec::from_file: the experts' selection bias (exp_probs_b), n_expert.
  Weight exp_probs_b;
  // gemma4: the router's input scale (ffn_gate_inp.scale), the experts'
  // output scales (ffn_down_exps.scale, one per expert); the norms of the
  // dense FFN's output (post_ffw_norm_1), of the experts' input
  // (pre_ffw_norm_2) and output (post_ffw_norm_2); the per-layer
  // embedding's gate (inp_gate, n_embd -> n_embd_per_layer), projection
  // (proj) and norm (post_norm); the layer's output scale (one value).
  Weight router_scale, down_exps_scale, post_ffn_norm_1, pre_ffn_norm_2, post_ffn_norm_2;
  Weight ple_gate, ple_proj, ple_norm, out_scale;
  // Latent attention (Hparams::latent): the queries through a low rank
  // (attn_q_a, its norm, attn_q_b; wq without), the latent and the keys'
  // rotated part (attn_kv_a_mqa), the latent's norm, and per head the
  // absorbed matrices from a query's unrotated part to the latent
  // (attn_k_b) and from the latent to the head's value (attn_v_b).
  Weight wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm;
  std::vector<Weight> wk_b, wv_b;
  // Gated DeltaNet, in a recurrent layer (Hparams::recurrent): Q, K and V
  // mixed (attn_qkv) and the output's gate z (attn_gate); the causal
  // convolution's taps per channel (ssm_conv1d); each value head's beta
  // (ssm_beta) and decay (ssm_alpha, ssm_dt.bias, ssm_a); the output's
  // norm (ssm_norm, one head wide) and projection (ssm_out).
  Weight ssm_qkv, ssm_z, ssm_conv, ssm_beta, ssm_alpha, ssm_dt, ssm_a, ssm_norm, ssm_out;

  // What a token's step reads besides the experts: the matrices it
  // multiplies by, and the vectors (norms, biases); absent ones included.
  // (The per-head wk_b and wv_b are not among them.)
  std::array<const Weight*, 23> matrices() const {
    return {&wq,         &wk,        &wv,      &wqkv,       &wo,       &w_gate,
            &w_up,       &w_down,    &router,  &gate_shexp, &up_shexp, &down_shexp,
            &shexp_gate, &wq_a,      &wq_b,    &wkv_a,      &ssm_qkv,  &ssm_z,
            &ssm_beta,   &ssm_alpha, &ssm_out, &ple_gate,   &ple_proj};
  }
  std::array<const Weight*, 33> vectors() const {
    return {&attn_norm,
            &q_norm,
            &k_norm,
            &bq,
            &bk,
            &bv,
            &bqkv,
            &bo,
            &ffn_norm,
            &b_gate,
            &b_up,
            &b_down,
            &post_attn_norm,
            &post_ffn_norm,
            &sinks,
            &router_bias,
            &gate_exps_bias,
            &up_exps_bias,
            &down_exps_bias,
            &exp_probs_b,
            &q_a_norm,
            &kv_a_norm,
            &ssm_conv,
            &ssm_dt,
            &ssm_a,
            &ssm_norm,
            &router_scale,
            &down_exps_scale,
            &post_ffn_norm_1,
            &pre_ffn_norm_2,
            &post_ffn_norm_2,
            &ple_norm,
            &out_scale};
  }
};

// A weight vector (a norm, a bias) in float, or a small matrix's rows
// one after another (the experts' biases); empty where `w` is absent.
std::vector<float> vector_of(const Weight& w);

// A layer's norms and biases in float, as the forward passes add and
// multiply them; a fused Q/K/V bias split into bq, bk and bv.
struct LayerVectors {
  std::vector<float> attn_norm, bq, bk, bv, q_norm, k_norm, bo;
  std::vector<float> ffn_norm, b_gate, b_up, b_down, post_attn_norm, post_ffn_norm;
  std::vector<float> sinks, router_bias, exp_probs_b, q_a_norm, kv_a_norm;
  // Gated DeltaNet: the convolution's taps, tap by tap (conv_kernel rows of
  // conv_dim), the decay's bias and scale, the output's norm.
  std::vector<float> ssm_conv, ssm_dt, ssm_a, ssm_norm;
  // gemma4 (Layer's of the same names).
  std::vector<float> router_scale, down_exps_scale, post_ffn_norm_1, pre_ffn_norm_2;
  std::vector<float> post_ffn_norm_2, ple_norm, out_scale;
  // The experts' biases, expert e's row at e * its width; empty without.
  std::vector<float> gate_exps_bias, up_exps_bias, down_exps_bias;
  explicit LayerVectors(const Layer& l);
};

// How one layer rotates: theta = freq_scale * pos * base^(-2i / n_rot)
// (linear RoPE scaling: freq_scale = 1 / rope.scaling.factor), with cos and
// sin times mscale (rope.scaling.attn_factor). YaRN (Peng et al. 2023),
// where ext_factor is 1: pair i's angle mixes the scaled and the unscaled
// one by a ramp that falls from 1 to 0 between pairs corr_low and
// corr_high, and cos and sin are also times 1 + 0.1 ln(1 / freq_scale).
struct RopeFrequencies {
  float base = 10000.0f, freq_scale = 1.0f, mscale = 1.0f;
  float ext_factor = 0.0f, corr_low = 0.0f, corr_high = 0.0f;
  bool operator==(const RopeFrequencies&) const = default;
};

struct Hparams {
  uint32_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  uint32_t n_vocab = 0, n_ctx_train = 0, n_rot = 0;
  // The blocks of the file, n_layer run and the NextN blocks after them.
  uint32_t n_block = 0;
  // Mixture of experts: experts per layer, those each token uses, and
  // each expert's FFN width (expert_feed_forward_length), and a shared
  // expert's (MoeSpec::shared_expert).
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  // MoeSpec::from_file: the dense layers before the first mixture.
  uint32_t n_dense_lead = 0;
  // The value heads' width: head_dim, except in latent attention.
  uint32_t value_dim = 0;
  // Latent attention (ArchSpec::latent_attention): each position's key is
  // its latent of kv_lora_rank values, normed, then n_rot rotated values
  // (head_dim = kv_lora_rank + n_rot, one KV head); its value is the
  // latent (value_dim = kv_lora_rank). A query head is its unrotated part
  // of mla_key - n_rot values times attn_k_b, then its n_rot rotated ones;
  // its output, value_dim wide, times attn_v_b gives mla_value values.
  // q_lora_rank: the queries' low rank (0: one attn_q).
  struct Latent {
    uint32_t q_lora_rank = 0, kv_lora_rank = 0, mla_key = 0, mla_value = 0;
  };
  std::optional<Latent> latent;
  // Gated DeltaNet (ArchSpec::delta_net), in the layers marked recurrent:
  // n_v_heads value heads of head_dim, each with a state of head_dim x
  // head_dim; n_k_heads query and key heads of head_dim (value head h
  // reads key head h % n_k_heads); a causal convolution of conv_kernel taps
  // over the conv_dim() channels of Q, K and V mixed.
  struct DeltaNet {
    uint32_t conv_kernel = 0, head_dim = 0, n_k_heads = 0, n_v_heads = 0;
    uint32_t key_dim() const { return n_k_heads * head_dim; }
    uint32_t value_dim() const { return n_v_heads * head_dim; }
    uint32_t conv_dim() const { return 2 * key_dim() + value_dim(); }
    // Floats a layer carries from token to token: the convolution's last
    // conv_kernel - 1 inputs (rows of conv_dim, the oldest first), and
    // every head's state.
    uint64_t conv_floats() const { return uint64_t{conv_kernel - 1} * conv_dim(); }
    uint64_t state_floats() const { return uint64_t{n_v_heads} * head_dim * head_dim; }
  };
  std::optional<DeltaNet> delta_net;
  // Per layer, 1 where it is recurrent (Gated DeltaNet) rather than
  // attention; empty where no layer is.
  std::vector<uint8_t> recurrent;
  // ArchSpec::gemma4: what differs from layer to layer, one entry per
  // layer (empty elsewhere: every layer has the fields above). A sliding
  // layer's heads are key_length_swa wide and rotate rope.dimension_count_swa
  // of them; a layer at or past the first of the last shared_kv_layers
  // reads the keys and values of kv_layer (the last earlier layer of its
  // kind) and writes none.
  struct LayerShape {
    uint32_t n_head_kv = 0, head_dim = 0, n_rot = 0, n_ff = 0, kv_layer = 0;
    bool slides = false;
  };
  std::vector<LayerShape> layer_shapes;
  // gemma4: the per-layer embeddings' width (0: none).
  uint32_t n_embd_per_layer = 0;
  // The context the rotation was trained for before it was stretched
  // (rope.scaling.original_context_length; n_ctx_train without it): YaRN's
  // range, and LongRoPE's choice of factors.
  uint32_t n_ctx_orig = 0;
  float rms_eps = 1e-5f;
  // ArchSpec::layer_norm: the blocks' and the output's norms are
  // LayerNorms with this eps.
  bool layer_norm = false;
  float norm_eps = 1e-5f;
  RopeFrequencies rope, rope_sliding;  // of the global layers and the sliding ones
  // As llama.cpp's hparams, 0 where unused: embeddings times
  // embedding_scale; each branch's output times residual_scale before its
  // residual add; attention scores times attention_scale instead of
  // 1/sqrt(head_dim); logits times logit_factor (granite's 1 /
  // logit_scale, cohere2's logit_scale).
  float embedding_scale = 0, residual_scale = 0, attention_scale = 0;
  float logit_factor = 0;
  // ArchSpec::scale_queries's factor.
  float query_scale = 0;
  // Soft caps, 0 where none: attention scores c * tanh(s / c), logits likewise.
  float attn_softcap = 0, final_softcap = 0;
  // YaRN's correction range: the pairs turning between beta_fast and
  // beta_slow times over the original context.
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;
  // qwen3vl's interleaved multimodal rotation sections (t, h, w, e),
  // all 0 elsewhere: text tokens sit at their position in the first three,
  // at 0 in the fourth (llama.cpp's llm_graph_input_pos).
  std::array<int32_t, 4> rope_sections{};
  // Attention temperature (Llama 4, Ministral 3), 0: none: the query at
  // position p times 1 + attn_temp_scale ln(floor(p / n_ctx_orig) + 1).
  float attn_temp_scale = 0;
  // Sliding-window attention: a sliding layer's query at position p sees
  // p - window + 1..p. 0: none.
  uint32_t window = 0, window_pattern = 0;

  bool is_recurrent(uint32_t il) const { return !recurrent.empty() && recurrent[il] != 0; }
  // Layer il's shape (Hparams::layer_shapes, or the model's).
  uint32_t head_dim_of(uint32_t il) const {
    return layer_shapes.empty() ? head_dim : layer_shapes[il].head_dim;
  }
  uint32_t n_head_kv_of(uint32_t il) const {
    return layer_shapes.empty() ? n_head_kv : layer_shapes[il].n_head_kv;
  }
  uint32_t n_rot_of(uint32_t il) const {
    return layer_shapes.empty() ? n_rot : layer_shapes[il].n_rot;
  }
  uint32_t n_ff_of(uint32_t il) const {
    return layer_shapes.empty() ? n_ff : layer_shapes[il].n_ff;
  }
  // (gemma4's values are as wide as its keys, layer by layer.)
  uint32_t value_dim_of(uint32_t il) const {
    return layer_shapes.empty() ? value_dim : layer_shapes[il].head_dim;
  }
  // The layer whose cache layer il attends over: il itself unless it shares.
  uint32_t kv_layer_of(uint32_t il) const {
    return layer_shapes.empty() ? il : layer_shapes[il].kv_layer;
  }
  // Halves per key (and value) row of layer il's own cache: 0 in a
  // recurrent layer and in one that reads another's.
  uint32_t kv_width_of(uint32_t il) const {
    if (is_recurrent(il) || kv_layer_of(il) != il) return 0;
    return n_head_kv_of(il) * head_dim_of(il);
  }
  // Whether layer il rotates its queries and keys.
  bool rotates(uint32_t il, const ArchSpec& arch) const {
    if (arch.sliding && arch.sliding->global_layers_unrotated && window != 0 && !slides(il)) {
      return false;
    }
    return arch.no_rope_step == 0 || (il + 1) % arch.no_rope_step != 0;
  }
  // Whether layer il attends through the sliding window (llama.cpp's
  // set_swa_pattern: all but the last layer of each group of pattern).
  bool slides(uint32_t il) const {
    if (!layer_shapes.empty()) return window != 0 && layer_shapes[il].slides;
    return window != 0 && (window_pattern == 0 || il % window_pattern < window_pattern - 1);
  }
  uint32_t window_of(uint32_t il) const { return slides(il) ? window : 0; }
  const RopeFrequencies& rope_of(uint32_t il) const { return slides(il) ? rope_sliding : rope; }
  // For each rotated pair, whether a text token turns it as position 0
  // does: its sector (the pair's index modulo the sections' sum) falls in
  // no interleaved t, h or w section (ggml_mrope_cache_init's imrope).
  // Empty without sections.
  std::vector<uint8_t> pairs_at_origin() const {
    const int32_t sum = rope_sections[0] + rope_sections[1] + rope_sections[2] + rope_sections[3];
    if (sum == 0) return {};
    std::vector<uint8_t> at_origin(n_rot / 2);
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
      const int32_t sector = static_cast<int32_t>(i) % sum;
      at_origin[i] = sector < 3 * rope_sections[static_cast<size_t>(sector % 3)] ? 0 : 1;
    }
    return at_origin;
  }
  // The queries' factor at position `pos` (1 without a temperature), in
  // llama.cpp's steps (llm_graph_input_attn_temp).
  float query_temperature(size_t pos) const {
    if (attn_temp_scale == 0) return 1.0f;
    const float blocks = std::floor(static_cast<float>(pos) / static_cast<float>(n_ctx_orig));
    return static_cast<float>(std::log(blocks + 1.0) * attn_temp_scale + 1.0);
  }
  float attention_scale_or_default() const {
    return attention_scale != 0 ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
};

class Model {
 public:
  // Binds `file`, which must outlive the Model. Errors name the file, the
  // tensor or key, what was found and what was expected.
  static Result<Model> bind(const gguf::GgufFile& file);

  const ArchSpec& arch() const { return *arch_; }
  // The mixture of experts of this file's layers; nullptr where they are dense.
  // (The family's MoeSpec, with what the file sets where it is from_file.)
  const MoeSpec* moe() const { return hp_.n_expert != 0 ? &moe_ : nullptr; }
  const Hparams& hparams() const { return hp_; }
  const Weight& token_embd() const { return token_embd_; }
  const Weight& output_norm() const { return output_norm_; }
  const Weight& output() const { return output_; }            // token_embd when tied
  const Weight& output_bias() const { return output_bias_; }  // absent unless qwen2 has one
  // The rotation's per-pair frequency divisors for a context of n_ctx
  // tokens (0: n_ctx_train), as llama.cpp's get_rope_factors: rope_freqs
  // (Llama 3.x), else LongRoPE's long factors for a context beyond
  // n_ctx_orig and its short ones otherwise; absent in most files.
  const Weight& rope_factors(size_t n_ctx) const;
  // Whether the file has LongRoPE's factors (Phi-3.5, Phi-4-mini).
  bool long_rope() const { return rope_long_ || rope_short_; }
  // What the keys and values depend on besides the model's file, for a
  // context of n_ctx tokens: "" in most files, "rope_factors_long" where
  // LongRoPE's long factors apply. The prefix cache keeps each apart.
  std::string_view kv_variant(size_t n_ctx) const;
  const std::vector<Layer>& layers() const { return layers_; }
  // gemma4's per-layer embeddings (Hparams::n_embd_per_layer): each token's
  // row of per_layer_token_embd (n_embd_per_layer values per layer), the
  // projection of the embedding to as many (per_layer_model_proj) and its
  // norm (per_layer_proj_norm); absent elsewhere.
  const Weight& ple_embd() const { return ple_embd_; }
  const Weight& ple_model_proj() const { return ple_model_proj_; }
  const Weight& ple_proj_norm() const { return ple_proj_norm_; }
  // Whether the rotation factors apply to layer il: to every layer, but
  // in gemma4 to the full-attention ones alone.
  bool rope_factors_apply(uint32_t il) const { return !arch_->gemma4 || !hp_.slides(il); }

  // The bytes of weights one token's step reads: every layer's weights,
  // the output norm and the output (of the embedding table, one row).
  uint64_t weight_bytes_per_token() const;

  // The multiply-adds of one token's matrix products, one per matrix
  // element (attention's own products not counted): the layers', the
  // output's (which a prompt batch computes for its last token only), and
  // how many of all have integer-quantized weights (of blocks of 32 or
  // more).
  struct MatrixWork {
    uint64_t layer_products = 0, output_products = 0, quantized_products = 0;
  };
  MatrixWork matrix_work_per_token() const;

 private:
  const ArchSpec* arch_ = nullptr;
  MoeSpec moe_;
  Hparams hp_;
  Weight token_embd_, output_norm_, output_, output_bias_, rope_freqs_;
  Weight rope_long_, rope_short_;  // LongRoPE's factors
  Weight ple_embd_, ple_model_proj_, ple_proj_norm_;
  // Rows [first, first + count) of `w` (rows of a 3-D tensor: all its
  // matrices' one after another), a 2-D Weight of their own, in place.
  Weight rows_of(const Weight& w, uint64_t first, uint64_t count);
  // The slices rows_of made, which Layer's expert and per-head Weights
  // point to (stable addresses: the Model moves, the slices do not).
  std::vector<std::unique_ptr<gguf::TensorInfo>> slices_;
  std::vector<Layer> layers_;
  bool uses_long_factors(size_t n_ctx) const;
};

}  // namespace quip::engine
