// `quip template`: the rendering of a list of messages by a chat template,
// for template authors and for seeing what a model is sent.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

int template_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
