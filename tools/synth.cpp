// quip-synth: writes GGUF models with random weights and the shapes of real
// ones, so speed and memory can be measured at realistic scale without
// downloads (not a user command).
//
//   quip-synth SHAPE OUT.gguf [--type TYPE | --mix FTYPE] [--seed N]
//              [--rope-scaling linear:FACTOR | yarn:FACTOR[:ORIGINAL_CONTEXT] |
//                              longrope:ORIGINAL_CONTEXT]
//
// SHAPE: tiny (a 2-layer llama, n_embd 64, F32 by default), tiny-qwen2 and
// tiny-qwen3 (the same sizes with Q/K/V biases or Q/K norms), tiny-phi3
// (fused Q/K/V and gate/up, rotation over 12 of 16 dimensions), tiny-glm4
// (fused gate/up, norms after each branch too, rotation over 8 of 16),
// tiny-mistral3 (llama's layers, with mistral3's keys), tiny-qwen3vl
// (qwen3's layers, with multimodal rotation sections), tiny-exaone4 and
// tiny-exaone4-64 (norms after the branches only, Q/K norms; 2 and 64
// layers, the latter with exaone4's sliding windows), tiny-cohere2
// (LayerNorms, one norm for parallel attention and FFN, tied output, 4
// layers), tiny-qwen3moe, tiny-qwen2moe (with a shared expert), tiny-mixtral
// (llama with experts), tiny-gpt-oss (8 experts, 2 per token; gpt-oss
// with its biases, sinks, sliding window and YaRN) and tiny-deepseek2
// (latent attention, shared experts, a leading dense layer; --lite for
// DeepSeek-V2-Lite's form, --fuse-gate-up for one ffn_gate_up_exps),
// tiny-qwen35 and tiny-qwen35moe (Qwen3.5's hybrid: 4 layers, the first
// three gated delta-net layers, the fourth gated attention with Q/K norms
// and interleaved multimodal rotation over 16 of 64 dimensions; a dense
// FFN, or 8 experts, 2 per token, beside a gated shared expert;
// --state-size N for the delta-net heads' width, 64 by default),
// qwen2.5-0.5b, llama-3.2-1b, qwen2.5-7b, llama-3.1-8b, qwen3-8b, qwen2.5-14b,
// qwen3-30b-a3b, gpt-oss-20b, deepseek-v2-lite, qwen3.5-0.8b and qwen3.5-9b (their published
// hyper-parameters, the 9B's as transformers' Qwen3_5TextConfig defaults;
// llama-3.1-8b without its rope_freqs factors, which change no speed). Weights are uniform with the
// standard deviation of a 0.02 normal, quantized with quip's reference quantizers (the same bytes
// as llama.cpp's for the same floats); norms are ones and biases small, both
// F32. qwen35's delta-net vectors are F32 and drawn as PyTorch initializes
// them: the convolution uniform on (-0.5, 0.5) (1/sqrt of its 4 taps), the
// time-step bias on (0, 2) (around Qwen3-Next's ones), and ssm_a, which
// files hold as -exp(A_log), -exp of uniform on (-1, 1).
//
// --type TYPE, one of the types quip multiplies (f32 f16 bf16 q8_0 q4_0
// q4_1 q5_0 q5_1 iq4_nl mxfp4 q2_k q3_k q4_k q5_k q6_k iq4_xs), gives every matrix
// that type, as llama-quantize --pure does, or llama.cpp's fallback where
// its blocks do not fit a row (gguf/quant_mix.h: Q4_K becomes Q5_0 on
// tiny's rows of 64, for instance); routers stay F32. --mix FTYPE (q4_k_m
// q5_k_m q6_k iq4_xs mxfp4_moe) gives each matrix the type llama-quantize
// gives it for that file type, without --pure (mxfp4_moe: the experts
// MXFP4, the rest Q8_0): Q4_K_M is Q4_K with Q6_K for the output and for
// attn_v and ffn_down in some layers, for instance, with the same fallbacks
// (most of Qwen2.5-0.5B, all of tiny); a qwen35 delta net's attn_qkv takes
// attn_v's type, as llama-quantize counts it with them. --type q4_k_m and
// q5_k_m, which are no single type, are --mix. The vocabulary is byte-level BPE with no
// merges: 256 byte tokens, then control tokens up to the real vocabulary
// size. --fused-qkv writes one attn_qkv per layer instead of attn_q, attn_k
// and attn_v; --biases writes every bias the family's llama.cpp loader
// reads (Q/K/V in all, attention output and FFN in llama, output in
// qwen2; qwen35's shapes take neither, nor --nextn). --nextn N adds N
// NextN (multi-token prediction) blocks, which glm4 counts in block_count
// but never runs. --yarn-log-mul, --yarn-beta
// and --attn-temperature write mistral3's YaRN and attention temperature
// keys, --sliding-window the attention.sliding_window key, --state-size
// (qwen35's shapes) the delta-net heads' width. --rope-scaling writes the rope.scaling
// keys of a long-context file; longrope (phi3) writes what Phi-3's converter writes: the original
// context, the attention factor sqrt(1 + ln(s) / ln(original)) for s = context / original, and
// random long and short factor tensors, without a rope.scaling.type.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gguf/keys.h"
#include "gguf/quant_mix.h"
#include "gguf/types.h"
#include "gguf/writer.h"
#include "kernels/quantize.h"
#include "tokenizer/unicode.h"

