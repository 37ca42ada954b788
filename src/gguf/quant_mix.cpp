#include "gguf/quant_mix.h"

namespace quip::gguf {

namespace {

bool has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

GgmlType fallback_type(GgmlType type, uint64_t n_in) {
  if (n_in % traits(type).block_size == 0) return type;
  GgmlType smaller;
  switch (type) {
    case GgmlType::IQ4_XS: smaller = GgmlType::IQ4_NL; break;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K: smaller = GgmlType::Q4_0; break;
    case GgmlType::Q4_K: smaller = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: smaller = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: smaller = GgmlType::Q8_0; break;
    default: smaller = GgmlType::F16; break;
  }
  return n_in % traits(smaller).block_size == 0 ? smaller : GgmlType::F16;
}

bool use_more_bits(uint32_t layer, uint32_t n_layer) {
  // Signed, as in llama.cpp: (i - n/8) is negative below n/8 (but then the
  // first test already holds).
  const auto i = static_cast<int64_t>(layer), n = static_cast<int64_t>(n_layer);
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

GgmlType q4_k_m_type(const MixTensor& t, uint32_t n_layer, bool has_output) {
  // tensor_allows_quantization: two or more dimensions, a name ending in
  // "weight", not a norm.
  if (t.n_dims < 2 || !t.name.ends_with("weight") || has(t.name, "_norm.weight")) {
    return GgmlType::F32;
  }
  GgmlType type = GgmlType::Q4_K;
  if (t.name == "output.weight" || (!has_output && t.name == "token_embd.weight")) {
    type = GgmlType::Q6_K;  // llama.cpp picks Q8_0 itself when n_in % 256 != 0: the same
  } else if (has(t.name, "attn_v.weight") || has(t.name, "ffn_down")) {
    if (use_more_bits(t.layer, n_layer)) type = GgmlType::Q6_K;
  }
  return fallback_type(type, t.n_in);
}

}  // namespace quip::gguf
