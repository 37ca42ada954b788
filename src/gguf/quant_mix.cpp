#include "gguf/quant_mix.h"

#include <cctype>
#include <string>

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

std::optional<FileMix> file_mix_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto is = [&](std::string_view want) { return lower == want; };
  if (is("q4_k_m")) return FileMix::Q4_K_M;
  if (is("q5_k_m")) return FileMix::Q5_K_M;
  if (is("q6_k")) return FileMix::Q6_K;
  if (is("iq4_xs")) return FileMix::IQ4_XS;
  if (is("mxfp4_moe")) return FileMix::MXFP4_MOE;
  return std::nullopt;
}

GgmlType mix_type(FileMix mix, const MixTensor& t, const MixModel& model) {
  // tensor_allows_quantization: two or more dimensions, a name ending in
  // "weight", not a norm, not a router.
  if (t.n_dims < 2 || !t.name.ends_with("weight") || has(t.name, "_norm.weight") ||
      has(t.name, "ffn_gate_inp.weight")) {
    return GgmlType::F32;
  }
  if (t.name == "output.weight" || (!model.has_output && t.name == "token_embd.weight")) {
    if (mix == FileMix::MXFP4_MOE) return fallback_type(GgmlType::Q8_0, t.n_in);
    // The output's own rule: Q8_0, not the usual fallback, for short rows.
    return t.n_in % 256 == 0 ? GgmlType::Q6_K : fallback_type(GgmlType::Q8_0, t.n_in);
  }
  if (mix == FileMix::MXFP4_MOE) {
    return fallback_type(t.n_matrices > 1 ? GgmlType::MXFP4 : GgmlType::Q8_0, t.n_in);
  }
  const bool attn_v = has(t.name, "attn_v.weight"), ffn_down = has(t.name, "ffn_down");
  const bool eight_experts = model.n_expert == 8;
  GgmlType type = GgmlType::F32;
  switch (mix) {
    case FileMix::Q4_K_M:
    case FileMix::Q5_K_M:
      type = (attn_v || ffn_down) && use_more_bits(t.layer, model.n_layer) ? GgmlType::Q6_K
             : mix == FileMix::Q4_K_M                                      ? GgmlType::Q4_K
                                                                           : GgmlType::Q5_K;
      break;
    case FileMix::Q6_K: type = GgmlType::Q6_K; break;
    case FileMix::IQ4_XS:
      type = (attn_v && model.n_gqa >= 4) || (ffn_down && t.layer < model.n_layer / 8)
                 ? GgmlType::Q5_K
                 : GgmlType::IQ4_XS;
      break;
    case FileMix::MXFP4_MOE: break;  // above
  }
  if (eight_experts && (attn_v || has(t.name, "attn_k.weight"))) type = GgmlType::Q8_0;
  if (eight_experts && has(t.name, "attn_output.weight") &&
      (mix == FileMix::Q4_K_M || mix == FileMix::IQ4_XS)) {
    type = GgmlType::Q5_K;
  }
  return fallback_type(type, t.n_in);
}

GgmlType q4_k_m_type(const MixTensor& t, uint32_t n_layer, bool has_output) {
  return mix_type(FileMix::Q4_K_M, t, {n_layer, has_output});
}

}  // namespace quip::gguf