namespace {

using quip::gguf::GgmlType;
using quip::gguf::GgufWriter;
using quip::gguf::make_array;

struct Shape {
  std::string_view name;
  std::string_view arch;
  uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
  float rope_base, rms_eps;
  bool tied;
  GgmlType default_type;
  bool qk_norm = false;   // qwen3: RMS norms of each head's queries and keys
  uint32_t n_rot = 0;     // rotated dimensions per head; 0: all
  uint32_t head_dim = 0;  // 0: n_embd / n_head
  // Mixtures of experts: experts per layer, those a token uses, and each
  // one's FFN width (n_ff is then unused).
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // deepseek2's latent attention: the queries' low rank, the latent's
  // rank, each head's unrotated width and its value width; its shared
  // experts (as wide as a routed one) and leading dense layers (n_ff wide).
  uint32_t q_lora_rank = 0, kv_lora_rank = 0, mla_nope = 0, mla_value = 0;
  uint32_t n_shared = 0, n_dense_lead = 0;
  // qwen35's gated delta-net layers (Qwen3-Next, Qwen3.5): each head's key
  // and value width (ssm.state_size; --state-size overrides), value heads
  // (ssm.time_step_rank), key heads (ssm.group_count), the convolution's
  // taps; every full_attention_interval-th layer is attention instead.
  uint32_t ssm_state = 0, ssm_v_heads = 0, ssm_k_heads = 0, ssm_conv = 0;
  uint32_t full_attention_interval = 0;
};

constexpr Shape kShapes[] = {
    {"tiny", "llama", 64, 2, 4, 2, 128, 512, 2048, 10000.0f, 1e-5f, false, GgmlType::F32},
    {"tiny-qwen2", "qwen2", 64, 2, 4, 2, 128, 512, 2048, 1e6f, 1e-6f, false, GgmlType::F32},
    {"tiny-qwen3", "qwen3", 64, 2, 4, 2, 128, 512, 2048, 1e6f, 1e-6f, false, GgmlType::F32, true},
    {"tiny-phi3", "phi3", 64, 2, 4, 2, 128, 512, 8192, 10000.0f, 1e-5f, false, GgmlType::F32, false,
     12},
    {"tiny-glm4", "glm4", 64, 2, 4, 2, 128, 512, 8192, 10000.0f, 1e-5f, false, GgmlType::F32, false,
     8},
    {"tiny-mistral3", "mistral3", 64, 2, 4, 2, 128, 512, 8192, 1e6f, 1e-5f, false, GgmlType::F32},
    {"tiny-qwen3vl", "qwen3vl", 64, 2, 4, 2, 128, 512, 8192, 5e6f, 1e-6f, false, GgmlType::F32,
     true},
    {"tiny-exaone4", "exaone4", 64, 2, 4, 2, 128, 512, 8192, 1e6f, 1e-5f, false, GgmlType::F32,
     true},
    {"tiny-cohere2", "cohere2", 64, 4, 4, 2, 128, 512, 8192, 10000.0f, 1e-5f, true, GgmlType::F32},
    // exaone4 has sliding windows only with 64 blocks (its 32B).
    {"tiny-exaone4-64", "exaone4", 64, 64, 4, 2, 128, 512, 8192, 1e6f, 1e-5f, false, GgmlType::F32,
     true},
    {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f, true,
     GgmlType::Q8_0},
    {"llama-3.2-1b", "llama", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f, true,
     GgmlType::Q8_0},
    {"qwen2.5-7b", "qwen2", 3584, 28, 28, 4, 18944, 152064, 32768, 1e6f, 1e-6f, false,
     GgmlType::Q4_0},
    {"llama-3.1-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 131072, 500000.0f, 1e-5f, false,
     GgmlType::Q4_0},
    {"qwen3-8b", "qwen3", 4096, 36, 32, 8, 12288, 151936, 40960, 1e6f, 1e-6f, false, GgmlType::Q4_0,
     true},
    {"qwen2.5-14b", "qwen2", 5120, 48, 40, 8, 13824, 152064, 32768, 1e6f, 1e-5f, false,
     GgmlType::Q4_0},
    // Mixtures of experts: tiny ones (8 experts, 2 per token), and
    // Qwen3-30B-A3B and gpt-oss-20b (gpt-oss's sliding window of 128 on
    // every other layer and its YaRN, factor 32 over 4096 positions).
    {"tiny-qwen3moe", "qwen3moe", 64, 2, 4, 2, 0, 512, 8192, 1e6f, 1e-6f, false, GgmlType::F32,
     true, 0, 32, 8, 2, 64},
    {"tiny-gpt-oss", "gpt-oss", 64, 4, 4, 2, 0, 512, 8192, 150000.0f, 1e-5f, false, GgmlType::F32,
     false, 0, 32, 8, 2, 64},
    // qwen2moe: a shared expert (96 wide) beside the chosen ones; llama with
    // experts (Mixtral), each feed_forward_length wide.
    {"tiny-qwen2moe", "qwen2moe", 64, 2, 4, 2, 96, 512, 8192, 1e6f, 1e-6f, false, GgmlType::F32,
     false, 0, 0, 8, 2, 64},
    {"tiny-mixtral", "llama", 64, 2, 4, 2, 0, 512, 8192, 1e6f, 1e-5f, false, GgmlType::F32, false,
     0, 0, 8, 2, 64},
    {"qwen3-30b-a3b", "qwen3moe", 2048, 48, 32, 4, 0, 151936, 40960, 1e6f, 1e-6f, false,
     GgmlType::Q4_0, true, 0, 128, 128, 8, 768},
    {"gpt-oss-20b", "gpt-oss", 2880, 24, 64, 8, 0, 201088, 131072, 150000.0f, 1e-5f, false,
     GgmlType::Q8_0, false, 0, 64, 32, 4, 2880},
    // deepseek2 (GLM-4.7-Flash's and DeepSeek-V2's latent attention): 8
    // heads, queries through rank 32, a latent of 48 plus 16 rotated
    // values; 2 shared experts; layer 0 dense. --lite: DeepSeek-V2-Lite's
    // form (one attn_q, softmax routing, no selection bias or scale).
    // clang-format off
    {"tiny-deepseek2", "deepseek2", 64, 3, 8, 1, 96, 512, 8192, 10000.0f, 1e-6f, false,
     GgmlType::F32, false, 16, 0, 8, 2, 32, 32, 48, 16, 24, 2, 1},
    // DeepSeek-V2-Lite (15.7B, 2.4B active; its published hyper-parameters
    // without its YaRN, which changes no speed), in the lite form.
    {"deepseek-v2-lite", "deepseek2", 2048, 27, 16, 1, 10944, 102400, 163840, 10000.0f, 1e-6f,
     false, GgmlType::Q4_0, false, 64, 0, 64, 6, 1408, 0, 512, 128, 128, 2, 1},
    // Qwen3.5 (qwen35, qwen35moe): layers 0-2 gated delta nets (4 value
    // heads over 2 key heads, state 64), layer 3 attention whose attn_q
    // also gives a sigmoid gate per head; 4 heads of 64 over 2 KV heads,
    // rotation over 16 dimensions. Untied, as Qwen3.5-9B (its smaller ones
    // tie the output, which makes a tiny random model repeat its last
    // token); the MoE one with 8 experts of 64, 2 per token, and a shared
    // expert 96 wide (n_ff).
    {"tiny-qwen35", "qwen35", 64, 4, 4, 2, 128, 512, 8192, 1e7f, 1e-6f, false,
     GgmlType::F32, true, 16, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 4, 2, 4, 4},
    {"tiny-qwen35moe", "qwen35moe", 64, 4, 4, 2, 96, 512, 8192, 1e7f, 1e-6f, false,
     GgmlType::F32, true, 16, 64, 8, 2, 64, 0, 0, 0, 0, 0, 0, 64, 4, 2, 4, 4},
    // Qwen3.5-9B (transformers' Qwen3_5TextConfig defaults): 32 layers, every
    // 4th attention (16 heads of 256 over 4 KV heads, rotation over 64 of
    // 256, sections [11, 11, 10, 0]), the others delta nets of 32 value heads
    // over 16 key heads, state 128, 4 taps; untied. Qwen3.5-0.8B (as
    // published): 24 layers, 8 heads of 256 over 2 KV heads, delta nets of
    // 16 value heads over 16 key heads; tied output; the 9B's rotation,
    // rope base, norm epsilon and context.
    {"qwen3.5-0.8b", "qwen35", 1024, 24, 8, 2, 3584, 248320, 262144, 1e7f, 1e-6f, true,
     GgmlType::Q8_0, true, 64, 256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 16, 16, 4, 4},
    {"qwen3.5-9b", "qwen35", 4096, 32, 16, 4, 12288, 248320, 262144, 1e7f, 1e-6f, false,
     GgmlType::Q4_0, true, 64, 256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 32, 16, 4, 4},
    // gemma4 (Gemma 4, its per-layer shapes in kGemma4Layers): 4 heads of
    // 32 in the full-attention layers over 1 KV head. tiny-gemma4 as E2B and
    // E4B: 6 layers, the last 2 reading earlier ones' keys and values, a
    // twice as wide FFN there, per-layer embeddings; tiny-gemma4moe as the
    // 26B-A4B: 4 layers, 8 experts of 32 (2 per token) beside a dense FFN of
    // 64, the full-attention layer's values its keys' projection.
    {"tiny-gemma4", "gemma4", 64, 6, 4, 1, 128, 512, 8192, 1e6f, 1e-6f, false,
     GgmlType::F32, true, 0, 32},
    {"tiny-gemma4moe", "gemma4", 64, 4, 4, 1, 64, 512, 8192, 1e6f, 1e-6f, false,
     GgmlType::F32, true, 0, 32, 8, 2, 32},
    // clang-format on
};

// What gemma4's shapes set per layer: `pattern`, a letter per layer, s
// sliding and f full attention; the sliding layers' head size and KV heads;
// the layers at the end that read earlier ones' keys and values; the
// per-layer embeddings' width (0: none); the sliding window; whether the
// full-attention layers lack attn_v (Gemma 4's attention_k_eq_v) and
// whether the sharing layers' FFN is twice as wide (use_double_wide_mlp).
struct Gemma4Layers {
  std::string_view shape, pattern;
  uint32_t swa_head_dim, swa_head_kv, n_shared_kv, n_embd_per_layer, window;
  bool full_without_v, double_wide;
};

constexpr Gemma4Layers kGemma4Layers[] = {
    {"tiny-gemma4", "sssfsf", 16, 2, 2, 16, 8, false, true},
    {"tiny-gemma4moe", "sssf", 16, 2, 0, 0, 8, true, false},
};

const Gemma4Layers* gemma4_layers(std::string_view shape) {
  for (const Gemma4Layers& g : kGemma4Layers) {
    if (g.shape == shape) return &g;
  }
  return nullptr;
}

// What --type or --mix asked for: one type for every matrix, or the mix of
// one of llama.cpp's file types.
struct WeightTypes {
  GgmlType uniform;  // without a mix
  std::optional<quip::gguf::FileMix> mix;
};

// llama.cpp's general.file_type (llama_ftype) for an all-one-type file;
// the K-quants as their _S variants, which is what --pure writes.
uint32_t file_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 11;
    case GgmlType::Q4_K: return 14;
    case GgmlType::Q5_K: return 16;
    case GgmlType::Q6_K: return 18;
    case GgmlType::IQ4_NL: return 25;
    case GgmlType::IQ4_XS: return 30;
    case GgmlType::BF16: return 32;
    case GgmlType::MXFP4: return 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE, its only MXFP4 type
    default: return 0;
  }
}

