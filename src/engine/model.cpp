#include "engine/model.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/text.h"
#include "gguf/keys.h"
#include "kernels/dequantize.h"

namespace quip::engine {

namespace {

constexpr ArchSpec kArchs[] = {
    {.name = "llama", .projection_biases = true, .moe = MoeSpec{.where_counted = true}},
    {.name = "qwen2", .rope = RopeStyle::NeoX, .output_bias = true},
    {.name = "qwen3", .rope = RopeStyle::NeoX, .qk_norm = true},
    {.name = "granite", .scales = true, .projection_biases = true},
    {.name = "smollm3", .no_rope_step = 4},
    {.name = "phi3",
     .rope = RopeStyle::NeoX,
     .fused_gate_up = true,
     .long_rope = true,
     .scale_queries = true},
    {.name = "olmo2",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .qk_norm_whole = true,
     .pre_norms = false,
     .post_norms = true,
     .sliding = SlidingWindow{.default_window = 0, .default_pattern = 4, .inherits_base = true}},
    {.name = "gemma2",
     .rope = RopeStyle::NeoX,
     .scale_queries = true,
     .post_norms = true,
     .ffn = Activation::GeGLU,
     .embed_scale_sqrt = true,
     .attn_softcap = 50.0f,
     .final_softcap = 30.0f,
     .wide_query_scale_layers = 46,
     .sliding = SlidingWindow{.default_window = 4096,
                              .default_pattern = 2,
                              .inherits_base = true,
                              .inherits_scale = true}},
    {.name = "gemma3",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .scale_queries = true,
     .post_norms = true,
     .ffn = Activation::GeGLU,
     .embed_scale_sqrt = true,
     .final_softcap = 0.0f,
     .wide_query_scale_layers = 62,
     .sliding = SlidingWindow{.default_window = 0, .default_pattern = 6}},
    {.name = "mistral3", .projection_biases = true, .yarn_keys = true, .attn_temperature = true},
    {.name = "glm4",
     .fused_gate_up = true,
     .post_norms = true,
     .nextn = true,
     .rope_sections = ArchSpec::Sections::RefusedWhereSet},
    {.name = "exaone4",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .pre_norms = false,
     .post_norms = true,
     .sliding = SlidingWindow{.default_window = 4096,
                              .default_pattern = 4,
                              .inherits_base = true,
                              .inherits_scale = true,
                              .only_with_blocks = 64,
                              .global_layers_unrotated = true},
     .nextn = true},
    {.name = "cohere2",
     .sliding = SlidingWindow{.default_window = 0,
                              .default_pattern = 4,
                              .inherits_base = true,
                              .inherits_scale = true,
                              .global_layers_unrotated = true,
                              .required = true},
     .layer_norm = true,
     .parallel_block = true,
     .always_tied = true,
     .logit_scale_multiplies = true},
    {.name = "qwen3moe", .rope = RopeStyle::NeoX, .qk_norm = true, .moe = MoeSpec{}},
    {.name = "qwen2moe",
     .rope = RopeStyle::NeoX,
     .moe = MoeSpec{.normalize = false, .shared_expert = SharedExpert::Gated}},
    {.name = "deepseek2",
     .moe = MoeSpec{.from_file = true,
                    .shared_expert = SharedExpert::Counted,
                    .reads_fused_gate_up = true},
     .latent_attention = true,
     .nextn = true},
    {.name = "gpt-oss",
     .rope = RopeStyle::NeoX,
     .sliding = SlidingWindow{.default_window = 0,
                              .default_pattern = 2,
                              .inherits_base = true,
                              .inherits_scale = true,
                              .required = true},
     .moe = MoeSpec{.gating = Gating::SoftmaxChosen,
                    .normalize = false,
                    .biases = true,
                    .activation = Activation::SwiGLUClamped},
     .sinks = true,
     .ffn_norm = "post_attention_norm.weight"},
    {.name = "qwen3vl",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .rope_sections = ArchSpec::Sections::Required},
    {.name = "qwen35",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .ffn_norm = "post_attention_norm.weight",
     .nextn = true,
     .rope_sections = ArchSpec::Sections::Required,
     .delta_net = true,
     .query_gate = true},
    {.name = "qwen35moe",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .moe = MoeSpec{.shared_expert = SharedExpert::Gated, .plain_sigmoid_gate = true},
     .ffn_norm = "post_attention_norm.weight",
     .nextn = true,
     .rope_sections = ArchSpec::Sections::Required,
     .delta_net = true,
     .query_gate = true},
    {.name = "gemma4",
     .rope = RopeStyle::NeoX,
     .qk_norm = true,
     .post_norms = true,
     .ffn = Activation::GeGLU,
     .embed_scale_sqrt = true,
     .final_softcap = 0.0f,
     .sliding = SlidingWindow{.default_window = 0, .default_pattern = 0, .required = true},
     .moe = MoeSpec{.activation = Activation::GeGLU},
     .gemma4 = true},
};

// Whether tensor `name` belongs to a NextN block (blk.N. with N at or past
// n_layer, below n_block).
bool in_nextn_block(std::string_view name, const Hparams& hp) {
  if (hp.n_block == hp.n_layer || !name.starts_with("blk.")) return false;
  uint32_t block = 0;
  const char* end = name.data() + name.size();
  const auto [at, ec] = std::from_chars(name.data() + 4, end, block);
  return ec == std::errc() && at != end && *at == '.' && block >= hp.n_layer && block < hp.n_block;
}

// YaRN's correction range (ggml_rope_yarn_corr_dims): the pairs whose
// wavelength spans between beta_fast (32) and beta_slow (1) rotations over
// the original context (llama.cpp's defaults 32 and 1, or the file's).
void yarn_correction(RopeFrequencies& rope, const Hparams& hp) {
  const uint32_t n_rot = hp.n_rot, n_ctx_orig = hp.n_ctx_orig;
  const auto dim = [&](float rotations) {
    return static_cast<float>(n_rot) *
           std::log(static_cast<float>(n_ctx_orig) / (rotations * 2 * static_cast<float>(M_PI))) /
           (2 * std::log(rope.base));
  };
  rope.corr_low = std::max(0.0f, std::floor(dim(hp.yarn_beta_fast)));
  rope.corr_high = std::min(static_cast<float>(n_rot - 1), std::ceil(dim(hp.yarn_beta_slow)));
}

// Latent attention's keys (ArchSpec::latent_attention) into hp.latent,
// checked against the cache's shape that llama.cpp derives from them, and
// its attention scale: mscale^2 / sqrt(key_length_mla), mscale being
// YaRN's magnitude times (1 + 0.1 ln(1 / freq_scale)) times (1 + 0.1
// log_mul ln(1 / freq_scale)), in llama.cpp's float steps.
Result<void> read_latent_keys(const gguf::GgufFile& f, const ArchSpec& spec,
                              const std::string& prefix, float log_mul, Hparams& hp) {
  const auto key = [&](std::string_view suffix) { return gguf::keys::arch_key(spec.name, suffix); };
  Hparams::Latent latent;
  auto q_rank = f.get_optional<uint32_t>(key("attention.q_lora_rank"));
  auto kv_rank = f.get<uint32_t>(key("attention.kv_lora_rank"));
  auto k_mla = f.get_optional<uint32_t>(key("attention.key_length_mla"));
  auto v_mla = f.get_optional<uint32_t>(key("attention.value_length_mla"));
  if (!q_rank) return q_rank.error();
  if (!kv_rank) return kv_rank.error();
  if (!k_mla) return k_mla.error();
  if (!v_mla) return v_mla.error();
  if (!k_mla->has_value() || !v_mla->has_value()) {
    return Error{prefix + "latent attention without " + key("attention.key_length_mla") +
                 " (the older attn_kv_b form) is not supported yet"};
  }
  latent.q_lora_rank = q_rank->value_or(0);
  latent.kv_lora_rank = *kv_rank;
  latent.mla_key = **k_mla;
  latent.mla_value = **v_mla;
  if (latent.kv_lora_rank == 0 || hp.n_head_kv != 1 ||
      hp.head_dim != latent.kv_lora_rank + hp.n_rot || hp.value_dim != latent.kv_lora_rank ||
      latent.mla_key <= hp.n_rot || latent.mla_value == 0) {
    return Error{prefix + "latent attention of rank " + std::to_string(latent.kv_lora_rank) +
                 " needs one KV head (" + key("attention.head_count_kv") + " " +
                 std::to_string(hp.n_head_kv) + "), keys of the rank plus the " +
                 std::to_string(hp.n_rot) + " rotated values (" + key("attention.key_length") +
                 " " + std::to_string(hp.head_dim) + "), values of the rank (" +
                 key("attention.value_length") + " " + std::to_string(hp.value_dim) +
                 ") and heads wider than the rotation (" + key("attention.key_length_mla") + " " +
                 std::to_string(latent.mla_key) + ")"};
  }
  hp.latent = latent;
  const float stretch = std::log(1.0f / hp.rope.freq_scale);
  const float mscale =
      hp.rope.mscale * std::fma(0.1f, stretch, 1.0f) * std::fma(0.1f * log_mul, stretch, 1.0f);
  hp.attention_scale = mscale * mscale / std::sqrt(static_cast<float>(latent.mla_key));
  return {};
}

// The keys of rotation, attention and output that change the computation:
// read into `hp` where quip computes them; otherwise refused, naming the key
// and value, never computed as if they were absent.
//   - RoPE scaling: for type linear (the default) every angle times 1 /
//     rope.scaling.factor (or the older rope.scale_linear); for none, no
//     scaling; cos and sin times rope.scaling.attn_factor; for yarn, YaRN
//     over rope.scaling.original_context_length. LongRoPE is linear
//     scaling plus the factor tensors that Model::bind reads (Phi-3 files
//     say so with those tensors alone, or with type longrope).
//   - Value heads of another size than the key heads; sliding layers with
//     other head or rotation sizes than the others (per-layer KV widths).
//   - Sliding windows, soft caps and the query scale, as the family's
//     llama.cpp loader reads them.
Result<void> read_attention_keys(const gguf::GgufFile& f, const ArchSpec& spec,
                                 const std::string& prefix, Hparams& hp) {
  const auto key = [&](std::string_view suffix) { return gguf::keys::arch_key(spec.name, suffix); };
  // Reads optional key `suffix` into *out, or `fallback` without it.
  const auto read = [&]<typename T>(std::string_view suffix, T* out, T fallback) -> Result<bool> {
    auto v = f.get_optional<T>(key(suffix));
    if (!v) return v.error();
    *out = v->value_or(fallback);
    return v->has_value();
  };
  std::string_view kind;
  if (auto r = read("rope.scaling.type", &kind, std::string_view("linear")); !r) return r.error();
  if (kind != "linear" && kind != "none" && kind != "yarn" && kind != "longrope") {
    return Error{prefix + "RoPE scaling '" + printable(kind) + "' (" + key("rope.scaling.type") +
                 ") is not supported yet"};
  }
  float factor = 0;
  for (const char* suffix : {"rope.scaling.factor", "rope.scale_linear"}) {
    auto found = read(suffix, &factor, 0.0f);
    if (!found) return found.error();
    if (!std::isfinite(factor) || factor < 0) {
      return Error{prefix + key(suffix) + " is " + std::to_string(factor) +
                   ", not a positive factor"};
    }
    if (*found) break;  // llama.cpp reads the older key only without the newer
  }
  hp.rope.freq_scale = kind == "none" || factor == 0 ? 1.0f : 1.0f / factor;
  float attn_factor = 1.0f;
  if (auto r = read("rope.scaling.attn_factor", &attn_factor, 1.0f); !r) return r.error();
  if (!std::isfinite(attn_factor)) {
    return Error{prefix + key("rope.scaling.attn_factor") + " is not a finite number"};
  }
  hp.rope.mscale = attn_factor;
  if (auto r = read("rope.scaling.original_context_length", &hp.n_ctx_orig, hp.n_ctx_train); !r) {
    return r.error();
  }
  float log_mul = 0;  // mistral3's yarn_log_multiplier (DeepSeek's mscale_all_dim)
  if (spec.latent_attention) {
    // Stored as 0.1 times mscale_all_dim (llama.cpp's
    // TAG_DEEPSEEK2_YARN_LOG_MUL_FIX divides it out again).
    if (auto r = read("rope.scaling.yarn_log_multiplier", &log_mul, 0.0f); !r) return r.error();
    if (!std::isfinite(log_mul)) {
      return Error{prefix + key("rope.scaling.yarn_log_multiplier") + " is not a finite number"};
    }
    log_mul /= 0.1f;
  }
  if (spec.yarn_keys) {
    for (auto [suffix, out, fallback] :
         {std::tuple{"rope.scaling.yarn_beta_fast", &hp.yarn_beta_fast, 32.0f},
          std::tuple{"rope.scaling.yarn_beta_slow", &hp.yarn_beta_slow, 1.0f},
          std::tuple{"rope.scaling.yarn_log_multiplier", &log_mul, 0.0f}}) {
      if (auto r = read(suffix, out, fallback); !r) return r.error();
      if (!std::isfinite(*out)) return Error{prefix + key(suffix) + " is not a finite number"};
    }
  }
  if (spec.attn_temperature) {
    if (auto r = read("attention.temperature_scale", &hp.attn_temp_scale, 0.0f); !r) {
      return r.error();
    }
    if (!std::isfinite(hp.attn_temp_scale)) {
      return Error{prefix + key("attention.temperature_scale") + " is not a finite number"};
    }
    if (hp.attn_temp_scale != 0 && hp.n_ctx_orig == 0) {
      return Error{prefix + "an attention temperature needs an original context (" +
                   key("rope.scaling.original_context_length") + ")"};
    }
  }
  if (kind == "yarn") {
    // llama.cpp's context setup: YaRN's magnitude 1 + 0.1 ln(factor) (over
    // 1 + 0.1 log_mul ln(factor) with a log multiplier), which rope_yarn
    // applies, divided out again (and a factor <= 1 none), times the
    // file's attn_factor; in its float steps.
    const float yarn_factor = 1.0f / hp.rope.freq_scale;
    const auto magnitude_of = [&](float mscale) {
      return yarn_factor <= 1.0f ? 1.0f : 0.1f * mscale * std::log(yarn_factor) + 1.0f;
    };
    const float magnitude = std::fma(0.1f, std::log(yarn_factor), 1.0f);
    // deepseek2's mscale is its mscale_all_dim where that is not 1.
    const float mscale = spec.latent_attention && log_mul != 1.0f ? log_mul : 1.0f;
    const float applied = log_mul != 0 ? magnitude_of(mscale) / magnitude_of(log_mul)
                                       : (yarn_factor <= 1.0f ? 1.0f : magnitude);
    hp.rope.mscale = applied * (1.0f / magnitude) * attn_factor;
    hp.rope.ext_factor = 1.0f;
  }

  uint32_t value_length = 0;
  if (auto r = read("attention.value_length", &value_length, hp.head_dim); !r) return r.error();
  hp.value_dim = value_length;
  if (spec.latent_attention) {
    if (auto r = read_latent_keys(f, spec, prefix, log_mul, hp); !r) return r.error();
  } else if (value_length != hp.head_dim) {
    return Error{prefix + "value heads of " + std::to_string(value_length) + " (" +
                 key("attention.value_length") + ") differ from key heads of " +
                 std::to_string(hp.head_dim) + ": not supported yet"};
  }

  if (spec.rope_sections == ArchSpec::Sections::Required) {
    auto sections = f.get_array(key("rope.dimension_sections"), gguf::ValueType::I32);
    if (!sections) return sections.error();
    const gguf::ArrayView& a = **sections;
    int64_t sum = 0;  // of up to four int32 values: no overflow
    for (uint64_t i = 0; i < std::min<uint64_t>(a.length, 4); ++i) {
      hp.rope_sections[i] = a.at<int32_t>(i);
      if (hp.rope_sections[i] < 0) {
        return Error{prefix + key("rope.dimension_sections") + " has a negative section"};
      }
      sum += hp.rope_sections[i];
    }
    if (sum == 0 || sum > int64_t{hp.head_dim}) {
      return Error{prefix + key("rope.dimension_sections") + " add up to " + std::to_string(sum) +
                   ", not 1 to the head size " + std::to_string(hp.head_dim)};
    }
  }
  if (spec.rope_sections == ArchSpec::Sections::RefusedWhereSet) {
    // llama.cpp rotates by sections (multimodal RoPE) when the first two
    // of the four are set.
    if (f.find(key("rope.dimension_sections")) != nullptr) {
      auto sections = f.get_array(key("rope.dimension_sections"), gguf::ValueType::I32);
      if (!sections) return sections.error();
      const gguf::ArrayView& a = **sections;
      if (a.length >= 2 && a.at<int32_t>(0) > 0 && a.at<int32_t>(1) > 0) {
        return Error{prefix + "multimodal rotation sections (" + key("rope.dimension_sections") +
                     ") are not supported yet"};
      }
    }
  }

  hp.rope_sliding = hp.rope;
  if (spec.sliding) {
    if (auto r = read("attention.sliding_window", &hp.window, spec.sliding->default_window); !r) {
      return r.error();
    }
    if (spec.sliding->required && f.find(key("attention.sliding_window")) == nullptr) {
      return Error{prefix + "key '" + key("attention.sliding_window") + "' not found"};
    }
    const uint32_t only = spec.sliding->only_with_blocks;
    if (only != 0 && hp.n_block != only) hp.window = 0;
  }
  if (hp.window > 0) {
    const SlidingWindow& sw = *spec.sliding;
    // (gemma4's pattern is a bool per layer: read_gemma4_shapes.)
    if (auto r = spec.gemma4 ? Result<bool>(false)
                             : read("attention.sliding_window_pattern", &hp.window_pattern,
                                    sw.default_pattern);
        !r) {
      return r.error();
    }
    if (auto r = read("rope.freq_base_swa", &hp.rope_sliding.base,
                      sw.inherits_base ? hp.rope.base : 10000.0f);
        !r) {
      return r.error();
    }
    if (!sw.inherits_scale) hp.rope_sliding.freq_scale = 1.0f;
    for (auto [suffix, full] : {std::pair{"attention.key_length_swa", hp.head_dim},
                                std::pair{"attention.value_length_swa", hp.head_dim},
                                std::pair{"rope.dimension_count_swa", hp.n_rot}}) {
      uint32_t v = 0;
      if (auto r = read(suffix, &v, full); !r) return r.error();
      if (v != full && !spec.gemma4) {  // gemma4's per-layer shapes allow it
        return Error{prefix + "sliding layers with " + std::to_string(v) + " (" + key(suffix) +
                     ") where the others have " + std::to_string(full) + ": not supported yet"};
      }
    }
  }

  for (auto [suffix, family_default, out] :
       {std::tuple{"attn_logit_softcapping", spec.attn_softcap, &hp.attn_softcap},
        std::tuple{"final_logit_softcapping", spec.final_softcap, &hp.final_softcap}}) {
    if (!family_default) continue;
    if (auto r = read(suffix, out, *family_default); !r) return r.error();
  }
  for (RopeFrequencies* rope : {&hp.rope, &hp.rope_sliding}) {
    if (rope->ext_factor != 0.0f) yarn_correction(*rope, hp);
  }
  if (!std::isfinite(hp.attn_softcap) || !std::isfinite(hp.final_softcap)) {
    return Error{prefix + "a soft-capping value is not a finite number"};
  }
  if (spec.scale_queries) {
    // llama.cpp knows the 27B Gemmas, whose queries are scaled by
    // n_embd / n_head rather than the head size (their
    // query_pre_attn_scalar), by their layer count.
    const bool wide =
        spec.wide_query_scale_layers != 0 && hp.n_layer == spec.wide_query_scale_layers;
    hp.query_scale =
        1.0f / std::sqrt(static_cast<float>(wide ? hp.n_embd / hp.n_head : hp.head_dim));
  }
  if (spec.embed_scale_sqrt) hp.embedding_scale = std::sqrt(static_cast<float>(hp.n_embd));
  return {};
}

// Gated DeltaNet's keys (ArchSpec::delta_net) into hp.delta_net, and which
// layers are recurrent: attention.recurrent_layers (a bool per block)
// where the file has it, else all but every full_attention_interval-th (4
// without the key), as llama.cpp's qwen35 loaders read them. Its fused
// kernel needs the key and value heads of one size (inner_size is
// state_size times time_step_rank); sizes beyond any published model's
// are refused before they size the state.
Result<void> read_delta_net_keys(const gguf::GgufFile& f, const ArchSpec& spec,
                                 const std::string& prefix, Hparams& hp) {
  const auto key = [&](std::string_view suffix) { return gguf::keys::arch_key(spec.name, suffix); };
  uint32_t values[5] = {};
  const char* names[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size",
                          "ssm.time_step_rank", "ssm.group_count"};
  for (size_t i = 0; i < 5; ++i) {
    auto v = f.get<uint32_t>(key(names[i]));
    if (!v) return v.error();
    values[i] = *v;
  }
  Hparams::DeltaNet dn{.conv_kernel = values[0],
                       .head_dim = values[2],
                       .n_k_heads = values[4],
                       .n_v_heads = values[3]};
  constexpr uint32_t kMaxConv = 64, kMaxHead = 1024, kMaxHeads = 1024;
  if (dn.conv_kernel == 0 || dn.conv_kernel > kMaxConv || dn.head_dim == 0 ||
      dn.head_dim > kMaxHead || dn.n_k_heads == 0 || dn.n_v_heads == 0 ||
      dn.n_v_heads > kMaxHeads || dn.n_v_heads % dn.n_k_heads != 0 ||
      uint64_t{values[1]} != uint64_t{dn.head_dim} * dn.n_v_heads) {
    return Error{prefix + "Gated DeltaNet of " + std::to_string(dn.n_v_heads) + " value heads (" +
                 key("ssm.time_step_rank") + "), " + std::to_string(dn.n_k_heads) + " key heads (" +
                 key("ssm.group_count") + "), heads of " + std::to_string(dn.head_dim) + " (" +
                 key("ssm.state_size") + "), " + key("ssm.inner_size") + " " +
                 std::to_string(values[1]) + " and " + std::to_string(dn.conv_kernel) + " taps (" +
                 key("ssm.conv_kernel") +
                 "): not supported (value heads a multiple of the key heads, inner_size their " +
                 "count times their size, heads of at most " + std::to_string(kMaxHead) +
                 ", at most " + std::to_string(kMaxConv) + " taps)"};
  }
  hp.delta_net = dn;
  hp.recurrent.assign(hp.n_layer, 0);
  if (const gguf::Value* v = f.find(key("attention.recurrent_layers")); v != nullptr) {
    const auto* array = std::get_if<gguf::ArrayView>(v);
    if (array == nullptr || array->elem_type != gguf::ValueType::Bool ||
        array->length != hp.n_block) {
      return Error{prefix + "key '" + key("attention.recurrent_layers") +
                   "' is not one bool per block (" + std::to_string(hp.n_block) + ")"};
    }
    for (uint32_t i = 0; i < hp.n_layer; ++i) hp.recurrent[i] = array->at<bool>(i) ? 1 : 0;
    return {};
  }
  auto interval = f.get_optional<uint32_t>(key("full_attention_interval"));
  if (!interval) return interval.error();
  const uint32_t every = interval->value_or(4);
  if (every == 0) return Error{prefix + key("full_attention_interval") + " must not be 0"};
  for (uint32_t i = 0; i < hp.n_layer; ++i) hp.recurrent[i] = (i + 1) % every != 0 ? 1 : 0;
  return {};
}

// gemma4's shapes per layer (ArchSpec::gemma4) into hp.layer_shapes, as
// its llama.cpp loader reads them: attention.sliding_window_pattern (a
// bool per block) says which layers slide; a sliding layer's heads are
// attention.key_length_swa wide (values as wide) and rotate
// rope.dimension_count_swa of them; head_count_kv and feed_forward_length
// may differ per layer (`n_head_kv` and `n_ff`, one per layer); the last
// attention.shared_kv_layers layers read the keys and values of the last
// earlier layer of their kind (llama.cpp takes the one before the first
// sharing layer for the full ones, the one before that for the sliding
// ones, and so requires them of those kinds). Also the per-layer
// embeddings' width, and attention scores unscaled.
Result<void> read_gemma4_shapes(const gguf::GgufFile& f, const ArchSpec& spec,
                                const std::string& prefix, const std::vector<uint32_t>& n_head_kv,
                                const std::vector<uint32_t>& n_ff, Hparams& hp) {
  const auto key = [&](std::string_view suffix) { return gguf::keys::arch_key(spec.name, suffix); };
  const gguf::Value* v = f.find(key("attention.sliding_window_pattern"));
  const auto* pattern = v != nullptr ? std::get_if<gguf::ArrayView>(v) : nullptr;
  if (pattern == nullptr || pattern->elem_type != gguf::ValueType::Bool ||
      pattern->length != hp.n_block) {
    return Error{prefix + "key '" + key("attention.sliding_window_pattern") +
                 "' is not one bool per block (" + std::to_string(hp.n_block) + ")"};
  }
  uint32_t sizes[5] = {};
  const char* names[5] = {"attention.key_length_swa", "attention.value_length_swa",
                          "rope.dimension_count_swa", "embedding_length_per_layer_input",
                          "attention.shared_kv_layers"};
  for (size_t i = 0; i < 5; ++i) {
    // The first, second and fourth are required, as llama.cpp's loader.
    auto got = f.get_optional<uint32_t>(key(names[i]));
    if (!got) return got.error();
    if (!got->has_value() && i != 2 && i != 4) {
      return Error{prefix + "key '" + key(names[i]) + "' not found"};
    }
    sizes[i] = got->value_or(i == 2 ? sizes[0] : 0);
  }
  const uint32_t head_swa = sizes[0], n_rot_swa = sizes[2], shared = sizes[4];
  if (head_swa == 0 || sizes[1] != head_swa || hp.value_dim != hp.head_dim ||
      n_rot_swa > head_swa || n_rot_swa % 2 != 0) {
    return Error{prefix + "gemma4 needs values as wide as keys (" + key(names[0]) + " " +
                 std::to_string(head_swa) + ", " + key(names[1]) + " " + std::to_string(sizes[1]) +
                 ") and an even rotation within the head (" + key(names[2]) + " " +
                 std::to_string(n_rot_swa) + ")"};
  }
  hp.n_embd_per_layer = sizes[3];
  if (shared != 0 && (shared + 2 > hp.n_layer)) {
    return Error{prefix + key(names[4]) + " " + std::to_string(shared) + " leaves fewer than " +
                 "2 of the " + std::to_string(hp.n_layer) + " layers with keys and values"};
  }
  const uint32_t first_shared = hp.n_layer - shared;
  hp.layer_shapes.resize(hp.n_layer);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    Hparams::LayerShape& ls = hp.layer_shapes[il];
    ls.slides = pattern->at<bool>(il);
    ls.head_dim = ls.slides ? head_swa : hp.head_dim;
    ls.n_rot = ls.slides ? n_rot_swa : hp.n_rot;
    ls.n_head_kv = n_head_kv[il];
    ls.n_ff = n_ff[il];
    if (ls.n_head_kv == 0 || hp.n_head % ls.n_head_kv != 0 || ls.n_ff == 0) {
      return Error{prefix + "layer " + std::to_string(il) + ": head_count " +
                   std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                   std::to_string(ls.n_head_kv) + ", or its feed_forward_length is 0"};
    }
    ls.kv_layer = il < first_shared ? il : first_shared - (ls.slides ? 2 : 1);
  }
  for (uint32_t il = first_shared; il < hp.n_layer; ++il) {
    const Hparams::LayerShape &ls = hp.layer_shapes[il], &from = hp.layer_shapes[ls.kv_layer];
    if (from.slides != ls.slides || from.n_head_kv != ls.n_head_kv) {
      return Error{prefix + "layer " + std::to_string(il) + " would read the keys and values of " +
                   "layer " + std::to_string(ls.kv_layer) + ", which is not of its kind (" +
                   key(names[4]) + " " + std::to_string(shared) + ")"};
    }
  }
  hp.attention_scale = 1.0f;
  return {};
}

// MoeSpec::from_file's keys (deepseek2), as its llama.cpp loader reads
// them: the gating function (1 softmax, 2 sigmoid, 3 a softmax over the
// chosen logits; without it, softmax, but sigmoid in GLM-4.7-Flash's
// shape, 47 or 48 blocks and 154880 tokens), whether the weights are
// normalized (not without the key) and their scale, the leading dense
// layers, and the shared experts, each as wide as a routed one.
Result<void> read_expert_keys(const gguf::GgufFile& f, const ArchSpec& spec,
                              const std::string& prefix, Hparams& hp, MoeSpec& moe) {
  const auto key = [&](std::string_view suffix) { return gguf::keys::arch_key(spec.name, suffix); };
  auto gating = f.get_optional<uint32_t>(key("expert_gating_func"));
  auto norm = f.get_optional<bool>(key("expert_weights_norm"));
  auto scale = f.get_optional<float>(key("expert_weights_scale"));
  auto lead = f.get_optional<uint32_t>(key("leading_dense_block_count"));
  auto shared = f.get<uint32_t>(key("expert_shared_count"));
  auto n_ff_exp = f.get<uint32_t>(key("expert_feed_forward_length"));
  if (!gating) return gating.error();
  if (!norm) return norm.error();
  if (!scale) return scale.error();
  if (!lead) return lead.error();
  if (!shared) return shared.error();
  if (!n_ff_exp) return n_ff_exp.error();
  switch (gating->value_or(0)) {
    case 0: {
      // llama.cpp's vocabulary size here: vocab_size, else the token list's.
      uint64_t n_vocab = 0;
      auto vocab_size = f.get_optional<uint32_t>(key(gguf::keys::kVocabSize));
      if (!vocab_size) return vocab_size.error();
      if (vocab_size->has_value()) {
        n_vocab = **vocab_size;
      } else if (const gguf::Value* v = f.find("tokenizer.ggml.tokens"); v != nullptr) {
        if (const auto* tokens = std::get_if<gguf::ArrayView>(v)) n_vocab = tokens->length;
      }
      const bool glm47_flash = (hp.n_layer == 47 || hp.n_layer == 48) && n_vocab == 154880;
      moe.gating = glm47_flash ? Gating::Sigmoid : Gating::Softmax;
      break;
    }
    case 1: moe.gating = Gating::Softmax; break;
    case 2: moe.gating = Gating::Sigmoid; break;
    case 3: moe.gating = Gating::SoftmaxChosen; break;
    default:
      return Error{prefix + "expert gating function " + std::to_string(**gating) + " (" +
                   key("expert_gating_func") + ") is not supported yet"};
  }
  moe.normalize = norm->value_or(false);
  moe.weights_scale = scale->value_or(0.0f);
  if (!std::isfinite(moe.weights_scale)) {
    return Error{prefix + key("expert_weights_scale") + " is not a finite number"};
  }
  hp.n_dense_lead = lead->value_or(0);
  if (hp.n_dense_lead > hp.n_layer) {
    return Error{prefix + key("leading_dense_block_count") + " " + std::to_string(hp.n_dense_lead) +
                 " is more than the " + std::to_string(hp.n_layer) + " layers"};
  }
  if (*shared == 0) {
    return Error{prefix + key("expert_shared_count") + " 0: a mixture without shared experts " +
                 "is not supported yet"};
  }
  hp.n_ff_exp = *n_ff_exp;
  hp.n_ff_shexp = *n_ff_exp * *shared;
  return {};
}

}  // namespace

