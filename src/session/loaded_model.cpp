#include "session/loaded_model.h"

#include <algorithm>

#include "base/paths.h"
#include "base/text.h"
#include "gguf/fingerprint.h"
#include "kernels/dot.h"

namespace quip::session {

namespace {

Result<void> check_weight_types(const gguf::GgufFile& file) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.n_dims >= 2 && !kernels::has_dot(t.type.type)) {
      return Error{printable(file.name()) + ": tensor '" + printable(t.name) + "' has type " +
                   std::string(t.type.name) + ", which quip cannot run"};
    }
  }
  return {};
}

}  // namespace

Result<void> check_runnable(const gguf::GgufFile& file) {
  auto model = engine::Model::bind(file);
  if (!model) return model.error();
  return check_weight_types(file);
}

Result<LoadedModel> load_model(const std::string& path) {
  auto opened = gguf::GgufFile::open(path);
  if (!opened) return opened.error();
  auto file = std::make_unique<gguf::GgufFile>(std::move(*opened));
  auto model = engine::Model::bind(*file);
  if (!model) return model.error();
  if (auto types = check_weight_types(*file); !types) return types.error();
  auto tok = tokenizer::Tokenizer::load(*file, {.cache_dir = cache_dir()});
  if (!tok) return tok.error();
  std::string fingerprint = gguf::fingerprint(*file);
  return LoadedModel{std::move(file), std::move(*model), std::move(*tok), std::move(fingerprint)};
}

std::shared_ptr<const grammar::TokenTrie> token_trie(const LoadedModel& model) {
  LoadedModel::TrieSlot& slot = *model.trie_slot;
  std::call_once(slot.once, [&] {
    const tokenizer::Vocab& vocab = model.tokenizer.vocab();
    // As many as the logits (the output may be padded past the vocabulary).
    std::vector<std::string> texts(model.model.hparams().n_vocab);
    for (size_t id = 0; id < std::min(texts.size(), vocab.size()); ++id) {
      const auto t = static_cast<tokenizer::TokenId>(id);
      if (!vocab.is_eog(t)) texts[id] = model.tokenizer.piece(t);
    }
    slot.trie = std::make_shared<const grammar::TokenTrie>(texts);
  });
  return slot.trie;
}

}  // namespace quip::session
