#include "cli/inspect.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "engine/model.h"
#include "gguf/keys.h"
#include "gguf/reader.h"

namespace quip::cli {

// llama.cpp's llama_ftype, as stored in general.file_type.
std::string file_type_name(uint64_t ft) {
  static const std::map<uint64_t, const char*> kNames = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"},
  };
  auto it = kNames.find(ft & ~uint64_t{1024});  // 1024: LLAMA_FTYPE_GUESSED
  return it == kNames.end() ? "unknown (" + std::to_string(ft) + ")" : it->second;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string human_count(uint64_t n) {
  char buf[32];
  if (n >= 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
  } else if (n >= 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(n) / 1e6);
  } else if (n >= 1'000) {
    std::snprintf(buf, sizeof buf, "%.2f K", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  }
  return buf;
}

namespace {

using gguf::ArrayView;
using gguf::GgufFile;
using gguf::Value;
using gguf::ValueType;
using Json = nlohmann::ordered_json;

constexpr size_t kMaxJsonArray = 16;  // longer arrays print as {"type", "length"}

// A float as the shortest decimal that reads back as the same float, so that
// 1e-5f prints as 1e-05 rather than as its double expansion.
double shortest_double(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  double d = f;
  if (ec == std::errc()) std::from_chars(buf, end, d);
  return d;
}

// JSON has no NaN or infinity: those print as the strings "NaN", "Infinity"
// and "-Infinity" (the spellings of JavaScript and Python), never as null,
// which would read as a missing value.
Json number_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

Json array_json(const ArrayView& a);

Json scalar_array_element(const ArrayView& a, uint64_t i) {
  switch (a.elem_type) {
    case ValueType::U8: return a.at<uint8_t>(i);
    case ValueType::I8: return a.at<int8_t>(i);
    case ValueType::U16: return a.at<uint16_t>(i);
    case ValueType::I16: return a.at<int16_t>(i);
    case ValueType::U32: return a.at<uint32_t>(i);
    case ValueType::I32: return a.at<int32_t>(i);
    case ValueType::F32: return number_json(shortest_double(a.at<float>(i)));
    case ValueType::Bool: return a.at<bool>(i);
    case ValueType::U64: return a.at<uint64_t>(i);
    case ValueType::I64: return a.at<int64_t>(i);
    case ValueType::F64: return number_json(a.at<double>(i));
    case ValueType::String: return a.strings[i];
    case ValueType::Array: return array_json(a.arrays[i]);
  }
  return nullptr;
}

Json array_json(const ArrayView& a) {
  if (a.length > kMaxJsonArray) {
    return Json{{"type", gguf::value_type_name(a.elem_type)}, {"length", a.length}};
  }
  Json list = Json::array();
  for (uint64_t i = 0; i < a.length; ++i) list.push_back(scalar_array_element(a, i));
  return list;
}

Json value_json(const Value& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ArrayView>) {
          return array_json(x);
        } else if constexpr (std::is_same_v<T, float>) {
          return number_json(shortest_double(x));
        } else if constexpr (std::is_same_v<T, double>) {
          return number_json(x);
        } else {
          return x;
        }
      },
      v);
}

// The model facts inspect reports, each absent when the file does not say.
struct Summary {
  std::string architecture;
  std::optional<std::string> name;
  std::optional<uint64_t> file_type;
  std::optional<uint64_t> context_length, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  std::optional<double> rope_base;
  std::optional<uint64_t> n_vocab;
  std::optional<std::string> tokenizer_model, tokenizer_pre;
  std::optional<uint64_t> bos, eos;
  std::optional<uint64_t> chat_template_bytes;
  uint64_t n_params = 0;
  uint64_t tensor_bytes = 0;
  std::map<std::string, uint64_t> tensors_per_type;  // by type name
  // How quip computes the model (its windows, soft caps, RoPE scaling), or
  // why it cannot.
  std::optional<engine::Hparams> computed;
  const engine::ArchSpec* spec = nullptr;  // where it runs
  std::optional<engine::MoeSpec> moe;      // where it has experts
  bool long_rope = false;                  // LongRoPE's factor tensors
  std::string not_runnable;
};

std::optional<uint64_t> uint_of(const GgufFile& f, std::string_view key) {
  auto r = f.get_uint(key);
  return r ? std::optional<uint64_t>(*r) : std::nullopt;
}

std::optional<std::string> string_of(const GgufFile& f, std::string_view key) {
  auto r = f.get<std::string_view>(key);
  return r ? std::optional<std::string>(*r) : std::nullopt;
}

