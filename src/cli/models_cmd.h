// `quip models [--json]`: the GGUF models other tools already keep (Ollama,
// the Hugging Face cache, LM Studio, llama.cpp's cache: session/model_stores.h),
// each with the name `quip -m` takes, its file and what it is, and whether
// quip runs it (and if not, why). One file reached through several stores
// (the same size and fingerprint) is one entry with all its names.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// Runs the subcommand on `args` (without "quip models"); returns the exit status.
int models_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
