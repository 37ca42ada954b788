// GGUF metadata key names, in one place. Architecture-specific keys are
// "{arch}.suffix"; arch_key() builds them.
#pragma once

#include <string>
#include <string_view>

namespace quip::gguf::keys {

inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kFileType = "general.file_type";
inline constexpr std::string_view kAlignment = "general.alignment";

inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kKeyLength = "attention.key_length";
inline constexpr std::string_view kRopeFreqBase = "rope.freq_base";
inline constexpr std::string_view kVocabSize = "vocab_size";

inline constexpr std::string_view kTokenizerModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokenizerPre = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kBosTokenId = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view kEosTokenId = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

inline std::string arch_key(std::string_view arch, std::string_view suffix) {
  std::string k(arch);
  k += '.';
  k += suffix;
  return k;
}

}  // namespace quip::gguf::keys