Summary summarize(const GgufFile& f) {
  namespace k = gguf::keys;
  Summary s;
  s.architecture = string_of(f, k::kArchitecture).value_or("");
  const auto ak = [&](std::string_view suffix) { return k::arch_key(s.architecture, suffix); };
  s.name = string_of(f, k::kName);
  s.file_type = uint_of(f, k::kFileType);
  s.context_length = uint_of(f, ak(k::kContextLength));
  s.n_embd = uint_of(f, ak(k::kEmbeddingLength));
  s.n_layer = uint_of(f, ak(k::kBlockCount));
  s.n_head = uint_of(f, ak(k::kHeadCount));
  s.n_head_kv = uint_of(f, ak(k::kHeadCountKv));
  if (!s.n_head_kv) s.n_head_kv = s.n_head;  // GGUF: absent means no grouping
  s.head_dim = uint_of(f, ak(k::kKeyLength));
  if (!s.head_dim && s.n_embd && s.n_head && *s.n_head > 0) s.head_dim = *s.n_embd / *s.n_head;
  s.n_ff = uint_of(f, ak(k::kFeedForwardLength));
  if (auto r = f.get<float>(ak(k::kRopeFreqBase))) s.rope_base = shortest_double(*r);
  if (auto r = f.get_array(k::kTokens, ValueType::String)) {
    s.n_vocab = (*r)->length;
  } else {
    s.n_vocab = uint_of(f, ak(k::kVocabSize));
  }
  s.tokenizer_model = string_of(f, k::kTokenizerModel);
  s.tokenizer_pre = string_of(f, k::kTokenizerPre);
  s.bos = uint_of(f, k::kBosTokenId);
  s.eos = uint_of(f, k::kEosTokenId);
  if (auto t = f.get<std::string_view>(k::kChatTemplate)) s.chat_template_bytes = t->size();
  for (const gguf::TensorInfo& t : f.tensors()) {
    s.n_params += t.n_elements;
    s.tensor_bytes += t.n_bytes;
    ++s.tensors_per_type[std::string(t.type.name)];
  }
  if (auto m = engine::Model::bind(f)) {
    s.computed = m->hparams();
    s.spec = &m->arch();
    if (m->moe() != nullptr) s.moe = *m->moe();
    s.long_rope = m->long_rope();
  } else {
    s.not_runnable = m.error().message;
    // Without the file's name, which the report already shows.
    const std::string prefix = printable(f.name(), 4096) + ": ";
    if (s.not_runnable.starts_with(prefix)) s.not_runnable.erase(0, prefix.size());
  }
  return s;
}

// The layers of hp that attend through the sliding window.
uint32_t sliding_layers(const engine::Hparams& hp) {
  uint32_t n = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) n += hp.slides(il) ? 1 : 0;
  return n;
}

// "yarn", "longrope", "linear" or "none".
std::string_view rope_scaling_kind(const Summary& s) {
  const engine::RopeFrequencies& rope = s.computed->rope;
  if (rope.ext_factor != 0) return "yarn";
  if (s.long_rope) return "longrope";
  return rope.freq_scale != 1 || rope.mscale != 1 ? "linear" : "none";
}

// A number as the text view writes it: %.6g.
std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::string(buf);
}

// The layers that are recurrent (Gated DeltaNet), and the bytes of their
// state, which a sequence carries whatever its length (float32).
uint32_t recurrent_layers(const engine::Hparams& hp) {
  uint32_t n = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) n += hp.is_recurrent(il) ? 1 : 0;
  return n;
}

uint64_t recurrent_state_bytes(const engine::Hparams& hp) {
  if (!hp.delta_net) return 0;
  const engine::Hparams::DeltaNet& dn = *hp.delta_net;
  return recurrent_layers(hp) * (dn.conv_floats() + dn.state_floats()) * sizeof(float);
}

Json delta_net_json(const engine::Hparams& hp) {
  if (!hp.delta_net) return nullptr;
  const engine::Hparams::DeltaNet& dn = *hp.delta_net;
  return Json{{"recurrent_layers", recurrent_layers(hp)},
              {"value_heads", dn.n_v_heads},
              {"key_heads", dn.n_k_heads},
              {"head_dim", dn.head_dim},
              {"conv_kernel", dn.conv_kernel},
              {"state_bytes", recurrent_state_bytes(hp)}};
}

