// A model bound from a GGUF file: hyper-parameters and weights, used in
// place in the memory map. Architectures are data (ArchSpec), not classes:
// one forward pass reads the spec and asks only whether optional tensors are
// there.
#pragma once

#include <cmath>
#include <cstdint>
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

struct ArchSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope;
  bool qkv_bias;  // Q, K, V have biases (qwen2)
  bool qk_norm;   // per-head RMS norm of Q and K (qwen3)
  // Granite's scales (Hparams: embedding, residual, attention, logit) are
  // read from the file.
  bool scales = false;
  // Every step-th layer (layer il with (il + 1) % step == 0) has no
  // rotation (smollm3's NoPE layers; llama.cpp's fixed 4, no key); 0: none.
  uint32_t no_rope_step = 0;
  // phi3: one attn_qkv (rows Q, then K, then V) and one ffn_up of 2 n_ff
  // rows (the gate's, then the up's) instead of separate tensors.
  bool fused = false;
  // phi3: the queries times 1/sqrt(head_dim) after the rotation, and the
  // attention scores unscaled (ggml rounds the scaled queries).
  bool scale_queries = false;
  // olmo2: no norms before the branches; each branch's output RMS-normed
  // (post_attention_norm, post_ffw_norm) before its residual add; Q and K
  // normed over the whole projection, before the split into heads; a
  // sliding window (Olmo 3) is refused until quip has one.
  bool post_norms_only = false;
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
  Weight attn_norm, wq, wk, wv, wqkv, wo, bq, bk, bv, q_norm, k_norm;  // wqkv: fused
  Weight ffn_norm, w_gate, w_up, w_down;
  Weight post_attn_norm, post_ffn_norm;  // olmo2's norms of the branch outputs  // fused: w_up
                                         // holds the gate, no w_gate
};

struct Hparams {
  uint32_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  uint32_t n_vocab = 0, n_ctx_train = 0, n_rot = 0;
  float rope_base = 10000.0f, rms_eps = 1e-5f;
  // As llama.cpp's hparams, 0 where unused: embeddings times
  // embedding_scale; each branch's output times residual_scale before its
  // residual add; attention scores times attention_scale instead of
  // 1/sqrt(head_dim); logits times 1 / logit_scale.
  float embedding_scale = 0, residual_scale = 0, attention_scale = 0, logit_scale = 0;

  // Whether layer il rotates its queries and keys.
  bool rotates(uint32_t il, const ArchSpec& arch) const {
    return arch.no_rope_step == 0 || (il + 1) % arch.no_rope_step != 0;
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
  const Hparams& hparams() const { return hp_; }
  const Weight& token_embd() const { return token_embd_; }
  const Weight& output_norm() const { return output_norm_; }
  const Weight& output() const { return output_; }          // token_embd when tied
  const Weight& rope_freqs() const { return rope_freqs_; }  // absent unless Llama 3.x
  const std::vector<Layer>& layers() const { return layers_; }

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
  Hparams hp_;
  Weight token_embd_, output_norm_, output_, rope_freqs_;
  std::vector<Layer> layers_;
};

}  // namespace quip::engine
