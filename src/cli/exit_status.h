// Exit statuses of every quip command (documented in README.md).
#pragma once

namespace quip::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // a runtime failure
inline constexpr int kExitUsage = 2;          // wrong arguments or options
inline constexpr int kExitBadData = 3;        // a model or data file that cannot be used
inline constexpr int kExitInterrupted = 130;  // SIGINT
// A call stopped by a signal exits with kExitSignal + the signal's number,
// as a shell reports it: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
inline constexpr int kExitSignal = 128;

}  // namespace quip::cli
