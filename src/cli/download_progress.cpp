#include "cli/download_progress.h"

#include <algorithm>
#include <cmath>

#include "base/file_io.h"
#include "base/text.h"

namespace quip::cli {

namespace {

// The speed is shown once it rests on this much time: earlier it swings.
constexpr double kSpeedAfterSeconds = 0.5;

}  // namespace

std::string DownloadProgress::text(const std::string& file, uint64_t done, uint64_t total,
                                   std::optional<double> speed, std::optional<double> seconds_left,
                                   size_t width) {
  const double fraction =
      total == 0 ? 1.0 : static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  const auto filled = static_cast<size_t>(fraction * static_cast<double>(width));
  std::string s = "quip: " + printable(file, 60) + " [";
  s += std::string(filled, '#');
  s += std::string(width - filled, '-');
  s += "] ";
  s += std::to_string(static_cast<int>(fraction * 100)) + "% ";
  s += human_size(done);
  s += '/';
  s += human_size(total);
  if (speed) {
    s += ", ";
    s += human_size(static_cast<uint64_t>(*speed));
    s += "/s";
  }
  if (seconds_left) {
    s += ", ";
    s += duration_text(*seconds_left);
    s += " left";
  }
  return s;
}

std::optional<double> DownloadProgress::speed(Clock::time_point now) const {
  const double elapsed = seconds(now);
  if (elapsed < kSpeedAfterSeconds) return std::nullopt;
  return static_cast<double>(last_done_ - start_done_) / elapsed;
}

double DownloadProgress::seconds(Clock::time_point now) const {
  return start_ ? std::chrono::duration<double>(now - *start_).count() : 0.0;
}

void DownloadProgress::update(const std::string& file, uint64_t done, uint64_t total,
                              uint64_t at_start, Clock::time_point now) {
  if (!start_) {
    start_ = now;
    start_done_ = at_start;
  }
  last_done_ = std::max(done, start_done_);
  if (!live_) return;
  if (shown_at_ && now - *shown_at_ < options_.every) return;
  const std::optional<double> rate = speed(now);
  std::optional<double> left;
  if (rate && *rate > 0 && total >= done) left = static_cast<double>(total - done) / *rate;
  line_.show(text(file, done, total, rate, left));
  shown_at_ = now;
}

void DownloadProgress::clear() {
  line_.clear();
  shown_at_.reset();
}

}  // namespace quip::cli
