// libFuzzer target: GgufFile::parse on arbitrary bytes must return a value or
// an Error, never crash or read outside the input; a file it accepts must be
// safe to walk completely, to bind as a model or be refused (Model::bind
// reads every family's keys and checks every tensor's shape), and its
// vocabulary (if any) safe to load and use.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace {

uint64_t walk(const quip::gguf::ArrayView& a) {
  uint64_t sum = a.length;
  for (std::string_view s : a.strings) sum += s.empty() ? 0 : static_cast<uint8_t>(s.back());
  for (const auto& inner : a.arrays) sum += walk(inner);
  if (a.raw != nullptr && a.length > 0) {
    const uint64_t bytes = a.length * quip::gguf::value_type_size(a.elem_type);
    sum += static_cast<uint8_t>(a.raw[bytes - 1]);
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = quip::gguf::GgufFile::parse("fuzz.gguf",
                                       std::span(reinterpret_cast<const std::byte*>(data), size));
  if (!f.ok()) return 0;
  volatile uint64_t sink = 0;
  for (const auto& kv : f->metadata()) {
    sink = sink + kv.key.size();
    if (const auto* a = std::get_if<quip::gguf::ArrayView>(&kv.value)) sink = sink + walk(*a);
    if (const auto* s = std::get_if<std::string_view>(&kv.value)) sink = sink + s->size();
  }
  for (const auto& t : f->tensors()) {
    // Touch the first and last byte of every tensor: the reader promised they are in the input.
    sink = sink + static_cast<uint8_t>(t.data.front()) + static_cast<uint8_t>(t.data.back());
  }
  (void)f->get_uint("general.alignment");
  if (auto m = quip::engine::Model::bind(*f)) {
    sink = sink + m->hparams().n_layer + m->layers().size() + m->weight_bytes_per_token();
  }

  // A file that holds a vocabulary must load as one or be refused, never
  // crash; one that loads must tokenize.
  if (auto t = quip::tokenizer::Tokenizer::load(*f)) {
    const auto ids = t->encode("Hello, world! <|im_start|> 123", {.parse_special = true});
    sink = sink + t->decode(ids).size();
  }
  return 0;
}
