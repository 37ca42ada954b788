// The reference forward pass: one token at a time, scalar float arithmetic,
// weights dequantized row by row. Written for clarity, not speed; the fast
// engine is tested against it, and it against llama.cpp's reference outputs.
//
// Each step of a layer is one named function below the class (rms_norm,
// rope, attention, swiglu), citing its source.
//
// It evaluates every token alone, in ggml's one-column orders, where
// llama.cpp evaluates a prompt as one batch in other orders
// (kernels::llama_cpp_order); its test therefore covers the shared models
// that this leaves within the tolerances of ../shared/README.md (see
// tests/engine/forward_ref_test.cpp), which excludes the BF16 one.
#pragma once

#include <span>
#include <vector>

#include "engine/model.h"

namespace quip::engine {

class ReferenceForward {
 public:
  // PRECONDITIONS: `model` outlives this.
  // n_ctx: the context the caller allows (ForwardOptions::n_ctx).
  explicit ReferenceForward(const Model& model, size_t n_ctx = 0);

  // Evaluates `token` at the next position and returns the logits
  // (n_vocab floats) for the token after it.
  std::span<const float> step(int32_t token);

  size_t position() const { return pos_; }

 private:
  void latent_query_and_key(const Layer& l, const LayerVectors& lv, const std::vector<float>& h,
                            const std::vector<float>& cos, const std::vector<float>& sin,
                            std::vector<float>& q, std::vector<float>& k) const;

  std::vector<float> dense_ffn(const Layer& l, const LayerVectors& lv,
                               const std::vector<float>& h) const;

  std::vector<float> delta_net(uint32_t il, const Layer& l, const LayerVectors& lv,
                               const std::vector<float>& h);

  // The model's vectors (norm weights, biases), dequantized once; empty when
  // the model has none.
  const Model& m_;
  std::vector<LayerVectors> layers_;
  std::vector<float> output_norm_, output_bias_, freq_factors_;
  std::vector<uint8_t> pairs_at_origin_;  // Hparams::pair_at_origin, or empty
  size_t pos_ = 0;
  // KV cache, half precision: (layer, position, n_head_kv * head_dim), grown as tokens come.
  std::vector<std::vector<uint16_t>> k_cache_, v_cache_;
  // A recurrent layer's convolution inputs and state (KvCache's layout).
  std::vector<std::vector<float>> conv_, state_;
  std::vector<float> logits_;  // (n_vocab)
};

// log-softmax of `logits`, in double precision.
std::vector<double> log_softmax(std::span<const float> logits);

}  // namespace quip::engine
