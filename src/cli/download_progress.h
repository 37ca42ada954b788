// The progress of `quip pull` on stderr. On a terminal, one line updated in
// place a few times a second and erased at the end:
//
//   quip: model-Q4_K_M.gguf [########------------] 41% 512 MiB/1.2 GiB, 34 MiB/s, 21 s left
//
// Elsewhere (a pipe, a file) nothing until the end, which gets one line
// (summary()). Not thread safe: the downloading thread alone calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cli/progress.h"

namespace quip::cli {

class DownloadProgress {
 public:
  using Clock = std::chrono::steady_clock;

  // `live`: stderr is a terminal, so the line is drawn; `options` as
  // PromptProgress's (dim text, ESC [ K, the least time between updates;
  // `after` is not used: the line shows from the first update).
  DownloadProgress(std::ostream& err, bool live, PromptProgress::Options options)
      : live_(live), options_(options), line_(err, options.dim, options.erase_sequence) {}
  ~DownloadProgress() { clear(); }
  DownloadProgress(const DownloadProgress&) = delete;
  DownloadProgress& operator=(const DownloadProgress&) = delete;

  // `done` of `total` bytes in place, `at_start` of them before this run
  // (they count for the percentage, not for the speed). `now` for tests.
  void update(const std::string& file, uint64_t done, uint64_t total, uint64_t at_start,
              Clock::time_point now = Clock::now());

  // Erases the line if it is shown.
  void clear();

  // Bytes per second since the first update, when enough time has passed
  // to say; and the seconds since the first update.
  std::optional<double> speed(Clock::time_point now = Clock::now()) const;
  double seconds(Clock::time_point now = Clock::now()) const;

  // The line's text, without attributes. `speed` and `seconds_left` are
  // left out when empty; the bar is `width` characters between brackets.
  static std::string text(const std::string& file, uint64_t done, uint64_t total,
                          std::optional<double> speed, std::optional<double> seconds_left,
                          size_t width = 20);

 private:
  bool live_;
  PromptProgress::Options options_;
  StatusLine line_;
  std::optional<Clock::time_point> start_;
  uint64_t start_done_ = 0;
  uint64_t last_done_ = 0;
  std::optional<Clock::time_point> shown_at_;
};

}  // namespace quip::cli