// splitmix64: fast, and the same file for the same seed everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // The generator `n` draws later: splitmix64's state only counts.
  Rng skipped(uint64_t n) const { return Rng{s + n * 0x9E3779B97F4A7C15ULL}; }
  // Uniform on [0, 1).
  float unit() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Uniform on (-a, a) with a = sqrt(3) * 0.02: the spread of a 0.02 normal.
  float weight() {
    constexpr float a = 0.034641f;
    return (static_cast<float>(next() >> 40) * 0x1.0p-24f * 2.0f - 1.0f) * a;
  }
};

// Draws n_out rows of n_in weights from `start`, in order, and hands each to
// `use(row_index, values)`. The rows are split over the machine's threads;
// each thread starts its generator where the sequence reaches its first row,
// so the file is the same on any number of threads.
template <typename Use>
void fill_rows(const Rng& start, uint64_t n_in, uint64_t n_out, const Use& use) {
  const uint64_t threads = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1,
                                                std::max<uint64_t>(n_out / 64, 1));
  const auto work = [&](uint64_t first, uint64_t end) {
    Rng rng = start.skipped(first * n_in);
    std::vector<float> row(n_in);
    for (uint64_t r = first; r < end; ++r) {
      for (float& v : row) v = rng.weight();
      use(r, row.data());
    }
  };
  std::vector<std::thread> pool;
  for (uint64_t t = 1; t < threads; ++t) {
    pool.emplace_back(work, n_out * t / threads, n_out * (t + 1) / threads);
  }
  work(0, n_out / threads);
  for (std::thread& t : pool) t.join();
}

