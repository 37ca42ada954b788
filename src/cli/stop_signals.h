// Ctrl-C, `timeout`/`kill` (SIGTERM) and a closed terminal (SIGHUP) ask a
// command to stop where it is, not kill it: the handler only notes the
// signal, and the command's loop looks at stop_signal() and ends cleanly
// (an answer printed and recorded as interrupted, a download's part kept).
#pragma once

#include <initializer_list>

namespace quip::cli {

// Catches SIGINT, SIGTERM and SIGHUP into stop_signal(), with SA_RESTART
// (a write that a signal interrupts goes on, so output reaches stdout
// whole), and ignores each of `ignored` (SIGPIPE: a closed pipe fails the
// write instead; SIGXFSZ: a write past ulimit -f fails with EFBIG).
void catch_stop_signals(std::initializer_list<int> ignored);

// The first of those signals that came, or 0.
int stop_signal();

}  // namespace quip::cli