const ArchSpec* find_arch(std::string_view arch) {
  for (const ArchSpec& a : kArchs) {
    if (a.name == arch) return &a;
  }
  return nullptr;
}

Result<Model> Model::bind(const gguf::GgufFile& f) {
  namespace k = gguf::keys;
  const std::string prefix = printable(f.name(), 4096) + ": ";
  Model m;
  auto arch = f.get<std::string_view>(k::kArchitecture);
  if (!arch) return arch.error();
  m.arch_ = find_arch(*arch);
  if (m.arch_ == nullptr) {
    return Error{
        prefix + "architecture '" + printable(*arch) +
        "' is not supported (quip runs llama, qwen2, qwen3, gemma2, gemma3, phi3, olmo2, granite, "
        "smollm3, mistral3, glm4, qwen3vl, exaone4, cohere2, qwen3moe, qwen2moe, gpt-oss, "
        "deepseek2, qwen35, qwen35moe and gemma4)"};
  }
  const auto key = [&](std::string_view suffix) { return k::arch_key(*arch, suffix); };
  const auto u32 = [&](std::string_view suffix, uint32_t* out,
                       std::optional<uint32_t> fallback) -> Result<void> {
    auto v = f.get_optional<uint32_t>(key(suffix));
    if (!v) return v.error();
    if (!v->has_value() && !fallback) return Error{prefix + "key '" + key(suffix) + "' not found"};
    *out = v->value_or(fallback.value_or(0));
    return {};
  };
  Hparams& hp = m.hp_;
  // A count that is one value or one per block (llama.cpp's
  // get_key_or_arr). The loaders of the families quip runs build every
  // layer from layer 0's value, so an array whose values differ is refused
  // by name, as llama.cpp refuses the tensors of such a file.
  // With `each` (gemma4), the values may differ: each layer's into it,
  // and their largest into *out.
  const auto key_or_array = [&](std::string_view suffix, uint32_t* out,
                                std::optional<uint32_t> fallback,
                                std::vector<uint32_t>* each = nullptr) -> Result<void> {
    const gguf::Value* v = f.find(key(suffix));
    const auto* array = v != nullptr ? std::get_if<gguf::ArrayView>(v) : nullptr;
    if (array == nullptr) {
      auto r = u32(suffix, out, fallback);
      if (r && each != nullptr) each->assign(hp.n_block, *out);
      return r;
    }
    const bool u = array->elem_type == gguf::ValueType::U32;
    if ((!u && array->elem_type != gguf::ValueType::I32) || array->length != hp.n_block) {
      return Error{prefix + "key '" + key(suffix) + "' is not one integer per block (" +
                   std::to_string(hp.n_block) + ")"};
    }
    const auto at = [&](uint64_t i) -> int64_t {
      return u ? int64_t{array->at<uint32_t>(i)} : int64_t{array->at<int32_t>(i)};
    };
    if (each != nullptr) {
      each->clear();
      for (uint64_t i = 0; i < array->length; ++i) {
        if (at(i) < 0 || at(i) > UINT32_MAX) {
          return Error{prefix + "key '" + key(suffix) + "' has " + std::to_string(at(i)) +
                       " in layer " + std::to_string(i)};
        }
        each->push_back(static_cast<uint32_t>(at(i)));
      }
      *out = *std::max_element(each->begin(), each->end());
      return {};
    }
    for (uint64_t i = 0; i < array->length; ++i) {
      if (at(i) < 0 || at(i) != at(0)) {
        return Error{prefix + "per-layer " + key(suffix) + " (" + std::to_string(at(0)) +
                     " in layer 0, " + std::to_string(at(i)) + " in layer " + std::to_string(i) +
                     ") is not supported for " + std::string(*arch)};
      }
    }
    *out = static_cast<uint32_t>(at(0));
    return {};
  };
  for (auto [suffix, out, fallback] :
       {std::tuple{k::kEmbeddingLength, &hp.n_embd, std::optional<uint32_t>()},
        std::tuple{k::kBlockCount, &hp.n_block, std::optional<uint32_t>()},
        std::tuple{k::kContextLength, &hp.n_ctx_train, std::optional<uint32_t>(4096)}}) {
    if (auto r = u32(suffix, out, fallback); !r) return r.error();
  }
  const bool gemma4 = m.arch_->gemma4;
  std::vector<uint32_t> n_ff_each, n_head_kv_each;  // gemma4's, per layer
  if (auto r = key_or_array(k::kHeadCount, &hp.n_head, std::nullopt); !r) return r.error();
  if (auto r = key_or_array(k::kFeedForwardLength, &hp.n_ff, std::nullopt,
                            gemma4 ? &n_ff_each : nullptr);
      !r) {
    return r.error();
  }
  if (hp.n_head == 0 || hp.n_embd == 0 || hp.n_block == 0) {
    return Error{prefix + "n_embd, n_layer and n_head must be positive"};
  }
  hp.n_layer = hp.n_block;
  if (m.arch_->nextn) {
    uint32_t nextn = 0;
    if (auto r = u32("nextn_predict_layers", &nextn, 0); !r) return r.error();
    if (nextn >= hp.n_block) {
      return Error{prefix + key("nextn_predict_layers") + " " + std::to_string(nextn) +
                   " leaves no layer of the " + std::to_string(hp.n_block) + " blocks to run"};
    }
    hp.n_layer = hp.n_block - nextn;
  }
  // A mixture of experts: always in its families, in llama's where the
  // file counts experts (as llama.cpp reads expert_count for every family).
  const MoeSpec* moe = m.arch_->moe ? &*m.arch_->moe : nullptr;
  if (moe != nullptr && (moe->where_counted || m.arch_->gemma4)) {
    uint32_t count = 0;
    if (auto r = u32("expert_count", &count, 0u); !r) return r.error();
    if (count == 0) moe = nullptr;
  }
  if (moe != nullptr) {
    for (auto [suffix, out] : {std::pair{"expert_count", &hp.n_expert},
                               std::pair{"expert_used_count", &hp.n_expert_used}}) {
      if (auto r = u32(suffix, out, std::nullopt); !r) return r.error();
    }
    if (hp.n_expert == 0 || hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert) {
      return Error{prefix + key("expert_used_count") + " " + std::to_string(hp.n_expert_used) +
                   " must be 1 to " + key("expert_count") + " " + std::to_string(hp.n_expert)};
    }
    // llama's experts are feed_forward_length wide; the other families
    // say so apart, or share it out among the experts a token uses.
    if (moe->where_counted) {
      hp.n_ff_exp = hp.n_ff;
    } else if (auto r = u32("expert_feed_forward_length", &hp.n_ff_exp, hp.n_ff / hp.n_expert_used);
               !r) {
      return r.error();
    }
    m.moe_ = *moe;
    if (moe->from_file) {
      if (auto r = read_expert_keys(f, *m.arch_, prefix, hp, m.moe_); !r) return r.error();
    }
    if (moe->shared_expert == SharedExpert::Gated) {
      if (auto r = u32("expert_shared_feed_forward_length", &hp.n_ff_shexp, hp.n_ff); !r) {
        return r.error();
      }
    }
    // Groups of experts (DeepSeek-V3's routing), which llama.cpp reads for
    // every family, are not computed yet.
    uint32_t groups = 0;
    if (auto r = u32("expert_group_count", &groups, 0u); !r) return r.error();
    if (groups > 1) {
      return Error{prefix + "expert groups (" + key("expert_group_count") + " " +
                   std::to_string(groups) + ") are not supported yet"};
    }
  }
  if (auto r = key_or_array(k::kHeadCountKv, &hp.n_head_kv, hp.n_head,
                            gemma4 ? &n_head_kv_each : nullptr);
      !r) {
    return r.error();
  }
  if (auto r = u32(k::kKeyLength, &hp.head_dim, hp.n_embd / hp.n_head); !r) return r.error();
  if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0) {
    return Error{prefix + "head_count " + std::to_string(hp.n_head) + " is not a multiple of " +
                 "head_count_kv " + std::to_string(hp.n_head_kv)};
  }
  if (auto r = u32("rope.dimension_count", &hp.n_rot, hp.head_dim); !r) return r.error();
  if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    return Error{prefix + "rope.dimension_count " + std::to_string(hp.n_rot) +
                 " must be even and at most the head size " + std::to_string(hp.head_dim)};
  }
  if (auto v = f.get_optional<float>(key(k::kRopeFreqBase)); !v) {
    return v.error();
  } else if (v->has_value()) {
    hp.rope.base = **v;
  }
  if (auto r = read_attention_keys(f, *m.arch_, prefix, hp); !r) return r.error();
  if (m.arch_->delta_net) {
    if (auto r = read_delta_net_keys(f, *m.arch_, prefix, hp); !r) return r.error();
  }
  if (gemma4) {
    if (auto r = read_gemma4_shapes(f, *m.arch_, prefix, n_head_kv_each, n_ff_each, hp); !r) {
      return r.error();
    }
  }
  if (m.arch_->scales) {
    float logit_scale = 0;
    // Granite: the logit scale is required, the others optional (as llama.cpp).
    for (auto [suffix, out, required] :
         {std::tuple{"logit_scale", &logit_scale, true},
          std::tuple{"residual_scale", &hp.residual_scale, false},
          std::tuple{"embedding_scale", &hp.embedding_scale, false},
          std::tuple{"attention.scale", &hp.attention_scale, false}}) {
      auto v = f.get_optional<float>(key(suffix));
      if (!v) return v.error();
      if (!v->has_value() && required) {
        return Error{prefix + "key '" + key(suffix) + "' not found"};
      }
      *out = v->value_or(0.0f);
    }
    if (logit_scale == 0) return Error{prefix + key("logit_scale") + " must not be 0"};
    hp.logit_factor = 1.0f / logit_scale;  // ggml_scale by 1 / logit_scale
    // Granite turns rotation off with rope.scaling.finetuned = false.
    auto finetuned = f.get_optional<bool>(key("rope.scaling.finetuned"));
    if (!finetuned) return finetuned.error();
    if (finetuned->has_value() && !**finetuned) {
      return Error{prefix + "granite without rotation (" + key("rope.scaling.finetuned") +
                   " false) is not supported yet"};
    }
  }
  if (auto v = f.get_optional<float>(key("attention.layer_norm_rms_epsilon")); !v) {
    return v.error();
  } else if (v->has_value()) {
    hp.rms_eps = **v;
  }
  if (m.arch_->layer_norm) {
    hp.layer_norm = true;
    auto eps = f.get<float>(key("attention.layer_norm_epsilon"));
    if (!eps) return eps.error();
    hp.norm_eps = *eps;
  }
  if (m.arch_->logit_scale_multiplies) {  // cohere2: required, and multiplies
    auto scale = f.get<float>(key("logit_scale"));
    if (!scale) return scale.error();
    hp.logit_factor = *scale;
  }
  if (!std::isfinite(hp.logit_factor) || !std::isfinite(hp.norm_eps)) {
    return Error{prefix + "the logit scale or the norm's epsilon is not a finite number"};
  }

  // Tensors: each checked for presence, shape and a type quip can compute
  // with, and counted, so that a file with tensors beyond them is refused.
  std::vector<const gguf::TensorInfo*> bound;
  const auto bind = [&](const std::string& name, uint64_t n_in, uint64_t n_out, bool required,
                        Weight* out) -> Result<void> {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (t == nullptr) {
      if (required) return Error{prefix + "tensor '" + name + "' not found"};
      return {};
    }
    const uint64_t rows = t->n_elements / t->shape[0];
    if (t->shape[0] != n_in || (n_out != 0 && rows != n_out) || t->n_dims > 2) {
      std::string shape = std::to_string(t->shape[0]);
      for (uint32_t d = 1; d < t->n_dims; ++d) shape += " x " + std::to_string(t->shape[d]);
      return Error{prefix + "tensor '" + name + "' has shape " + shape + ", expected " +
                   std::to_string(n_in) + (n_out > 1 ? " x " + std::to_string(n_out) : "")};
    }
    if (!kernels::can_dequantize(t->type.type)) {
      return Error{prefix + "tensor '" + name + "' has type " + std::string(t->type.name) +
                   ", which quip cannot compute with yet"};
    }
    *out = Weight{t, n_in, rows};
    bound.push_back(t);
    return {};
  };
  if (auto r = bind("token_embd.weight", hp.n_embd, 0, true, &m.token_embd_); !r) return r.error();
  hp.n_vocab = static_cast<uint32_t>(m.token_embd_.n_out);
  if (auto r = bind("output_norm.weight", hp.n_embd, 1, true, &m.output_norm_); !r)
    return r.error();
  if (!m.arch_->always_tied) {
    if (auto r = bind("output.weight", hp.n_embd, hp.n_vocab, false, &m.output_); !r) {
      return r.error();
    }
  }
  if (!m.output_) m.output_ = m.token_embd_;  // tied
  // A 3-D tensor of n_expert matrices of n_out rows of n_in values, bound
  // as one Weight per expert over its slice of the data.
  // (Latent attention's per-head matrices are bound likewise.)
  const auto bind_slices = [&](const std::string& name, uint64_t n_in, uint64_t n_out,
                               uint32_t count, std::vector<Weight>* out) -> Result<void> {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (t == nullptr) return Error{prefix + "tensor '" + name + "' not found"};
    if (t->n_dims != 3 || t->shape[0] != n_in || t->shape[1] != n_out || t->shape[2] != count) {
      return Error{prefix + "tensor '" + name + "' is not " + std::to_string(count) +
                   " matrices of " + std::to_string(n_in) + " x " + std::to_string(n_out)};
    }
    if (!kernels::can_dequantize(t->type.type)) {
      return Error{prefix + "tensor '" + name + "' has type " + std::string(t->type.name) +
                   ", which quip cannot compute with yet"};
    }
    bound.push_back(t);
    const Weight all{t, n_in, n_out * count};  // every matrix's rows, one after another
    for (uint32_t e = 0; e < count; ++e) out->push_back(m.rows_of(all, e * n_out, n_out));
    return {};
  };
  if (m.arch_->output_bias) {
    if (auto r = bind("output.bias", hp.n_vocab, 1, false, &m.output_bias_); !r) return r.error();
  }
  for (auto [name, out, read] :
       {std::tuple{"rope_freqs.weight", &m.rope_freqs_, true},
        std::tuple{"rope_factors_long.weight", &m.rope_long_, m.arch_->long_rope},
        std::tuple{"rope_factors_short.weight", &m.rope_short_, m.arch_->long_rope}}) {
    if (!read) continue;
    if (auto r = bind(name, hp.n_rot / 2, 1, false, out); !r) return r.error();
  }
  if (hp.n_embd_per_layer != 0) {
    const uint64_t all = uint64_t{hp.n_embd_per_layer} * hp.n_layer;
    for (auto [name, n_in, n_out, out] :
         {std::tuple{"per_layer_token_embd.weight", all, uint64_t{hp.n_vocab}, &m.ple_embd_},
          std::tuple{"per_layer_model_proj.weight", uint64_t{hp.n_embd}, all, &m.ple_model_proj_},
          std::tuple{"per_layer_proj_norm.weight", uint64_t{hp.n_embd_per_layer}, uint64_t{1},
                     &m.ple_proj_norm_}}) {
      if (auto r = bind(name, n_in, n_out, true, out); !r) return r.error();
    }
  }
  m.layers_.resize(hp.n_layer);
  for (uint32_t i = 0; i < hp.n_layer; ++i) {
    Layer& l = m.layers_[i];
    const std::string b = "blk." + std::to_string(i) + ".";
    // gemma4: the dense FFN in every layer, the experts beside it where
    // the layer has a router.
    const bool dense_ffn = hp.n_expert == 0 || i < hp.n_dense_lead || gemma4;
    const bool dense = gemma4
                           ? hp.n_expert == 0 || f.find_tensor(b + "ffn_gate_inp.weight") == nullptr
                           : dense_ffn;
    const bool own_kv = hp.kv_layer_of(i) == i;  // gemma4: no K or V where it shares
    const bool biases = m.arch_->projection_biases && hp.n_expert == 0;
    const bool moe_biases = !dense && m.moe_.biases, sinks = m.arch_->sinks;
    const SharedExpert shared_kind = dense ? SharedExpert::None : m.moe_.shared_expert;
    const bool shared = shared_kind != SharedExpert::None;
    const bool gated_shared = shared_kind == SharedExpert::Gated;
    const bool selection_bias = !dense && m.moe_.from_file;
    const uint64_t n_ff_shexp = hp.n_ff_shexp;
    // Latent attention's projections, in place of Q, K and V.
    const bool latent = hp.latent.has_value();
    const Hparams::Latent mla = hp.latent.value_or(Hparams::Latent{});
    const uint64_t head_dim = hp.head_dim_of(i);
    const uint64_t q_dim = hp.n_head * head_dim, kv_dim = hp.n_head_kv_of(i) * head_dim;
    const bool low_rank_q = latent && mla.q_lora_rank != 0;
    const uint64_t mla_q_dim = uint64_t{hp.n_head} * mla.mla_key;
    const uint64_t attn_out_dim = latent ? uint64_t{hp.n_head} * mla.mla_value : q_dim;
    // A recurrent layer (Gated DeltaNet) in place of attention.
    const bool recurrent = hp.is_recurrent(i), attends = !recurrent;
    const Hparams::DeltaNet dn = hp.delta_net.value_or(Hparams::DeltaNet{});
    // Q, K and V fused or apart, in any family, as llama.cpp's loaders
    // (whose graphs with a query gate read them apart, without biases).
    const bool query_gate = m.arch_->query_gate;
    const bool fused_qkv =
        attends && !query_gate && f.find_tensor(b + "attn_qkv.weight") != nullptr;
    const bool apart = !fused_qkv && !latent && attends;
    const bool qkv_biases = apart && !query_gate;
    const uint64_t q_rows = query_gate ? 2 * q_dim : q_dim;  // with the gate's rows
    const bool fused_up = m.arch_->fused_gate_up;
    const bool pre = m.arch_->pre_norms, post = m.arch_->post_norms;
    const bool parallel = m.arch_->parallel_block;  // one norm for both branches
    // olmo2 norms Q and K over the whole projection, qwen3 per head.
    const bool whole = m.arch_->qk_norm_whole;
    const uint64_t q_norm_width = whole ? q_dim : head_dim;
    const uint64_t k_norm_width = whole ? kv_dim : head_dim;
    const bool norm = m.arch_->qk_norm && attends;
    const uint64_t n_embd = hp.n_embd, n_ff = hp.n_ff_of(i), qkv_dim = q_dim + 2 * kv_dim;
    // gemma4: K (and its norm) only where the layer has its own cache, V
    // optional (the keys' projection stands in).
    const bool k_required = !gemma4 || own_kv, v_required = !gemma4;
    const uint64_t n_v_heads = dn.n_v_heads, value_dim = dn.value_dim();
    const bool ple = gemma4 && hp.n_embd_per_layer != 0;  // per-layer embeddings
    // name, n_in, n_out, whether it is read, whether it is required, where it goes
    for (auto [name, n_in, n_out, read, required, out] :
         {std::tuple{"attn_norm.weight", n_embd, uint64_t{1}, pre, true, &l.attn_norm},
          std::tuple{"attn_q.weight", n_embd, q_rows, apart, true, &l.wq},
          std::tuple{"attn_k.weight", n_embd, kv_dim, apart, k_required, &l.wk},
          std::tuple{"attn_v.weight", n_embd, kv_dim, apart, v_required, &l.wv},
          std::tuple{"attn_q.bias", q_dim, uint64_t{1}, qkv_biases, false, &l.bq},
          std::tuple{"attn_k.bias", kv_dim, uint64_t{1}, qkv_biases, false, &l.bk},
          std::tuple{"attn_v.bias", kv_dim, uint64_t{1}, qkv_biases, false, &l.bv},
          std::tuple{"attn_qkv.weight", n_embd, qkv_dim, fused_qkv, true, &l.wqkv},
          std::tuple{"attn_qkv.bias", qkv_dim, uint64_t{1}, fused_qkv, false, &l.bqkv},
          std::tuple{"attn_q_a.weight", n_embd, uint64_t{mla.q_lora_rank}, low_rank_q, true,
                     &l.wq_a},
          std::tuple{"attn_q_a_norm.weight", uint64_t{mla.q_lora_rank}, uint64_t{1}, low_rank_q,
                     true, &l.q_a_norm},
          std::tuple{"attn_q_b.weight", uint64_t{mla.q_lora_rank}, mla_q_dim, low_rank_q, true,
                     &l.wq_b},
          std::tuple{"attn_q.weight", n_embd, mla_q_dim, latent && !low_rank_q, true, &l.wq},
          std::tuple{"attn_kv_a_mqa.weight", n_embd, uint64_t{mla.kv_lora_rank} + hp.n_rot, latent,
                     true, &l.wkv_a},
          std::tuple{"attn_kv_a_norm.weight", uint64_t{mla.kv_lora_rank}, uint64_t{1}, latent, true,
                     &l.kv_a_norm},
          std::tuple{"attn_output.weight", attn_out_dim, n_embd, attends, true, &l.wo},
          std::tuple{"attn_output.bias", n_embd, uint64_t{1}, attends && (biases || moe_biases),
                     moe_biases, &l.bo},
          std::tuple{"attn_qkv.weight", n_embd, uint64_t{dn.conv_dim()}, recurrent, true,
                     &l.ssm_qkv},
          std::tuple{"attn_gate.weight", n_embd, value_dim, recurrent, true, &l.ssm_z},
          std::tuple{"ssm_conv1d.weight", uint64_t{dn.conv_kernel}, uint64_t{dn.conv_dim()},
                     recurrent, true, &l.ssm_conv},
          std::tuple{"ssm_dt.bias", n_v_heads, uint64_t{1}, recurrent, true, &l.ssm_dt},
          std::tuple{"ssm_a", n_v_heads, uint64_t{1}, recurrent, true, &l.ssm_a},
          std::tuple{"ssm_beta.weight", n_embd, n_v_heads, recurrent, true, &l.ssm_beta},
          std::tuple{"ssm_alpha.weight", n_embd, n_v_heads, recurrent, true, &l.ssm_alpha},
          std::tuple{"ssm_norm.weight", uint64_t{dn.head_dim}, uint64_t{1}, recurrent, true,
                     &l.ssm_norm},
          std::tuple{"ssm_out.weight", value_dim, n_embd, recurrent, true, &l.ssm_out},
          std::tuple{"attn_sinks.weight", uint64_t{hp.n_head}, uint64_t{1}, sinks && attends, true,
                     &l.sinks},
          std::tuple{"attn_q_norm.weight", q_norm_width, uint64_t{1}, norm, true, &l.q_norm},
          std::tuple{"attn_k_norm.weight", k_norm_width, uint64_t{1}, norm, k_required, &l.k_norm},
          std::tuple{m.arch_->ffn_norm, n_embd, uint64_t{1}, pre && !parallel, true, &l.ffn_norm},
          std::tuple{"post_attention_norm.weight", n_embd, uint64_t{1}, post, true,
                     &l.post_attn_norm},
          std::tuple{"post_ffw_norm.weight", n_embd, uint64_t{1}, post, true, &l.post_ffn_norm},
          std::tuple{"ffn_gate.weight", n_embd, n_ff, dense_ffn && !fused_up, true, &l.w_gate},
          std::tuple{"ffn_up.weight", n_embd, fused_up ? 2 * n_ff : n_ff, dense_ffn, true, &l.w_up},
          std::tuple{"ffn_down.weight", n_ff, n_embd, dense_ffn, true, &l.w_down},
          std::tuple{"ffn_gate_inp.weight", n_embd, uint64_t{hp.n_expert}, !dense, true, &l.router},
          std::tuple{"ffn_gate_inp.bias", uint64_t{hp.n_expert}, uint64_t{1}, moe_biases, true,
                     &l.router_bias},
          std::tuple{"ffn_gate_exps.bias", uint64_t{hp.n_ff_exp}, uint64_t{hp.n_expert}, moe_biases,
                     true, &l.gate_exps_bias},
          std::tuple{"ffn_up_exps.bias", uint64_t{hp.n_ff_exp}, uint64_t{hp.n_expert}, moe_biases,
                     true, &l.up_exps_bias},
          std::tuple{"ffn_down_exps.bias", n_embd, uint64_t{hp.n_expert}, moe_biases, true,
                     &l.down_exps_bias},
          std::tuple{"ffn_gate_shexp.weight", n_embd, n_ff_shexp, shared, true, &l.gate_shexp},
          std::tuple{"ffn_up_shexp.weight", n_embd, n_ff_shexp, shared, true, &l.up_shexp},
          std::tuple{"ffn_down_shexp.weight", n_ff_shexp, n_embd, shared, true, &l.down_shexp},
          std::tuple{"ffn_gate_inp_shexp.weight", n_embd, uint64_t{1}, gated_shared, true,
                     &l.shexp_gate},
          std::tuple{"exp_probs_b.bias", uint64_t{hp.n_expert}, uint64_t{1}, selection_bias, false,
                     &l.exp_probs_b},
          std::tuple{"ffn_gate.bias", n_ff, uint64_t{1}, biases, false, &l.b_gate},
          std::tuple{"ffn_up.bias", n_ff, uint64_t{1}, biases, false, &l.b_up},
          std::tuple{"ffn_down.bias", n_embd, uint64_t{1}, biases, false, &l.b_down},
          std::tuple{"layer_output_scale.weight", uint64_t{1}, uint64_t{1}, gemma4, false,
                     &l.out_scale},
          std::tuple{"ffn_gate_inp.scale", n_embd, uint64_t{1}, gemma4 && !dense, true,
                     &l.router_scale},
          std::tuple{"ffn_down_exps.scale", uint64_t{hp.n_expert}, uint64_t{1}, gemma4 && !dense,
                     false, &l.down_exps_scale},
          std::tuple{"post_ffw_norm_1.weight", n_embd, uint64_t{1}, gemma4 && !dense, true,
                     &l.post_ffn_norm_1},
          std::tuple{"pre_ffw_norm_2.weight", n_embd, uint64_t{1}, gemma4 && !dense, true,
                     &l.pre_ffn_norm_2},
          std::tuple{"post_ffw_norm_2.weight", n_embd, uint64_t{1}, gemma4 && !dense, true,
                     &l.post_ffn_norm_2},
          std::tuple{"inp_gate.weight", n_embd, uint64_t{hp.n_embd_per_layer}, ple, true,
                     &l.ple_gate},
          std::tuple{"proj.weight", uint64_t{hp.n_embd_per_layer}, n_embd, ple, true, &l.ple_proj},
          std::tuple{"post_norm.weight", n_embd, uint64_t{1}, ple, true, &l.ple_norm}}) {
      if (!read) continue;
      if (auto r = bind(b + name, n_in, n_out, required, out); !r) return r.error();
    }
    if (!dense) {
      const uint64_t n_ff_exp = hp.n_ff_exp;
      // The gate and up of each expert as one matrix (its gate's rows, then
      // its up's), where the family's loader reads that: split in place.
      const bool fused_experts = (m.moe_.reads_fused_gate_up || gemma4) &&
                                 f.find_tensor(b + "ffn_gate_up_exps.weight") != nullptr;
      if (fused_experts) {
        std::vector<Weight> both;
        if (auto r = bind_slices(b + "ffn_gate_up_exps.weight", n_embd, 2 * n_ff_exp, hp.n_expert,
                                 &both);
            !r) {
          return r.error();
        }
        for (const Weight& w : both) {
          l.gate_exps.push_back(m.rows_of(w, 0, n_ff_exp));
          l.up_exps.push_back(m.rows_of(w, n_ff_exp, n_ff_exp));
        }
      }
      for (auto [name, n_in, n_out, read, out] :
           {std::tuple{"ffn_gate_exps.weight", n_embd, n_ff_exp, !fused_experts, &l.gate_exps},
            std::tuple{"ffn_up_exps.weight", n_embd, n_ff_exp, !fused_experts, &l.up_exps},
            std::tuple{"ffn_down_exps.weight", n_ff_exp, n_embd, true, &l.down_exps}}) {
        if (!read) continue;
        if (auto r = bind_slices(b + name, n_in, n_out, hp.n_expert, out); !r) return r.error();
      }
    }
    if (latent) {
      const uint64_t rank = mla.kv_lora_rank, unrotated = mla.mla_key - hp.n_rot;
      for (auto [name, n_in, n_out, out] :
           {std::tuple{"attn_k_b.weight", unrotated, rank, &l.wk_b},
            std::tuple{"attn_v_b.weight", rank, uint64_t{mla.mla_value}, &l.wv_b}}) {
        if (auto r = bind_slices(b + name, n_in, n_out, hp.n_head, out); !r) return r.error();
      }
    }
  }
  // A tensor quip does not read (a bias, a factor, a block it does not
  // run) would change llama.cpp's result, which refuses such a file too;
  // only the NextN blocks' are never read, as llama.cpp skips them.
  if (bound.size() != f.tensors().size()) {
    std::sort(bound.begin(), bound.end());
    for (const gguf::TensorInfo& t : f.tensors()) {
      if (!std::binary_search(bound.begin(), bound.end(), &t) && !in_nextn_block(t.name, hp)) {
        return Error{prefix + "tensor '" + printable(t.name) + "' is not one that quip's " +
                     std::string(*arch) + " reads: not supported"};
      }
    }
  }
  return m;
}

