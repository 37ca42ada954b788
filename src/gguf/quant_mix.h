// The per-tensor types of llama.cpp's mixed file types: which tensor type
// llama.cpp's quantizer (llama_tensor_get_type in src/llama-quant.cpp) gives
// each tensor of a model when asked for a file type such as Q4_K_M. Used by
// quip-synth to write files with the type mix of real downloads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gguf/types.h"

namespace quip::gguf {

// The file types whose mix quip-synth writes, with llama.cpp's
// general.file_type (llama_ftype) as their values.
enum class FileMix : uint32_t {
  Q4_K_M = 15,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_XS = 30,
  MXFP4_MOE = 38,
};

// "q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "mxfp4_moe" (llama-quantize's
// names, any case).
std::optional<FileMix> file_mix_from_name(std::string_view name);

// general.file_type of a Q4_K_M file (LLAMA_FTYPE_MOSTLY_Q4_K_M).
inline constexpr uint32_t kFileTypeQ4_K_M = static_cast<uint32_t>(FileMix::Q4_K_M);

// A tensor as llama.cpp's type choice sees it.
struct MixTensor {
  std::string_view name;    // GGUF name: "token_embd.weight", "blk.3.ffn_down.weight"
  uint32_t layer;           // N of "blk.N."; ignored for tensors outside the blocks
  uint32_t n_dims;          // 1 for norms and biases
  uint64_t n_in;            // row length: the first dimension
  uint64_t n_matrices = 1;  // the third dimension: experts
};

// What of the model the choice depends on.
struct MixModel {
  uint32_t n_layer;
  bool has_output;        // false: the output is tied to token_embd.weight
  uint32_t n_gqa = 1;     // query heads per key/value head
  uint32_t n_expert = 0;  // experts per layer (0 or 1: none)
};

// The type of `t` in a file of type `mix`. As llama.cpp without an
// importance matrix or overrides, for models with separate Q, K, V
// projections (llama, qwen2, qwen3, and with experts qwen3moe and gpt-oss;
// llama.cpp has further rules for Falcon, 70B models and fused QKV):
//   output.weight, or token_embd.weight when tied: Q6_K (MXFP4_MOE: Q8_0)
//   Q4_K_M, Q5_K_M: Q4_K, Q5_K, except attn_v.weight and ffn_down (and
//     ffn_down_exps) in the layers use_more_bits picks: Q6_K
//   Q6_K: Q6_K
//   IQ4_XS: IQ4_XS, except attn_v.weight where n_gqa >= 4 and ffn_down in
//     the first eighth of the layers: Q5_K
//   MXFP4_MOE: the experts' 3-D tensors MXFP4, every other matrix Q8_0
//   and with exactly 8 experts (Mixtral's rules), attn_k and attn_v Q8_0
//   and, in Q4_K_M and IQ4_XS, attn_output Q5_K
// then the fallback (fallback_type) where a row is not whole blocks; the
// output falls to Q8_0 where its rows are not whole blocks of 256. Tensors
// llama.cpp does not quantize (one dimension, norms, routers, names not
// ending in "weight") keep their type, which is F32 in the files quip-synth writes:
// F32 here.
GgmlType mix_type(FileMix mix, const MixTensor& t, const MixModel& model);

// mix_type(FileMix::Q4_K_M, t, {n_layer, has_output}).
GgmlType q4_k_m_type(const MixTensor& t, uint32_t n_layer, bool has_output);

// llama.cpp's tensor_type_fallback: the type llama.cpp's quantizer writes
// for a tensor of rows of n_in values when asked for `type` (also with
// --pure): `type` where whole blocks fit a row, else for the 256-element
// formats a 32-element one of at least as many bits (IQ4_XS: IQ4_NL; Q2_K,
// Q3_K: Q4_0; Q4_K: Q5_0; Q5_K: Q5_1; Q6_K: Q8_0), else F16 (where
// llama.cpp refuses a 32-element type, quip-synth writes F16 too).
GgmlType fallback_type(GgmlType type, uint64_t n_in);

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third one between them get more bits in the _M mixes.
bool use_more_bits(uint32_t layer, uint32_t n_layer);

}  // namespace quip::gguf
