// --estimate: what a call would cost, printed instead of running it.
#pragma once

#include <ostream>

#include "session/estimate.h"

namespace quip::cli {

// Human form, one item per line ("prompt: 4096 tokens", ...), or with
// `json` one object. Warnings (a database that cannot be read) go to `err`.
// `n_predict`: the request's (-1: until the end of the turn).
void print_estimate(const session::Estimate& e, int64_t n_predict, bool json, std::ostream& out,
                    std::ostream& err);

}  // namespace quip::cli
