// `quip inspect FILE [--json] [--tensors]`: what a user wants to know about a
// GGUF file before running it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// Runs the subcommand on `args` (without "quip inspect"); returns the exit status.
int inspect_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// llama.cpp's name of a general.file_type ("Q4_K_M"), or "unknown (N)".
std::string file_type_name(uint64_t file_type);
// "379.38 MiB": bytes in binary units.
std::string human_bytes(uint64_t n);
// "494.03 M": a count in decimal units.
std::string human_count(uint64_t n);

}  // namespace quip::cli
