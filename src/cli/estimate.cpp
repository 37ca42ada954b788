#include "cli/estimate.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/report.h"

namespace quip::cli {

namespace {

std::string bytes_text(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.0f ms", s * 1000);
  } else {
    std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  }
  return buf;
}

std::string rate_text(double per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", per_s);
  return buf;
}

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

std::string tokens_text(size_t n) {
  return std::to_string(n) + (n == 1 ? " token" : " tokens");
}

}  // namespace

void print_estimate(const session::Estimate& e, int64_t n_predict, bool json, std::ostream& out,
                    std::ostream& err) {
  for (const std::string& w : e.warnings) print_warning(err, "quip", w);
  const uint64_t call_bytes = e.kv_bytes + e.scratch_bytes;
  std::optional<double> total;
  if (e.prompt_seconds && e.generation_seconds) total = *e.prompt_seconds + *e.generation_seconds;
  if (json) {
    out << nlohmann::json{{"prompt_tokens", e.prompt_tokens},
                          {"cached_tokens", e.cached_tokens},
                          {"evaluated_tokens", e.evaluated_tokens},
                          {"ctx_size", e.n_ctx},
                          {"positions", e.positions},
                          {"memory",
                           {{"kv_bytes", e.kv_bytes},
                            {"scratch_bytes", e.scratch_bytes},
                            {"total_bytes", call_bytes},
                            {"weights_bytes", e.weights_bytes}}},
                          {"speed",
                           {{"prompt_tokens_per_s", optional_number(e.prompt_tokens_per_s)},
                            {"generation_tokens_per_s",
                             optional_number(e.generation_tokens_per_s)}}},
                          {"time",
                           {{"prompt_s", optional_number(e.prompt_seconds)},
                            {"generation_s", optional_number(e.generation_seconds)},
                            {"total_s", optional_number(total)}}}}
               .dump()
        << '\n';
    return;
  }
  out << "prompt: " << tokens_text(e.prompt_tokens) << '\n';
  out << "cached: " << tokens_text(e.cached_tokens) << " (restored from the prefix cache)\n";
  out << "evaluated: " << tokens_text(e.evaluated_tokens) << '\n';
  out << "memory: " << bytes_text(call_bytes) << " (KV cache " << bytes_text(e.kv_bytes) << " for "
      << e.positions << " positions of " << e.n_ctx << ", scratch " << bytes_text(e.scratch_bytes)
      << ")\n";
  out << "weights: " << bytes_text(e.weights_bytes) << " (mapped from the model file)\n";
  if (!e.prompt_tokens_per_s && !e.generation_tokens_per_s) {
    out << "speed: none measured yet with this model\n";
  } else {
    out << "speed: "
        << (e.prompt_tokens_per_s ? rate_text(*e.prompt_tokens_per_s) : std::string("?"))
        << " tokens/s prompt, "
        << (e.generation_tokens_per_s ? rate_text(*e.generation_tokens_per_s) : std::string("?"))
        << " tokens/s generation (measured earlier with this model)\n";
  }
  // The prompt's time, then the answer's: per token, or for -n tokens.
  std::string time;
  if (e.prompt_seconds) time = seconds_text(*e.prompt_seconds) + " for the prompt";
  if (e.generation_seconds) {
    time += (time.empty() ? "" : ", ") + seconds_text(*e.generation_seconds) + " for " +
            tokens_text(static_cast<size_t>(n_predict));
    if (total) time += " (" + seconds_text(*total) + " in all)";
  } else if (e.generation_tokens_per_s) {
    char per[48];
    std::snprintf(per, sizeof per, "%.1f ms per token generated",
                  1000.0 / *e.generation_tokens_per_s);
    time += (time.empty() ? "" : ", then ") + std::string(per);
  }
  out << "time: " << (time.empty() ? "no measured speed yet" : time) << '\n';
}

}  // namespace quip::cli
