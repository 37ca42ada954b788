// Exit statuses of every quip command (README.md's table). One rule for all:
// - the reader of stdout going away (EPIPE) is not an error: the command
//   ends quietly with the status it had (main.cpp's finish(); SIGPIPE is
//   ignored, so no command dies with 141);
// - a chat template's raise_exception() refuses the messages: kExitUsage on
//   every path; any other template failure (syntax or render) is the
//   template's: kExitBadData for the model's own, kExitUsage for a
//   --template file (report.h's template_failure_status).
#pragma once

namespace quip::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // a runtime failure
inline constexpr int kExitUsage = 2;          // wrong arguments, options, config or input
inline constexpr int kExitBadData = 3;        // a model or data file that cannot be used
inline constexpr int kExitInterrupted = 130;  // SIGINT
// A call stopped by a signal exits with kExitSignal + the signal's number,
// as a shell reports it: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
inline constexpr int kExitSignal = 128;

}  // namespace quip::cli