void add_vocabulary(GgufWriter& w, const Shape& s) {
  namespace k = quip::gguf::keys;
  const quip::tokenizer::ByteMap& bytes = quip::tokenizer::ByteMap::get();
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(bytes.encode(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  std::vector<std::string_view> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  // llama.cpp sets Phi-3's special tokens' whitespace handling by name, and
  // refuses a phi3 file without these.
  if (s.arch == "phi3") specials.insert(specials.end(), {"<unk>", "<s>", "</s>"});
  for (std::string_view special : specials) {
    tokens.emplace_back(special);
    types.push_back(3);
  }
  while (tokens.size() < s.n_vocab) {
    tokens.push_back("<|reserved_" + std::to_string(tokens.size()) + "|>");
    types.push_back(3);
  }
  w.set(std::string(k::kTokenizerModel), std::string("gpt2"));
  w.set(std::string(k::kTokenizerPre), std::string(s.arch.starts_with("qwen") ? "qwen2"
                                                   : s.arch == "gpt-oss"      ? "gpt-4o"
                                                                              : "llama-bpe"));
  w.set(std::string(k::kTokens), make_array(tokens));
  w.set("tokenizer.ggml.token_type", make_array(types));
  w.set("tokenizer.ggml.merges", make_array(std::vector<std::string>{}));
  w.set(std::string(k::kBosTokenId), uint32_t{256});
  w.set(std::string(k::kEosTokenId), uint32_t{258});
}

// --rope-scaling KIND:FACTOR[:ORIGINAL_CONTEXT] (kind linear or yarn) or
// longrope:ORIGINAL_CONTEXT: the rope.scaling keys of a long-context file.
struct RopeScaling {
  std::string kind;
  float factor = 0;               // 0 for longrope
  uint32_t original_context = 0;  // 0: no key
};

std::optional<RopeScaling> rope_scaling_from(std::string_view text) {
  RopeScaling r;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  r.kind = std::string(text.substr(0, colon));
  const std::string rest(text.substr(colon + 1));
  char* end = nullptr;
  if (r.kind == "longrope") {
    r.original_context = static_cast<uint32_t>(std::strtoul(rest.c_str(), &end, 10));
    if (end == rest.c_str() || *end != '\0' || r.original_context == 0) return std::nullopt;
    return r;
  }
  r.factor = std::strtof(rest.c_str(), &end);
  if (end == rest.c_str() || !(r.factor > 0)) return std::nullopt;
  if (*end == ':') {
    const char* digits = end + 1;
    r.original_context = static_cast<uint32_t>(std::strtoul(digits, &end, 10));
    if (end == digits) return std::nullopt;
  }
  if (*end != '\0' || (r.kind != "linear" && r.kind != "yarn")) return std::nullopt;
  return r;
}

// What the flags ask for besides the shape.
struct Options {
  WeightTypes weights;
  uint64_t seed = 42;
  std::optional<RopeScaling> rope_scaling;
  bool fused_qkv = false;     // one attn_qkv per layer instead of attn_q/k/v
  bool biases = false;        // every bias the family's llama.cpp loader reads
  bool lite = false;          // deepseek2: DeepSeek-V2-Lite's form
  bool fuse_gate_up = false;  // deepseek2: ffn_gate_up_exps for the experts' gate and up
  uint32_t nextn = 0;         // NextN blocks after the layers (glm4)
  // mistral3's keys: YaRN's log multiplier and beta values, the attention
  // temperature; written where set.
  std::optional<float> yarn_log_mul, yarn_beta_fast, yarn_beta_slow, attn_temperature;
  std::optional<uint32_t> sliding_window;  // attention.sliding_window
  std::optional<uint32_t> state_size;      // qwen35: ssm.state_size in place of the shape's
};

int write_model(const Shape& s, const Options& options, const std::string& path) {
  const WeightTypes& weights = options.weights;
  namespace k = quip::gguf::keys;
  const std::string arch(s.arch);
  GgufWriter w;
  w.set(std::string(k::kArchitecture), arch);
  w.set(std::string(k::kName), "quip-synth " + std::string(s.name) + " (random weights)");
  w.set(std::string(k::kFileType),
        weights.mix ? static_cast<uint32_t>(*weights.mix) : file_type(weights.uniform));
  w.set(k::arch_key(arch, k::kContextLength), s.n_ctx);
  w.set(k::arch_key(arch, k::kEmbeddingLength), s.n_embd);
  w.set(k::arch_key(arch, k::kBlockCount), s.n_layer + options.nextn);
  if (options.nextn != 0) w.set(k::arch_key(arch, "nextn_predict_layers"), options.nextn);
  // With experts, n_ff is a shared expert's width (qwen2moe), and
  // feed_forward_length each expert's where the family reads no other key
  // (llama).
  const bool deepseek = s.arch == "deepseek2";
  const bool qwen35 = s.arch == "qwen35" || s.arch == "qwen35moe";
  const bool shared_expert = s.arch == "qwen2moe" || s.arch == "qwen35moe";  // n_ff wide
  const Gemma4Layers* gemma4 = gemma4_layers(s.name);
  // gemma4: the dense FFN's width per layer, twice as wide where the layer
  // reads another's keys and values (use_double_wide_mlp).
  const auto gemma4_ff = [&](uint32_t l) {
    return gemma4->double_wide && l >= s.n_layer - gemma4->n_shared_kv ? 2 * s.n_ff : s.n_ff;
  };
  if (gemma4 != nullptr) {
    std::vector<uint32_t> n_ff(s.n_layer), n_head_kv(s.n_layer);
    std::vector<bool> sliding(s.n_layer);
    for (uint32_t l = 0; l < s.n_layer; ++l) {
      sliding[l] = gemma4->pattern[l] == 's';
      n_ff[l] = gemma4_ff(l);
      n_head_kv[l] = sliding[l] ? gemma4->swa_head_kv : s.n_head_kv;
    }
    w.set(k::arch_key(arch, k::kFeedForwardLength), make_array(n_ff));
    w.set(k::arch_key(arch, k::kHeadCountKv), make_array(n_head_kv));
    w.set(k::arch_key(arch, "attention.sliding_window_pattern"), make_array(sliding));
    w.set(k::arch_key(arch, "attention.sliding_window"), gemma4->window);
    w.set(k::arch_key(arch, "attention.key_length_swa"), gemma4->swa_head_dim);
    w.set(k::arch_key(arch, "attention.value_length_swa"), gemma4->swa_head_dim);
    w.set(k::arch_key(arch, "rope.dimension_count"), s.head_dim);
    w.set(k::arch_key(arch, "rope.dimension_count_swa"), gemma4->swa_head_dim);
    w.set(k::arch_key(arch, "rope.freq_base_swa"), 10000.0f);
    w.set(k::arch_key(arch, "attention.shared_kv_layers"), gemma4->n_shared_kv);
    w.set(k::arch_key(arch, "embedding_length_per_layer_input"), gemma4->n_embd_per_layer);
    w.set(k::arch_key(arch, "final_logit_softcapping"), 30.0f);
  } else {
    w.set(k::arch_key(arch, k::kFeedForwardLength),
          s.n_expert != 0 && !shared_expert && !deepseek ? s.n_ff_exp : s.n_ff);
  }
  if (s.n_expert != 0) {
    w.set(k::arch_key(arch, "expert_count"), s.n_expert);
    w.set(k::arch_key(arch, "expert_used_count"), s.n_expert_used);
    if (s.arch != "llama") w.set(k::arch_key(arch, "expert_feed_forward_length"), s.n_ff_exp);
    if (shared_expert) w.set(k::arch_key(arch, "expert_shared_feed_forward_length"), s.n_ff);
  }
  const bool lite = options.lite || s.q_lora_rank == 0;  // deepseek2's lite form
  if (deepseek) {
    // Lite: softmax, unnormalized, unscaled; otherwise GLM-4.7-Flash's
    // sigmoid, normalized and scaled weights.
    w.set(k::arch_key(arch, "expert_shared_count"), s.n_shared);
    w.set(k::arch_key(arch, "leading_dense_block_count"), s.n_dense_lead);
    w.set(k::arch_key(arch, "expert_gating_func"), uint32_t{lite ? 1u : 2u});
    w.set(k::arch_key(arch, "expert_weights_norm"), !lite);
    w.set(k::arch_key(arch, "expert_weights_scale"), lite ? 1.0f : 2.5f);
    // (0 in the lite form: llama.cpp needs the key outside its known lite
    // layer counts.)
    w.set(k::arch_key(arch, "attention.q_lora_rank"), lite ? 0u : s.q_lora_rank);
    w.set(k::arch_key(arch, "attention.kv_lora_rank"), s.kv_lora_rank);
    w.set(k::arch_key(arch, k::kKeyLength), s.kv_lora_rank + s.n_rot);
    w.set(k::arch_key(arch, "attention.value_length"), s.kv_lora_rank);
    w.set(k::arch_key(arch, "attention.key_length_mla"), s.mla_nope + s.n_rot);
    w.set(k::arch_key(arch, "attention.value_length_mla"), s.mla_value);
  }
  w.set(k::arch_key(arch, k::kHeadCount), s.n_head);
  if (gemma4 == nullptr) w.set(k::arch_key(arch, k::kHeadCountKv), s.n_head_kv);
  w.set(k::arch_key(arch, k::kRopeFreqBase), s.rope_base);
  if (s.arch == "cohere2") {  // LayerNorms, and logits times logit_scale
    w.set(k::arch_key(arch, "attention.layer_norm_epsilon"), s.rms_eps);
    w.set(k::arch_key(arch, "logit_scale"), 0.5f);
  } else {
    w.set(k::arch_key(arch, "attention.layer_norm_rms_epsilon"), s.rms_eps);
  }
  const uint32_t head_dim = s.head_dim != 0 ? s.head_dim : s.n_embd / s.n_head;
  if (s.head_dim != 0 && !deepseek) {
    w.set(k::arch_key(arch, k::kKeyLength), head_dim);
    w.set(k::arch_key(arch, "attention.value_length"), head_dim);
  }
  const uint32_t n_rot = s.n_rot != 0 ? s.n_rot : head_dim;
  const bool oss = s.arch == "gpt-oss";
  // gpt-oss: YaRN (factor 32 over 4096 positions) and a sliding window of
  // 128, unless the flags say otherwise.
  const std::optional<RopeScaling> rope_scaling =
      options.rope_scaling || !oss ? options.rope_scaling
                                   : std::optional<RopeScaling>(RopeScaling{"yarn", 32.0f, 4096});
  const std::optional<uint32_t> sliding_window =
      options.sliding_window || !oss ? options.sliding_window : std::optional<uint32_t>(128);
  if (s.n_rot != 0) w.set(k::arch_key(arch, "rope.dimension_count"), n_rot);
  const bool long_rope = rope_scaling && rope_scaling->kind == "longrope";
  if (rope_scaling && !long_rope) {
    w.set(k::arch_key(arch, "rope.scaling.type"), rope_scaling->kind);
    w.set(k::arch_key(arch, "rope.scaling.factor"), rope_scaling->factor);
  }
  if (rope_scaling && rope_scaling->original_context != 0) {
    w.set(k::arch_key(arch, "rope.scaling.original_context_length"),
          rope_scaling->original_context);
  }
  if (sliding_window) w.set(k::arch_key(arch, "attention.sliding_window"), *sliding_window);
  if (s.arch == "qwen3vl") {
    // Qwen3-VL's interleaved multimodal sections over the rotated pairs,
    // and deepstack layers (image features; none for text).
    const uint32_t pairs = n_rot / 2, h = pairs * 3 / 8;
    w.set(k::arch_key(arch, "rope.dimension_sections"),
          make_array(std::vector<int32_t>{static_cast<int32_t>(pairs - 2 * h),
                                          static_cast<int32_t>(h), static_cast<int32_t>(h), 0}));
    w.set(k::arch_key(arch, "n_deepstack_layers"), uint32_t{1});
  }
  // qwen35's delta-net heads: `state` wide (keys and values alike), the
  // value heads a multiple of the key heads.
  const uint32_t state = options.state_size.value_or(s.ssm_state);
  if (qwen35) {
    // Qwen3.5's sections, [11, 11, 10, 0] over its 32 rotated pairs: thirds,
    // the remainder to the first ones (llama.cpp requires the key).
    const auto pairs = static_cast<int32_t>(n_rot / 2);
    w.set(k::arch_key(arch, "rope.dimension_sections"),
          make_array(std::vector<int32_t>{(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}));
    w.set(k::arch_key(arch, "ssm.conv_kernel"), s.ssm_conv);
    w.set(k::arch_key(arch, "ssm.inner_size"), state * s.ssm_v_heads);
    w.set(k::arch_key(arch, "ssm.state_size"), state);
    w.set(k::arch_key(arch, "ssm.time_step_rank"), s.ssm_v_heads);
    w.set(k::arch_key(arch, "ssm.group_count"), s.ssm_k_heads);
    w.set(k::arch_key(arch, "full_attention_interval"), s.full_attention_interval);
  }
  for (auto [suffix, value] :
       {std::pair{"rope.scaling.yarn_log_multiplier", options.yarn_log_mul},
        std::pair{"rope.scaling.yarn_beta_fast", options.yarn_beta_fast},
        std::pair{"rope.scaling.yarn_beta_slow", options.yarn_beta_slow},
        std::pair{"attention.temperature_scale", options.attn_temperature}}) {
    if (value) w.set(k::arch_key(arch, suffix), *value);
  }
  if (long_rope) {
    const double scale = static_cast<double>(s.n_ctx) / rope_scaling->original_context;
    const double attn_factor =
        scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(rope_scaling->original_context)) : 1.0;
    w.set(k::arch_key(arch, "rope.scaling.attn_factor"), static_cast<float>(attn_factor));
  }
  add_vocabulary(w, s);

  const auto f32 = static_cast<uint32_t>(GgmlType::F32);
  uint64_t tensor_seed = options.seed;
  // A matrix of n_out rows of n_in values, of layer `layer` (where it is in
  // one), in the type `weights` gives it, filled at write time.
  // With n_matrices > 1, a 3-D tensor of that many (the experts'). A
  // router stays F32, as llama-quantize leaves it (--pure too).
  const auto matrix = [&](const std::string& name, uint32_t layer, uint64_t n_in, uint64_t n_out,
                          uint64_t n_matrices = 1) {
    const bool router = name.ends_with("ffn_gate_inp.weight");
    // llama-quantize counts attn_qkv with the attn_v tensors
    // (category_is_attn_v), by its position among them; a qwen35 layer has
    // one of the two, the delta net's attn_qkv or the attention's attn_v,
    // so there the position is the layer and the type attn_v's.
    constexpr std::string_view kQkv = "attn_qkv.weight";
    const std::string mix_name = qwen35 && name.ends_with(kQkv)
                                     ? name.substr(0, name.size() - kQkv.size()) + "attn_v.weight"
                                     : name;
    const GgmlType type =
        router ? GgmlType::F32
        : weights.mix
            ? quip::gguf::mix_type(*weights.mix, {mix_name, layer, 2, n_in, n_matrices},
                                   {s.n_layer, !s.tied, s.n_head / s.n_head_kv, s.n_expert})
            : quip::gguf::fallback_type(weights.uniform, n_in);
    const quip::gguf::TypeTraits traits = quip::gguf::traits(type);
    const uint64_t row_bytes = n_in / traits.block_size * traits.block_bytes;
    const uint64_t rows = n_out * n_matrices;
    std::vector<uint64_t> shape = {n_in, n_out};
    if (n_matrices > 1) shape.push_back(n_matrices);
    w.add_generated_tensor(name, static_cast<uint32_t>(type), shape, row_bytes * rows,
                           [=, seed = tensor_seed++](std::span<std::byte> out) {
                             const Rng start{seed * 0x100000001B3ULL + 1};
                             fill_rows(start, n_in, rows, [&](uint64_t r, const float* row) {
                               quip::kernels::quantize_row(type, row, out.data() + r * row_bytes,
                                                           n_in);
                             });
                           });
  };
  const auto ones = [&](const std::string& name, uint64_t n) {
    w.add_generated_tensor(name, f32, {n}, n * 4, [](std::span<std::byte> out) {
      const float one = 1.0f;
      for (size_t i = 0; i < out.size(); i += 4) std::memcpy(out.data() + i, &one, 4);
    });
  };
  // Biases (and gpt-oss's sinks), F32; with n_rows, one row per expert.
  const auto small = [&](const std::string& name, uint64_t n, uint64_t n_rows = 1) {
    std::vector<uint64_t> shape = {n};
    if (n_rows > 1) shape.push_back(n_rows);
    w.add_generated_tensor(name, f32, shape, n * n_rows * 4,
                           [seed = tensor_seed++](std::span<std::byte> out) {
                             Rng rng{seed * 0x100000001B3ULL + 7};
                             for (size_t i = 0; i < out.size(); i += 4) {
                               const float v = rng.weight();
                               std::memcpy(out.data() + i, &v, 4);
                             }
                           });
  };

  // F32 values value(u) of u uniform on [0, 1): qwen35's delta-net vectors.
  const auto drawn = [&](const std::string& name, std::vector<uint64_t> shape, auto value) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    w.add_generated_tensor(name, f32, shape, n * 4,
                           [value, seed = tensor_seed++](std::span<std::byte> out) {
                             Rng rng{seed * 0x100000001B3ULL + 13};
                             for (size_t i = 0; i < out.size(); i += 4) {
                               const float v = value(rng.unit());
                               std::memcpy(out.data() + i, &v, 4);
                             }
                           });
  };

  // LongRoPE's per-pair divisors: short ones near 1, long ones growing
  // with the pair's wavelength, as in Phi-3.5's.
  const auto factors = [&](const std::string& name, float first, float growth) {
    w.add_generated_tensor(
        name, f32, {n_rot / 2}, n_rot / 2 * 4, [=, seed = tensor_seed++](std::span<std::byte> out) {
          Rng rng{seed * 0x100000001B3ULL + 11};
          for (size_t i = 0; i < out.size() / 4; ++i) {
            const float v = first + growth * static_cast<float>(i) + std::fabs(rng.weight()) * 5.0f;
            std::memcpy(out.data() + i * 4, &v, 4);
          }
        });
  };

  // A deepseek2 layer: latent attention, then a dense FFN or the experts
  // with their shared ones (and, unless lite, the selection bias).
  const auto write_deepseek2_layer = [&](const std::string& b, uint32_t l) {
    const uint64_t n_embd = s.n_embd, n_head = s.n_head, rank = s.kv_lora_rank;
    const uint64_t head = uint64_t{s.mla_nope} + s.n_rot;
    ones(b + "attn_norm.weight", n_embd);
    if (lite) {
      matrix(b + "attn_q.weight", l, n_embd, n_head * head);
    } else {
      matrix(b + "attn_q_a.weight", l, n_embd, s.q_lora_rank);
      ones(b + "attn_q_a_norm.weight", s.q_lora_rank);
      matrix(b + "attn_q_b.weight", l, s.q_lora_rank, n_head * head);
    }
    matrix(b + "attn_kv_a_mqa.weight", l, n_embd, rank + s.n_rot);
    ones(b + "attn_kv_a_norm.weight", rank);
    matrix(b + "attn_k_b.weight", l, s.mla_nope, rank, n_head);
    matrix(b + "attn_v_b.weight", l, rank, s.mla_value, n_head);
    matrix(b + "attn_output.weight", l, n_head * s.mla_value, n_embd);
    ones(b + "ffn_norm.weight", n_embd);
    if (l < s.n_dense_lead) {
      matrix(b + "ffn_gate.weight", l, n_embd, s.n_ff);
      matrix(b + "ffn_up.weight", l, n_embd, s.n_ff);
      matrix(b + "ffn_down.weight", l, s.n_ff, n_embd);
      return;
    }
    const uint64_t shared = uint64_t{s.n_ff_exp} * s.n_shared;
    matrix(b + "ffn_gate_inp.weight", l, n_embd, s.n_expert);
    if (!lite) small(b + "exp_probs_b.bias", s.n_expert);
    if (options.fuse_gate_up) {
      matrix(b + "ffn_gate_up_exps.weight", l, n_embd, 2 * uint64_t{s.n_ff_exp}, s.n_expert);
    } else {
      matrix(b + "ffn_gate_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
      matrix(b + "ffn_up_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
    }
    matrix(b + "ffn_down_exps.weight", l, s.n_ff_exp, n_embd, s.n_expert);
    matrix(b + "ffn_gate_shexp.weight", l, n_embd, shared);
    matrix(b + "ffn_up_shexp.weight", l, n_embd, shared);
    matrix(b + "ffn_down_shexp.weight", l, shared, n_embd);
  };

  const uint64_t kv = uint64_t{head_dim} * s.n_head_kv, q_dim = uint64_t{head_dim} * s.n_head;

  // A qwen35 layer (llama.cpp's src/models/qwen35.cpp): a gated delta net
  // (Qwen3-Next's linear attention) or, each full_attention_interval-th,
  // attention whose attn_q gives per head the queries then a sigmoid gate
  // for the output; post_attention_norm is the FFN's pre-norm; a dense FFN
  // or the experts beside a shared one gated by ffn_gate_inp_shexp.
  const auto write_qwen35_layer = [&](const std::string& b, uint32_t l) {
    const uint64_t n_embd = s.n_embd;
    ones(b + "attn_norm.weight", n_embd);
    ones(b + "post_attention_norm.weight", n_embd);
    if ((l + 1) % s.full_attention_interval != 0) {
      const uint64_t key_dim = uint64_t{state} * s.ssm_k_heads;
      const uint64_t value_dim = uint64_t{state} * s.ssm_v_heads;
      const uint64_t conv_dim = 2 * key_dim + value_dim;  // Q, K, V, convolved together
      matrix(b + "attn_qkv.weight", l, n_embd, conv_dim);
      matrix(b + "attn_gate.weight", l, n_embd, value_dim);  // z, the output norm's gate
      drawn(b + "ssm_conv1d.weight", {s.ssm_conv, conv_dim},
            [](float u) { return u - 0.5f; });  // PyTorch's 1/sqrt(4 taps)
      drawn(b + "ssm_dt.bias", {s.ssm_v_heads}, [](float u) { return 2.0f * u; });
      drawn(b + "ssm_a", {s.ssm_v_heads}, [](float u) { return -std::exp(2.0f * u - 1.0f); });
      matrix(b + "ssm_beta.weight", l, n_embd, s.ssm_v_heads);
      matrix(b + "ssm_alpha.weight", l, n_embd, s.ssm_v_heads);
      ones(b + "ssm_norm.weight", state);
      matrix(b + "ssm_out.weight", l, value_dim, n_embd);
    } else {
      matrix(b + "attn_q.weight", l, n_embd, 2 * q_dim);
      matrix(b + "attn_k.weight", l, n_embd, kv);
      matrix(b + "attn_v.weight", l, n_embd, kv);
      ones(b + "attn_q_norm.weight", head_dim);
      ones(b + "attn_k_norm.weight", head_dim);
      matrix(b + "attn_output.weight", l, q_dim, n_embd);
    }
    if (s.n_expert == 0) {
      matrix(b + "ffn_gate.weight", l, n_embd, s.n_ff);
      matrix(b + "ffn_up.weight", l, n_embd, s.n_ff);
      matrix(b + "ffn_down.weight", l, s.n_ff, n_embd);
      return;
    }
    matrix(b + "ffn_gate_inp.weight", l, n_embd, s.n_expert);
    matrix(b + "ffn_gate_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
    matrix(b + "ffn_up_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
    matrix(b + "ffn_down_exps.weight", l, s.n_ff_exp, n_embd, s.n_expert);
    small(b + "ffn_gate_inp_shexp.weight", n_embd);  // one row, kept F32 (1-D)
    matrix(b + "ffn_gate_shexp.weight", l, n_embd, s.n_ff);
    matrix(b + "ffn_up_shexp.weight", l, n_embd, s.n_ff);
    matrix(b + "ffn_down_shexp.weight", l, s.n_ff, n_embd);
  };

  // A gemma4 layer (llama.cpp's src/models/gemma4.cpp): its kind's head
  // size and KV heads; no K or V where it reads an earlier layer's; the
  // dense FFN and, with experts, the experts beside it with their norms
  // and scales; the per-layer embedding's gate, projection and norm; the
  // layer's output scale.
  const auto write_gemma4_layer = [&](const std::string& b, uint32_t l) {
    const uint64_t n_embd = s.n_embd;
    const bool sliding = gemma4->pattern[l] == 's';
    const uint64_t hd = sliding ? gemma4->swa_head_dim : head_dim;
    const uint64_t kv_heads = sliding ? gemma4->swa_head_kv : s.n_head_kv;
    const auto around_one = [](float u) { return 0.5f + u; };
    ones(b + "attn_norm.weight", n_embd);
    matrix(b + "attn_q.weight", l, n_embd, s.n_head * hd);
    ones(b + "attn_q_norm.weight", hd);
    if (l < s.n_layer - gemma4->n_shared_kv) {
      matrix(b + "attn_k.weight", l, n_embd, kv_heads * hd);
      if (sliding || !gemma4->full_without_v) matrix(b + "attn_v.weight", l, n_embd, kv_heads * hd);
      ones(b + "attn_k_norm.weight", hd);
    }
    matrix(b + "attn_output.weight", l, s.n_head * hd, n_embd);
    ones(b + "post_attention_norm.weight", n_embd);
    ones(b + "ffn_norm.weight", n_embd);
    matrix(b + "ffn_gate.weight", l, n_embd, gemma4_ff(l));
    matrix(b + "ffn_up.weight", l, n_embd, gemma4_ff(l));
    matrix(b + "ffn_down.weight", l, gemma4_ff(l), n_embd);
    ones(b + "post_ffw_norm.weight", n_embd);
    if (s.n_expert != 0) {
      matrix(b + "ffn_gate_inp.weight", l, n_embd, s.n_expert);
      drawn(b + "ffn_gate_inp.scale", {n_embd}, around_one);
      ones(b + "pre_ffw_norm_2.weight", n_embd);
      ones(b + "post_ffw_norm_1.weight", n_embd);
      ones(b + "post_ffw_norm_2.weight", n_embd);
      matrix(b + "ffn_gate_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
      matrix(b + "ffn_up_exps.weight", l, n_embd, s.n_ff_exp, s.n_expert);
      matrix(b + "ffn_down_exps.weight", l, s.n_ff_exp, n_embd, s.n_expert);
      drawn(b + "ffn_down_exps.scale", {s.n_expert}, around_one);
    }
    if (gemma4->n_embd_per_layer != 0) {
      matrix(b + "inp_gate.weight", l, n_embd, gemma4->n_embd_per_layer);
      matrix(b + "proj.weight", l, gemma4->n_embd_per_layer, n_embd);
      ones(b + "post_norm.weight", n_embd);
    }
    drawn(b + "layer_output_scale.weight", {1}, around_one);
  };

  const bool fused_up = s.arch == "phi3" || s.arch == "glm4";
  const bool post_norms = s.arch == "glm4" || s.arch == "exaone4";
  const bool pre_norms = s.arch != "exaone4";  // exaone4 norms the branch outputs only
  const bool fused_qkv = fused_up || options.fused_qkv;
  // llama.cpp's loaders read Q/K/V biases in every family, attention
  // output and FFN biases in llama's, and an output bias in qwen2's.
  const bool qkv_biases = s.arch == "qwen2" || s.arch == "qwen2moe" || oss || options.biases;
  const bool projection_biases = options.biases && (s.arch == "llama" || s.arch == "mistral3");
  matrix("token_embd.weight", 0, s.n_embd, s.n_vocab);
  ones("output_norm.weight", s.n_embd);
  if (!s.tied) matrix("output.weight", 0, s.n_embd, s.n_vocab);
  if (options.biases && s.arch == "qwen2") small("output.bias", s.n_vocab);
  if (long_rope) {
    factors("rope_factors_long.weight", 1.0f, 2.5f);
    factors("rope_factors_short.weight", 1.0f, 0.0f);
  }
  if (gemma4 != nullptr) {
    // The full-attention layers' proportional rotation: a quarter of the
    // head turns, the rest divided by 1e30 (the converter's rope_freqs).
    const uint32_t pairs = head_dim / 2, turning = head_dim / 8;
    w.add_generated_tensor("rope_freqs.weight", f32, {pairs}, pairs * 4,
                           [=](std::span<std::byte> out) {
                             for (uint32_t i = 0; i < pairs; ++i) {
                               const float v = i < turning ? 1.0f : 1e30f;
                               std::memcpy(out.data() + i * 4, &v, 4);
                             }
                           });
    const uint64_t per_layer = uint64_t{gemma4->n_embd_per_layer} * s.n_layer;
    if (per_layer != 0) {
      matrix("per_layer_token_embd.weight", 0, per_layer, s.n_vocab);
      matrix("per_layer_model_proj.weight", 0, s.n_embd, per_layer);
      ones("per_layer_proj_norm.weight", gemma4->n_embd_per_layer);
    }
  }
  for (uint32_t l = 0; l < s.n_layer + options.nextn; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (gemma4 != nullptr) {
      write_gemma4_layer(b, l);
      continue;
    }
    if (deepseek) {
      write_deepseek2_layer(b, l);
      continue;
    }
    if (qwen35) {
      write_qwen35_layer(b, l);
      continue;
    }
    if (pre_norms) ones(b + "attn_norm.weight", s.n_embd);
    if (fused_qkv) {
      matrix(b + "attn_qkv.weight", l, s.n_embd, q_dim + 2 * kv);
      if (qkv_biases) small(b + "attn_qkv.bias", q_dim + 2 * kv);
    } else {
      matrix(b + "attn_q.weight", l, s.n_embd, q_dim);
      matrix(b + "attn_k.weight", l, s.n_embd, kv);
      matrix(b + "attn_v.weight", l, s.n_embd, kv);
      if (qkv_biases) {
        small(b + "attn_q.bias", q_dim);
        small(b + "attn_k.bias", kv);
        small(b + "attn_v.bias", kv);
      }
    }
    if (s.qk_norm) {
      ones(b + "attn_q_norm.weight", head_dim);
      ones(b + "attn_k_norm.weight", head_dim);
    }
    matrix(b + "attn_output.weight", l, q_dim, s.n_embd);
    if (projection_biases || oss) small(b + "attn_output.bias", s.n_embd);
    if (oss) small(b + "attn_sinks.weight", s.n_head);
    // gpt-oss names its FFN's pre-norm post_attention_norm.
    if (post_norms || oss) ones(b + "post_attention_norm.weight", s.n_embd);
    if (pre_norms && s.arch != "cohere2" && !oss) ones(b + "ffn_norm.weight", s.n_embd);
    if (s.n_expert != 0) {
      matrix(b + "ffn_gate_inp.weight", l, s.n_embd, s.n_expert);
      matrix(b + "ffn_gate_exps.weight", l, s.n_embd, s.n_ff_exp, s.n_expert);
      matrix(b + "ffn_up_exps.weight", l, s.n_embd, s.n_ff_exp, s.n_expert);
      matrix(b + "ffn_down_exps.weight", l, s.n_ff_exp, s.n_embd, s.n_expert);
      if (s.arch == "qwen2moe") {
        matrix(b + "ffn_gate_shexp.weight", l, s.n_embd, s.n_ff);
        matrix(b + "ffn_up_shexp.weight", l, s.n_embd, s.n_ff);
        matrix(b + "ffn_down_shexp.weight", l, s.n_ff, s.n_embd);
        small(b + "ffn_gate_inp_shexp.weight", s.n_embd);  // one row, kept F32 (1-D)
      }
      if (oss) {
        small(b + "ffn_gate_inp.bias", s.n_expert);
        small(b + "ffn_gate_exps.bias", s.n_ff_exp, s.n_expert);
        small(b + "ffn_up_exps.bias", s.n_ff_exp, s.n_expert);
        small(b + "ffn_down_exps.bias", s.n_embd, s.n_expert);
      }
    } else if (fused_up) {
      matrix(b + "ffn_up.weight", l, s.n_embd, 2 * uint64_t{s.n_ff});
    } else {
      matrix(b + "ffn_gate.weight", l, s.n_embd, s.n_ff);
      matrix(b + "ffn_up.weight", l, s.n_embd, s.n_ff);
    }
    if (s.n_expert == 0) matrix(b + "ffn_down.weight", l, s.n_ff, s.n_embd);
    if (projection_biases) {
      small(b + "ffn_gate.bias", s.n_ff);
      small(b + "ffn_up.bias", s.n_ff);
      small(b + "ffn_down.bias", s.n_embd);
    }
    if (post_norms) ones(b + "post_ffw_norm.weight", s.n_embd);
    if (l >= s.n_layer) {  // a NextN block's own tensors
      matrix(b + "nextn.eh_proj.weight", l, 2 * uint64_t{s.n_embd}, s.n_embd);
      ones(b + "nextn.enorm.weight", s.n_embd);
      ones(b + "nextn.hnorm.weight", s.n_embd);
    }
  }
  if (auto r = w.write(path); !r) {
    std::fprintf(stderr, "quip-synth: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}

int usage() {
  std::fputs(
      "usage: quip-synth SHAPE OUT.gguf [--type TYPE | --mix FTYPE] [--seed N] [--fused-qkv]\n"
      "                  [--biases] [--lite] [--fuse-gate-up] [--nextn N] [--yarn-log-mul X] "
      "[--yarn-beta "
      "FAST:SLOW]\n"
      "                  [--attn-temperature SCALE] [--sliding-window N] [--state-size N]\n"
      "                  [--rope-scaling linear:FACTOR | yarn:FACTOR[:ORIGINAL_CONTEXT] |\n"
      "                                  longrope:ORIGINAL_CONTEXT]\n"
      "SHAPE: tiny, tiny-qwen2, tiny-qwen3, tiny-phi3, tiny-glm4, tiny-mistral3, tiny-qwen3vl,\n"
      "       tiny-exaone4, tiny-exaone4-64, tiny-cohere2, tiny-qwen3moe, tiny-qwen2moe,\n"
      "       tiny-mixtral, tiny-gpt-oss, tiny-deepseek2, tiny-qwen35, tiny-qwen35moe,\n"
      "       tiny-gemma4, tiny-gemma4moe,\n"
      "       qwen2.5-0.5b, llama-3.2-1b, qwen2.5-7b, llama-3.1-8b, qwen3-8b, qwen2.5-14b,\n"
      "       qwen3-30b-a3b, gpt-oss-20b, deepseek-v2-lite, qwen3.5-0.8b, qwen3.5-9b\n"
      "TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl mxfp4 q2_k q3_k q4_k q5_k q6_k iq4_xs "
      "(every matrix), q4_k_m q5_k_m (mixes)\n"
      "FTYPE: q4_k_m q5_k_m q6_k iq4_xs mxfp4_moe (llama-quantize's mix of that file type)\n",
      stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes) {
    if (s.name == argv[1]) shape = &s;
  }
  if (shape == nullptr) {
    std::fprintf(stderr, "quip-synth: unknown shape '%s'\n", argv[1]);
    return usage();
  }
  Options options;
  options.weights = {shape->default_type, std::nullopt};
  WeightTypes& weights = options.weights;
  uint64_t& seed = options.seed;
  std::optional<RopeScaling>& rope_scaling = options.rope_scaling;
  for (int i = 3; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--fused-qkv" || flag == "--biases" || flag == "--lite" ||
        flag == "--fuse-gate-up") {
      (flag == "--biases"         ? options.biases
       : flag == "--lite"         ? options.lite
       : flag == "--fuse-gate-up" ? options.fuse_gate_up
                                  : options.fused_qkv) = true;
      --i;  // a flag without a value: one step, not two
      continue;
    }
    if (i + 1 >= argc) return usage();
    const std::string_view value = argv[i + 1];
    const auto number = [&](std::optional<float>* out) {
      char* end = nullptr;
      *out = std::strtof(argv[i + 1], &end);
      return !value.empty() && *end == '\0' && std::isfinite(**out);
    };
    if (flag == "--yarn-log-mul" || flag == "--attn-temperature") {
      if (!number(flag == "--attn-temperature" ? &options.attn_temperature
                                               : &options.yarn_log_mul)) {
        return usage();
      }
      continue;
    }
    if (flag == "--yarn-beta") {  // FAST:SLOW
      char* end = nullptr;
      options.yarn_beta_fast = std::strtof(argv[i + 1], &end);
      if (*end != ':') return usage();
      const char* slow = end + 1;
      options.yarn_beta_slow = std::strtof(slow, &end);
      if (end == slow || *end != '\0') return usage();
      continue;
    }
    if (flag == "--sliding-window") {
      char* end = nullptr;
      options.sliding_window = static_cast<uint32_t>(std::strtoul(argv[i + 1], &end, 10));
      if (value.empty() || *end != '\0') return usage();
      continue;
    }
    if (flag == "--state-size") {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[i + 1], &end, 10);
      if (value.empty() || *end != '\0' || n == 0 || n > 1024) {
        std::fprintf(stderr, "quip-synth: --state-size '%s' is not a whole number in [1, 1024]\n",
                     argv[i + 1]);
        return 2;
      }
      options.state_size = static_cast<uint32_t>(n);
      continue;
    }
    if (flag == "--nextn") {
      char* end = nullptr;
      options.nextn = static_cast<uint32_t>(std::strtoul(argv[i + 1], &end, 10));
      if (value.empty() || *end != '\0' || options.nextn > 8) return usage();
      continue;
    }
    if (flag == "--type") {
      const std::optional<GgmlType> t = quip::gguf::type_from_name(value);
      const std::optional<quip::gguf::FileMix> mix = quip::gguf::file_mix_from_name(value);
      // Every type quip multiplies has a quantizer.
      if (t && quip::kernels::can_quantize(*t)) {
        weights = {*t, std::nullopt};
      } else if (mix == quip::gguf::FileMix::Q4_K_M || mix == quip::gguf::FileMix::Q5_K_M) {
        weights = {GgmlType::F32, mix};
      } else {
        std::fprintf(stderr,
                     "quip-synth: type '%s' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, "
                     "q5_1, iq4_nl, mxfp4, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, q4_k_m, q5_k_m\n",
                     argv[i + 1]);
        return 2;
      }
    } else if (flag == "--mix") {
      const std::optional<quip::gguf::FileMix> mix = quip::gguf::file_mix_from_name(value);
      if (!mix) {
        std::fprintf(stderr,
                     "quip-synth: mix '%s' is not one of q4_k_m, q5_k_m, q6_k, iq4_xs, mxfp4_moe\n",
                     argv[i + 1]);
        return 2;
      }
      weights = {GgmlType::F32, mix};
    } else if (flag == "--rope-scaling") {
      rope_scaling = rope_scaling_from(value);
      if (!rope_scaling) {
        std::fprintf(stderr,
                     "quip-synth: rope scaling '%s' is not linear:FACTOR or "
                     "yarn:FACTOR[:ORIGINAL_CONTEXT]\n",
                     argv[i + 1]);
        return 2;
      }
    } else if (flag == "--seed") {
      char* end = nullptr;
      seed = std::strtoull(argv[i + 1], &end, 10);
      if (value.empty() || *end != '\0') return usage();
    } else {
      return usage();
    }
  }
  const bool qwen35 = shape->ssm_state != 0;
  if (options.state_size && !qwen35) {
    std::fprintf(stderr, "quip-synth: --state-size is for qwen35's shapes, not %s\n", argv[1]);
    return 2;
  }
  // llama.cpp's qwen35 graphs read neither a fused attn_qkv in the
  // attention layers nor biases, and its NextN blocks are attention blocks
  // these flags do not write.
  if (qwen35 && (options.fused_qkv || options.biases || options.nextn != 0)) {
    std::fprintf(stderr, "quip-synth: %s takes no --fused-qkv, --biases or --nextn\n", argv[1]);
    return 2;
  }
  return write_model(*shape, options, argv[2]);
}