Weight Model::rows_of(const Weight& w, uint64_t first, uint64_t count) {
  const uint64_t row_bytes = w.tensor->n_bytes / w.n_out;
  auto slice = std::make_unique<gguf::TensorInfo>(*w.tensor);
  slice->n_dims = 2;
  slice->shape = {w.n_in, count, 1, 1};
  slice->n_elements = w.n_in * count;
  slice->n_bytes = row_bytes * count;
  slice->offset = w.tensor->offset + first * row_bytes;
  slice->data = w.tensor->data.subspan(first * row_bytes, count * row_bytes);
  const Weight rows{slice.get(), w.n_in, count};
  slices_.push_back(std::move(slice));
  return rows;
}

std::vector<float> vector_of(const Weight& w) {
  std::vector<float> out;
  if (w) {
    // Rows of whole blocks, one after another: one row of n_in * n_out.
    out.resize(w.n_in * w.n_out);
    kernels::dequantize_row(w.tensor->type.type, w.tensor->data.data(), out.data(), out.size());
  }
  return out;
}

LayerVectors::LayerVectors(const Layer& l)
    : attn_norm(vector_of(l.attn_norm)),
      bq(vector_of(l.bq)),
      bk(vector_of(l.bk)),
      bv(vector_of(l.bv)),
      q_norm(vector_of(l.q_norm)),
      k_norm(vector_of(l.k_norm)),
      bo(vector_of(l.bo)),
      ffn_norm(vector_of(l.ffn_norm)),
      b_gate(vector_of(l.b_gate)),
      b_up(vector_of(l.b_up)),
      b_down(vector_of(l.b_down)),
      post_attn_norm(vector_of(l.post_attn_norm)),
      post_ffn_norm(vector_of(l.post_ffn_norm)),
      sinks(vector_of(l.sinks)),
      router_bias(vector_of(l.router_bias)),
      exp_probs_b(vector_of(l.exp_probs_b)),
      q_a_norm(vector_of(l.q_a_norm)),
      kv_a_norm(vector_of(l.kv_a_norm)),

      ssm_dt(vector_of(l.ssm_dt)),
      ssm_a(vector_of(l.ssm_a)),
      ssm_norm(vector_of(l.ssm_norm)),
      router_scale(vector_of(l.router_scale)),
      down_exps_scale(vector_of(l.down_exps_scale)),
      post_ffn_norm_1(vector_of(l.post_ffn_norm_1)),
      pre_ffn_norm_2(vector_of(l.pre_ffn_norm_2)),
      post_ffn_norm_2(vector_of(l.post_ffn_norm_2)),
      ple_norm(vector_of(l.ple_norm)),
      out_scale(vector_of(l.out_scale)),
      gate_exps_bias(vector_of(l.gate_exps_bias)),
      up_exps_bias(vector_of(l.up_exps_bias)),
      down_exps_bias(vector_of(l.down_exps_bias)) {
  if (l.ssm_conv) {
    // The file's taps channel by channel, here tap by tap.
    const std::vector<float> by_channel = vector_of(l.ssm_conv);
    const size_t taps = l.ssm_conv.n_in, channels = l.ssm_conv.n_out;
    ssm_conv.resize(taps * channels);
    for (size_t c = 0; c < channels; ++c) {
      for (size_t i = 0; i < taps; ++i) ssm_conv[i * channels + c] = by_channel[c * taps + i];
    }
  }
  if (l.bqkv) {
    // Rows Q, then K, then V, as the fused weight's: adding the pieces is
    // adding the whole.
    const std::vector<float> all = vector_of(l.bqkv);
    const size_t kv = l.wqkv.n_out - l.wo.n_in;  // K's and V's rows together
    const auto q_end = all.begin() + static_cast<long>(l.wo.n_in);
    bq.assign(all.begin(), q_end);
    bk.assign(q_end, q_end + static_cast<long>(kv / 2));
    bv.assign(q_end + static_cast<long>(kv / 2), all.end());
  }
}

