// `quip [OPTIONS] PROMPT...`: the model's continuation of a prompt, streamed
// to stdout. Today only --raw prompts (fed to the model as they are, no chat
// template); chat prompts come with the chat templates.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int generate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
