#include "session/loaded_model.h"

#include "base/paths.h"
#include "base/text.h"
#include "gguf/fingerprint.h"
#include "kernels/dot.h"

namespace quip::session {

Result<LoadedModel> load_model(const std::string& path) {
  auto opened = gguf::GgufFile::open(path);
  if (!opened) return opened.error();
  auto file = std::make_unique<gguf::GgufFile>(std::move(*opened));
  auto model = engine::Model::bind(*file);
  if (!model) return model.error();
  for (const gguf::TensorInfo& t : file->tensors()) {
    if (t.n_dims >= 2 && !kernels::has_dot(t.type.type)) {
      return Error{printable(path) + ": tensor '" + printable(t.name) + "' has type " +
                   std::string(t.type.name) + ", which quip cannot run"};
    }
  }
  auto tok = tokenizer::Tokenizer::load(*file, {.cache_dir = cache_dir()});
  if (!tok) return tok.error();
  std::string fingerprint = gguf::fingerprint(*file);
  return LoadedModel{std::move(file), std::move(*model), std::move(*tok), std::move(fingerprint)};
}

}  // namespace quip::session
