// The progress line of a long prompt: while a prompt is evaluated for more
// than about half a second, one line on stderr (a terminal) says how far it
// is, updated in place a few times a second and erased before anything else
// is written there:
//
//   quip: prompt 1536/4096 tokens (512 cached), 12 s left
//
// The caller decides whether stderr is a terminal (and not --json); this
// class only writes to the stream it is given. Not thread safe: the
// generation thread alone calls it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

namespace quip::cli {

// "12 s", "3 min", "2 h 5 min": a duration for people, rounded up (a time
// left that reads too short is the one that annoys).
std::string duration_text(double seconds);

// One line of stderr rewritten in place, dim where the terminal allows,
// and erased before anything else is written there: what the progress
// lines below draw with.
class StatusLine {
 public:
  // `dim`: an SGR attribute around the text; `erase_sequence`: erase with
  // ESC [ K, else with spaces over the old line (TERM=dumb).
  StatusLine(std::ostream& err, bool dim, bool erase_sequence)
      : err_(err), dim_(dim), erase_sequence_(erase_sequence) {}

  void show(const std::string& line);
  // Erases the line if it is shown.
  void clear();

 private:
  std::ostream& err_;
  bool dim_, erase_sequence_;
  bool shown_ = false;
  size_t shown_width_ = 0;  // its characters (to erase without ESC [ K)
};

class PromptProgress {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    // Dim text (an SGR attribute); false under NO_COLOR or TERM=dumb.
    bool dim = true;
    // Erase with ESC [ K; false on a terminal without it (TERM=dumb),
    // which gets spaces over the old line instead.
    bool erase_sequence = true;
    // How long a prompt runs before the line first shows.
    Clock::duration after = std::chrono::milliseconds(500);
    // The least time between two updates.
    Clock::duration every = std::chrono::milliseconds(250);
  };

  // The options for this process's terminal: NO_COLOR and TERM as the
  // environment says, and QUIP_PROGRESS_AFTER_MS (test-only: lets tests on
  // a tiny, fast model see the line; not documented for users).
  static Options from_environment();

  PromptProgress(std::ostream& err, Options options)
      : options_(options), line_(err, options.dim, options.erase_sequence) {}
  ~PromptProgress() { clear(); }
  PromptProgress(const PromptProgress&) = delete;
  PromptProgress& operator=(const PromptProgress&) = delete;

  // Session::Callbacks::on_prompt_progress: `done` of `total` prompt
  // positions held, `cached` of them restored. The first call (before the
  // first batch) starts the clock; `now` is injected for tests.
  void update(size_t done, size_t total, size_t cached, Clock::time_point now = Clock::now());

  // Erases the line if it is shown (the answer starts, the call ends).
  void clear();

  // The line's text without attributes, e.g. "quip: prompt 1536/4096
  // tokens (512 cached), 12 s left"; no time left when `seconds_left` is
  // empty.
  static std::string text(size_t done, size_t total, size_t cached,
                          std::optional<double> seconds_left);

 private:
  Options options_;
  StatusLine line_;
  std::optional<Clock::time_point> start_;  // the first update: evaluation began
  size_t start_done_ = 0;
  std::optional<Clock::time_point> shown_at_;  // the last update written
};

}  // namespace quip::cli
