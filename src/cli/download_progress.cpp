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

std::string DownloadProgress::duration_text(double seconds) {
  const auto s = static_cast<long long>(std::ceil(std::max(seconds, 0.0)));
  if (s < 100) return std::to_string(s) + " s";
  const long long min = (s + 59) / 60;
  if (min < 100) return std::to_string(min) + " min";
  return std::to_string(min / 60) + " h " + std::to_string(min % 60) + " min";
}

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
  const std::string line = text(file, done, total, rate, left);
  err_ << '\r';
  if (options_.erase_sequence) {
    err_ << "\033[K";
  } else if (shown_width_ > line.size()) {
    err_ << std::string(shown_width_, ' ') << '\r';
  }
  if (options_.dim) err_ << "\033[2m";
  err_ << line;
  if (options_.dim) err_ << "\033[0m";
  err_ << std::flush;
  shown_at_ = now;
  shown_width_ = line.size();
}

void DownloadProgress::clear() {
  if (!shown_at_) return;
  if (options_.erase_sequence) {
    err_ << "\r\033[K";
  } else {
    err_ << '\r' << std::string(shown_width_, ' ') << '\r';
  }
  err_ << std::flush;
  shown_at_.reset();
  shown_width_ = 0;
}

}  // namespace quip::cli
