#include "cli/progress.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace quip::cli {

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(std::ceil(std::max(seconds, 0.0)));
  if (s < 100) return std::to_string(s) + " s";
  const long long min = (s + 59) / 60;
  if (min < 100) return std::to_string(min) + " min";
  return std::to_string(min / 60) + " h " + std::to_string(min % 60) + " min";
}

void StatusLine::show(const std::string& line) {
  err_ << '\r';
  if (erase_sequence_) {
    err_ << "\033[K";
  } else if (shown_width_ > line.size()) {
    err_ << std::string(shown_width_, ' ') << '\r';
  }
  if (dim_) err_ << "\033[2m";
  err_ << line;
  if (dim_) err_ << "\033[0m";
  err_ << std::flush;
  shown_ = true;
  shown_width_ = line.size();
}

void StatusLine::clear() {
  if (!shown_) return;
  if (erase_sequence_) {
    err_ << "\r\033[K";
  } else {
    err_ << '\r' << std::string(shown_width_, ' ') << '\r';
  }
  err_ << std::flush;
  shown_ = false;
  shown_width_ = 0;
}

PromptProgress::Options PromptProgress::from_environment() {
  Options o;
  const char* term = std::getenv("TERM");
  const bool dumb = term != nullptr && std::string_view(term) == "dumb";
  // https://no-color.org: set and not empty.
  const char* no_color = std::getenv("NO_COLOR");
  o.dim = !dumb && !(no_color != nullptr && *no_color != '\0');
  o.erase_sequence = !dumb;
  // Test-only: tiny models evaluate a long prompt in well under the
  // half second a person would notice, so tests lower the threshold.
  if (const char* after = std::getenv("QUIP_PROGRESS_AFTER_MS")) {
    const std::string_view v = after;
    long long ms = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (ec == std::errc() && p == v.data() + v.size() && ms >= 0) {
      o.after = std::chrono::milliseconds(ms);
      o.every = std::min<Clock::duration>(o.every, o.after);
    }
  }
  return o;
}

std::string PromptProgress::text(size_t done, size_t total, size_t cached,
                                 std::optional<double> seconds_left) {
  std::string s = "quip: prompt " + std::to_string(done) + "/" + std::to_string(total) + " tokens";
  if (cached > 0) s += " (" + std::to_string(cached) + " cached)";
  if (seconds_left) s += ", " + duration_text(*seconds_left) + " left";
  return s;
}

void PromptProgress::update(size_t done, size_t total, size_t cached, Clock::time_point now) {
  if (!start_) {
    start_ = now;
    start_done_ = done;
    return;
  }
  if (now - *start_ < options_.after) return;
  if (shown_at_ && now - *shown_at_ < options_.every && done < total) return;
  if (done >= total) {
    clear();  // the answer comes next
    return;
  }
  // The rate so far; attention grows with the position, so this is a
  // little hopeful for the rest.
  std::optional<double> left;
  const double elapsed = std::chrono::duration<double>(now - *start_).count();
  if (done > start_done_ && elapsed > 0) {
    left = static_cast<double>(total - done) * elapsed / static_cast<double>(done - start_done_);
  }
  line_.show(text(done, total, cached, left));
  shown_at_ = now;
}

void PromptProgress::clear() {
  line_.clear();
  shown_at_.reset();
}

}  // namespace quip::cli