// How a mixture of experts weighs the experts it chooses.
std::string expert_weights(const engine::MoeSpec& moe) {
  std::string how = moe.gating == engine::Gating::Softmax   ? "softmax over all experts"
                    : moe.gating == engine::Gating::Sigmoid ? "sigmoid of each"
                                                            : "softmax over the chosen";
  if (moe.normalize) how += ", normalized";
  if (moe.weights_scale != 0 && moe.weights_scale != 1) {
    how += ", x " + g(moe.weights_scale);
  }
  return how;
}

// What quip computes beyond the plain transformer: nulls where the model
// has none of it.
Json computed_json(const Summary& s) {
  if (!s.computed) return Json{{"runs", false}, {"error", s.not_runnable}};
  const engine::Hparams& hp = *s.computed;
  const auto value_or_null = [](float v) {
    return v != 0 ? Json(shortest_double(v)) : Json(nullptr);
  };
  Json window = nullptr;
  if (hp.window != 0) {
    window = Json{{"window", hp.window},
                  {"pattern", hp.window_pattern},
                  {"sliding_layers", sliding_layers(hp)},
                  {"rope_freq_base", shortest_double(hp.rope_sliding.base)},
                  {"rope_freq_scale", shortest_double(hp.rope_sliding.freq_scale)}};
  }
  return Json{{"runs", true},
              {"rope_scaling", rope_scaling_kind(s)},
              {"rope_freq_scale", shortest_double(hp.rope.freq_scale)},
              {"rope_attn_factor", shortest_double(hp.rope.mscale)},
              {"rope_original_context", hp.n_ctx_orig},
              {"sliding_window", window},
              {"attn_softcap", value_or_null(hp.attn_softcap)},
              {"final_softcap", value_or_null(hp.final_softcap)},
              {"embedding_scale", value_or_null(hp.embedding_scale)},
              {"query_scale", value_or_null(hp.query_scale)},
              {"attn_temperature_scale", value_or_null(hp.attn_temp_scale)},
              {"nextn_blocks", hp.n_block - hp.n_layer},
              {"attn_sinks", s.spec->sinks},
              {"delta_net", delta_net_json(hp)},
              {"experts", hp.n_expert == 0
                              ? Json(nullptr)
                              : Json{{"count", hp.n_expert},
                                     {"used", hp.n_expert_used},
                                     {"feed_forward_length", hp.n_ff_exp},
                                     {"weights", expert_weights(*s.moe)},
                                     {"leading_dense_layers", hp.n_dense_lead},
                                     {"shared_feed_forward_length",
                                      hp.n_ff_shexp == 0 ? Json(nullptr) : Json(hp.n_ff_shexp)}}}};
}

template <class T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json shape_json(const gguf::TensorInfo& t) {
  Json shape = Json::array();
  for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.shape[d]);
  return shape;
}

void print_json(const GgufFile& f, const Summary& s, std::ostream& out) {
  Json j;
  j["file"] = f.name();
  j["version"] = f.version();
  j["file_size"] = f.file_size();
  j["alignment"] = f.alignment();
  j["data_offset"] = f.data_offset();
  j["architecture"] = s.architecture;
  j["n_tensors"] = f.tensors().size();
  j["n_kv"] = f.metadata().size();
  j["summary"] = Json{
      {"name", optional_json(s.name)},
      {"parameters", s.n_params},
      {"file_type", s.file_type ? Json(file_type_name(*s.file_type)) : Json(nullptr)},
      {"context_length", optional_json(s.context_length)},
      {"n_embd", optional_json(s.n_embd)},
      {"n_layer", optional_json(s.n_layer)},
      {"n_head", optional_json(s.n_head)},
      {"n_head_kv", optional_json(s.n_head_kv)},
      {"head_dim", optional_json(s.head_dim)},
      {"n_ff", optional_json(s.n_ff)},
      {"rope_freq_base", optional_json(s.rope_base)},
      {"n_vocab", optional_json(s.n_vocab)},
      {"tokenizer_model", optional_json(s.tokenizer_model)},
      {"tokenizer_pre", optional_json(s.tokenizer_pre)},
      {"bos_token_id", optional_json(s.bos)},
      {"eos_token_id", optional_json(s.eos)},
      {"has_chat_template", s.chat_template_bytes.has_value()},
      {"tensors_per_type", s.tensors_per_type},
      {"tensor_bytes", s.tensor_bytes},
      {"computed", computed_json(s)},
  };
  Json metadata = Json::object();
  for (const gguf::KeyValue& kv : f.metadata())
    // Keys keep their bytes; the dump's U+FFFD replacement could make two keys equal.
    metadata[escape_invalid_utf8(kv.key)] = value_json(kv.value);
  j["metadata"] = std::move(metadata);
  Json tensors = Json::array();
  for (const gguf::TensorInfo& t : f.tensors()) {
    tensors.push_back(Json{
        {"name", t.name}, {"type", t.type.name}, {"shape", shape_json(t)}, {"offset", t.offset}});
  }
  j["tensors"] = std::move(tensors);
  // Strings in a file need not be UTF-8; JSON output must be.
  // terminal_safe_json: C1 controls and DEL in metadata strings as \u escapes.
  out << terminal_safe_json(j.dump(2, ' ', false, Json::error_handler_t::replace)) << '\n';
}

