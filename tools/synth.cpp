// quip-synth: writes GGUF models with random weights, for demos, tests and
// benchmarks (not a user command).
//
//   quip-synth tiny OUT.gguf [--seed N]
//
// `tiny` is a 2-layer llama (n_embd 64, 4 heads, 2 KV heads) with F32
// weights and a SentencePiece-style vocabulary of byte tokens.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/keys.h"
#include "gguf/types.h"
#include "gguf/writer.h"

namespace {

using quip::gguf::GgmlType;
using quip::gguf::GgufWriter;
using quip::gguf::make_array;

struct Shape {
  const char* name;
  uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
};

constexpr Shape kTiny{"tiny", 64, 2, 4, 2, 128, 2048};

std::vector<std::byte> random_f32(uint64_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<std::byte> out(n * sizeof(float));
  for (uint64_t i = 0; i < n; ++i) {
    const float v = dist(rng);
    std::memcpy(out.data() + i * sizeof(float), &v, sizeof v);
  }
  return out;
}

std::vector<std::byte> ones_f32(uint64_t n) {
  std::vector<std::byte> out(n * sizeof(float));
  const float one = 1.0f;
  for (uint64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * sizeof(float), &one, sizeof one);
  return out;
}

void add_vocabulary(GgufWriter& w) {
  namespace k = quip::gguf::keys;
  // SentencePiece token types: 1 normal, 2 unknown, 3 control, 6 byte.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  w.set(std::string(k::kTokenizerModel), std::string("llama"));
  w.set(std::string(k::kTokenizerPre), std::string("default"));
  w.set(std::string(k::kTokens), make_array(tokens));
  w.set("tokenizer.ggml.scores", make_array(scores));
  w.set("tokenizer.ggml.token_type", make_array(types));
  w.set(std::string(k::kBosTokenId), uint32_t{1});
  w.set(std::string(k::kEosTokenId), uint32_t{2});
  w.set("tokenizer.ggml.unknown_token_id", uint32_t{0});
}

int write_model(const Shape& s, const std::string& path, uint32_t seed) {
  namespace k = quip::gguf::keys;
  const std::string arch = "llama";
  std::mt19937 rng(seed);
  GgufWriter w;
  w.set(std::string(k::kArchitecture), arch);
  w.set(std::string(k::kName), std::string("quip-synth ") + s.name + " (random weights)");
  w.set(std::string(k::kFileType), uint32_t{0});  // all F32
  w.set(k::arch_key(arch, k::kContextLength), s.n_ctx);
  w.set(k::arch_key(arch, k::kEmbeddingLength), s.n_embd);
  w.set(k::arch_key(arch, k::kBlockCount), s.n_layer);
  w.set(k::arch_key(arch, k::kFeedForwardLength), s.n_ff);
  w.set(k::arch_key(arch, k::kHeadCount), s.n_head);
  w.set(k::arch_key(arch, k::kHeadCountKv), s.n_head_kv);
  w.set(k::arch_key(arch, k::kRopeFreqBase), 10000.0f);
  w.set(k::arch_key(arch, "attention.layer_norm_rms_epsilon"), 1e-5f);
  add_vocabulary(w);
  const uint64_t n_vocab = 3 + 256;

  const auto f32 = static_cast<uint32_t>(GgmlType::F32);
  const uint64_t head_dim = s.n_embd / s.n_head;
  const uint64_t n_kv = head_dim * s.n_head_kv;
  const float scale = 0.02f;
  w.add_tensor("token_embd.weight", f32, {s.n_embd, n_vocab},
               random_f32(s.n_embd * n_vocab, scale, rng));
  w.add_tensor("output_norm.weight", f32, {s.n_embd}, ones_f32(s.n_embd));
  w.add_tensor("output.weight", f32, {s.n_embd, n_vocab},
               random_f32(s.n_embd * n_vocab, scale, rng));
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    w.add_tensor(b + "attn_norm.weight", f32, {s.n_embd}, ones_f32(s.n_embd));
    w.add_tensor(b + "attn_q.weight", f32, {s.n_embd, s.n_embd},
                 random_f32(uint64_t{s.n_embd} * s.n_embd, scale, rng));
    w.add_tensor(b + "attn_k.weight", f32, {s.n_embd, n_kv},
                 random_f32(s.n_embd * n_kv, scale, rng));
    w.add_tensor(b + "attn_v.weight", f32, {s.n_embd, n_kv},
                 random_f32(s.n_embd * n_kv, scale, rng));
    w.add_tensor(b + "attn_output.weight", f32, {s.n_embd, s.n_embd},
                 random_f32(uint64_t{s.n_embd} * s.n_embd, scale, rng));
    w.add_tensor(b + "ffn_norm.weight", f32, {s.n_embd}, ones_f32(s.n_embd));
    w.add_tensor(b + "ffn_gate.weight", f32, {s.n_embd, s.n_ff},
                 random_f32(uint64_t{s.n_embd} * s.n_ff, scale, rng));
    w.add_tensor(b + "ffn_up.weight", f32, {s.n_embd, s.n_ff},
                 random_f32(uint64_t{s.n_embd} * s.n_ff, scale, rng));
    w.add_tensor(b + "ffn_down.weight", f32, {s.n_ff, s.n_embd},
                 random_f32(uint64_t{s.n_ff} * s.n_embd, scale, rng));
  }
  if (auto r = w.write(path); !r) {
    std::fprintf(stderr, "quip-synth: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "usage: quip-synth tiny OUT.gguf [--seed N]\n";
  if (argc != 3 && argc != 5) {
    std::fputs(usage, stderr);
    return 2;
  }
  uint32_t seed = 42;
  if (argc == 5) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(argv[4], &end, 10);
    if (std::strcmp(argv[3], "--seed") != 0 || *argv[4] == '\0' || *end != '\0' || v > UINT32_MAX) {
      std::fputs(usage, stderr);
      return 2;
    }
    seed = static_cast<uint32_t>(v);
  }
  if (std::strcmp(argv[1], kTiny.name) != 0) {
    std::fprintf(stderr, "quip-synth: unknown shape '%s', expected 'tiny'\n", argv[1]);
    return 2;
  }
  return write_model(kTiny, argv[2], seed);
}