bool Model::uses_long_factors(size_t n_ctx) const {
  return !rope_freqs_ && long_rope() && (n_ctx != 0 ? n_ctx : hp_.n_ctx_train) > hp_.n_ctx_orig;
}

const Weight& Model::rope_factors(size_t n_ctx) const {
  if (rope_freqs_) return rope_freqs_;
  return uses_long_factors(n_ctx) ? rope_long_ : rope_short_;
}

std::string_view Model::kv_variant(size_t n_ctx) const {
  return uses_long_factors(n_ctx) ? "rope_factors_long" : "";
}

Model::MatrixWork Model::matrix_work_per_token() const {
  MatrixWork work;
  const auto add = [&](const Weight& w, uint64_t& products) {
    if (!w || w.n_out <= 1) return;
    products += w.n_in * w.n_out;
    if (w.tensor->type.block_size >= 32) work.quantized_products += w.n_in * w.n_out;
  };
  add(output_, work.output_products);
  add(ple_model_proj_, work.layer_products);
  for (const Layer& l : layers_) {
    for (const Weight* w : l.matrices()) add(*w, work.layer_products);
    for (const auto* heads : {&l.wk_b, &l.wv_b}) {
      for (const Weight& w : *heads) add(w, work.layer_products);
    }
    // Each token's chosen experts (all of one size).
    for (uint32_t k = 0; k < hp_.n_expert_used && !l.gate_exps.empty(); ++k) {
      for (const Weight* w : {&l.gate_exps[0], &l.up_exps[0], &l.down_exps[0]}) {
        add(*w, work.layer_products);
      }
    }
  }
  return work;
}