void print_text(const GgufFile& f, const Summary& s, bool list_tensors, std::ostream& out) {
  const auto row = [&](const char* label, const std::string& value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%-16s", label);
    out << buf << value << '\n';
  };
  const auto num = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("-");
  };
  const auto str = [](const std::optional<std::string>& v) {
    return v ? printable(*v) : std::string("-");
  };

  row("file", printable(f.name(), 4096) + " (GGUF v" + std::to_string(f.version()) + ", " +
                  human_bytes(f.file_size()) + ")");
  row("architecture", s.architecture.empty() ? "-" : printable(s.architecture));
  row("name", str(s.name));
  row("parameters", human_count(s.n_params) + " (" + std::to_string(s.n_params) + ")");
  row("file type", s.file_type ? file_type_name(*s.file_type) : "-");
  row("context length", num(s.context_length));
  row("embedding size", num(s.n_embd));
  row("layers", num(s.n_layer));
  row("heads", num(s.n_head) + " (KV heads " + num(s.n_head_kv) + ")");
  row("head size", num(s.head_dim));
  row("feed-forward", num(s.n_ff));
  if (s.rope_base) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", *s.rope_base);
    row("rope base", buf);
  } else {
    row("rope base", "-");
  }
  row("vocabulary", num(s.n_vocab) + " tokens (" + str(s.tokenizer_model) + ", pre " +
                        str(s.tokenizer_pre) + ")");
  row("BOS / EOS", num(s.bos) + " / " + num(s.eos));
  row("chat template",
      s.chat_template_bytes ? "yes (" + std::to_string(*s.chat_template_bytes) + " bytes)" : "no");
  std::string per_type;
  for (const auto& [type, n] : s.tensors_per_type) {
    per_type += (per_type.empty() ? "" : ", ") + type + " " + std::to_string(n);
  }
  row("tensors", std::to_string(f.tensors().size()) + (per_type.empty() ? "" : ": " + per_type));
  row("tensor data", human_bytes(s.tensor_bytes));
  row("metadata keys", std::to_string(f.metadata().size()));
  if (!s.computed) {
    row("runs", "no: " + printable(s.not_runnable, 4096));
  } else {
    const engine::Hparams& hp = *s.computed;
    row("runs", "yes");
    if (const std::string_view kind = rope_scaling_kind(s); kind != "none") {
      row("rope scaling",
          std::string(kind) + ", angles x " + g(hp.rope.freq_scale) + ", cos and sin x " +
              g(hp.rope.mscale) +
              (s.long_rope ? "; short factors up to a context of " + std::to_string(hp.n_ctx_orig) +
                                 " tokens, long beyond"
                           : ""));
    }
    if (hp.window != 0) {
      row("sliding window",
          std::to_string(hp.window) + " positions on " + std::to_string(sliding_layers(hp)) +
              " of " + std::to_string(hp.n_layer) + " layers (pattern " +
              std::to_string(hp.window_pattern) + "; rope base " + g(hp.rope_sliding.base) +
              ", angles x " + g(hp.rope_sliding.freq_scale) + ")");
    }
    if (hp.attn_temp_scale != 0) {
      row("temperature", "queries x 1 + " + g(hp.attn_temp_scale) + " ln(floor(position / " +
                             std::to_string(hp.n_ctx_orig) + ") + 1)");
    }
    if (hp.n_expert != 0) {
      row("experts",
          std::to_string(hp.n_expert) + ", " + std::to_string(hp.n_expert_used) +
              " per token, FFN " + std::to_string(hp.n_ff_exp) +
              " wide (weights: " + expert_weights(*s.moe) + ")" +
              (hp.n_ff_shexp != 0
                   ? ", and a shared expert " + std::to_string(hp.n_ff_shexp) + " wide" +
                         (s.moe->shared_expert == engine::SharedExpert::Gated ? ", gated" : "")
                   : "") +
              (hp.n_dense_lead != 0
                   ? "; the first " + std::to_string(hp.n_dense_lead) + " layers dense"
                   : ""));
    }
    if (hp.latent) {
      const engine::Hparams::Latent& mla = *hp.latent;
      row("attention",
          "latent: rank " + std::to_string(mla.kv_lora_rank) + " plus " + std::to_string(hp.n_rot) +
              " rotated per position" +
              (mla.q_lora_rank != 0 ? "; queries through rank " + std::to_string(mla.q_lora_rank)
                                    : "") +
              "; heads " + std::to_string(mla.mla_key) + " wide for scores, " +
              std::to_string(mla.mla_value) + " for values");
    }
    if (s.spec->sinks) row("attention sinks", "a logit per head");
    if (hp.delta_net) {
      const engine::Hparams::DeltaNet& dn = *hp.delta_net;
      row("recurrent", "Gated DeltaNet in " + std::to_string(recurrent_layers(hp)) + " of " +
                           std::to_string(hp.n_layer) + " layers: " + std::to_string(dn.n_v_heads) +
                           " value heads over " + std::to_string(dn.n_k_heads) + " key heads of " +
                           std::to_string(dn.head_dim) + ", a convolution of " +
                           std::to_string(dn.conv_kernel) + " taps; state " +
                           std::to_string(recurrent_state_bytes(hp)) + " bytes per sequence");
    }
    if (!hp.layer_shapes.empty()) {
      // gemma4: the sliding layers' and the full ones' heads (from their
      // first layer), the layers that read another's cache, per-layer
      // embeddings.
      uint32_t first_full = 0, first_sliding = 0, sharing = 0;
      for (uint32_t il = hp.n_layer; il-- > 0;) {
        (hp.slides(il) ? first_sliding : first_full) = il;
        sharing += hp.kv_layer_of(il) != il ? 1 : 0;
      }
      const auto heads = [&](uint32_t il) {
        return std::to_string(hp.n_head_kv_of(il)) + " KV heads of " +
               std::to_string(hp.head_dim_of(il)) + ", " + std::to_string(hp.n_rot_of(il)) +
               " rotated";
      };
      row("layer shapes",
          "sliding: " + heads(first_sliding) + "; full: " + heads(first_full) + "; the last " +
              std::to_string(sharing) + " layers read earlier layers' keys and values" +
              (hp.n_embd_per_layer != 0
                   ? "; per-layer embeddings of " + std::to_string(hp.n_embd_per_layer)
                   : ""));
    }
    if (hp.n_block != hp.n_layer) {
      row("nextn blocks", std::to_string(hp.n_block - hp.n_layer) + " after the " +
                              std::to_string(hp.n_layer) +
                              " layers, not run (multi-token prediction)");
    }
    if (hp.attn_softcap != 0 || hp.final_softcap != 0) {
      row("soft caps", "attention " + (hp.attn_softcap != 0 ? g(hp.attn_softcap) : "-") +
                           ", final " + (hp.final_softcap != 0 ? g(hp.final_softcap) : "-"));
    }
  }

  if (!list_tensors) return;
  out << '\n';
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::string shape;
    for (uint32_t d = 0; d < t.n_dims; ++d) shape += (d ? " x " : "") + std::to_string(t.shape[d]);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-40s %-8s %-24s %12llu\n", printable(t.name).c_str(),
                  std::string(t.type.name).c_str(), shape.c_str(),
                  static_cast<unsigned long long>(t.offset));
    out << buf;
  }
}

}  // namespace

int inspect_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Print what a GGUF model file holds: architecture, sizes, tokenizer, tensors.",
               "quip inspect"};
  std::string path;
  bool json = false;
  bool tensors = false;
  app.add_option("FILE", path, "GGUF file, or a model name (quip models)")->required();
  app.add_flag("--json", json, "print one JSON object (every metadata key, every tensor)");
  app.add_flag("--tensors", tensors, "also list every tensor: name, type, shape, offset");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  auto resolved = resolve_model_name(path);
  if (auto* e = std::get_if<ModelNameError>(&resolved)) {
    print_error(err, "quip", e->message);
    return e->status;
  }
  auto file = GgufFile::open(std::get<ModelFile>(resolved).path.string());
  if (!file) {
    print_error(err, "quip", file.error().message);
    return kExitBadData;
  }
  const Summary s = summarize(*file);
  if (json) {
    print_json(*file, s, out);
  } else {
    print_text(*file, s, tensors, out);
  }
  return kExitOk;
}

}  // namespace quip::cli
