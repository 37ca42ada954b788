// `quip pull hf:ORG/REPO[:QUANT]`: downloads a GGUF model from Hugging Face
// (or HF_ENDPOINT) into the Hugging Face cache (hub/hf_download.h), and
// prints the path of the model's file on stdout, so that
// `quip -m "$(quip pull hf:ORG/REPO)" ...` runs it.
//
// stderr: a progress bar on a terminal; one line at the end either way.
// Exit status: 0 pulled (or already there), 1 the hub, the network or the
// disk failed, 2 a malformed hf: reference, HF_ENDPOINT or HF_TOKEN, 128 + the
// signal's number when interrupted (130 for Ctrl-C): the partial download
// is kept for the next pull to resume.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int pull_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
