#include "cli/stop_signals.h"

#include <csignal>

namespace quip::cli {

namespace {

// Written by the handler, read by the command's loop: a lock-free
// sig_atomic_t is all a handler may touch.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signo) {
  if (g_stop_signal == 0) g_stop_signal = signo;
}

}  // namespace

void catch_stop_signals(std::initializer_list<int> ignored) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int signo : ignored) sigaction(signo, &ignore, nullptr);
}

int stop_signal() {
  return g_stop_signal;
}

}  // namespace quip::cli