uint64_t Model::weight_bytes_per_token() const {
  const auto bytes = [](const Weight& w) { return w ? w.tensor->n_bytes : 0; };
  uint64_t total = bytes(output_norm_) + bytes(output_) + bytes(rope_freqs_);
  if (output_.tensor != token_embd_.tensor && token_embd_.n_out > 0) {
    total += bytes(token_embd_) / token_embd_.n_out;
  }
  // gemma4's per-layer embeddings: the projection, and one row of the table.
  total += bytes(ple_model_proj_) + bytes(ple_proj_norm_);
  if (ple_embd_) total += bytes(ple_embd_) / ple_embd_.n_out;
  for (const Layer& l : layers_) {
    for (const Weight* w : l.matrices()) total += bytes(*w);
    for (const Weight* w : l.vectors()) total += bytes(*w);
    for (const auto* heads : {&l.wk_b, &l.wv_b}) {
      for (const Weight& w : *heads) total += bytes(w);
    }
    // Only the chosen experts' rows are read (all experts of one size).
    for (uint32_t k = 0; k < hp_.n_expert_used && !l.gate_exps.empty(); ++k) {
      total += bytes(l.gate_exps[0]) + bytes(l.up_exps[0]) + bytes(l.down_exps[0]);
    }
  }
  return total;
}

}  // namespace quip::engine
