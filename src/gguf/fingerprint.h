// A model file's identity, for records and caches that must not be used with
// another model: 16 hex digits hashing the file's header, metadata and tensor
// table (everything before the tensor data), its size, and samples of the
// tensor data spread over the file (so a fine-tune with the same layout and
// metadata differs too), and the same of every other part of a split model.
// Cheap: it reads the header and a few pages.
#pragma once

#include <string>

#include "gguf/reader.h"

namespace quip::gguf {

std::string fingerprint(const GgufFile& file);

}  // namespace quip::gguf
